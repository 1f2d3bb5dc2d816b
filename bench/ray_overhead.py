"""Ray's cost on one trial: the plain trainer vs the same trial through Tune (in-process)
and through Tune + TorchTrainer (1 worker), as ratios in one run.

The trial: GTS + PseDual(GCN) (or `--variant`), MAWPS fold 0 (1,409 training problems), embedding 64,
hidden 128, `--epochs` epochs, 1 thread; no test evaluation in any of the three. Ray is
started once before timing; each Tune run is timed around `run_sweep`, so it includes
trial start-up, checkpoint reporting and, for TorchTrainer, starting the Train worker.
The plain trainer runs once before the Tune runs and once after (an untimed 1-epoch run
warms the process first); the ratios are over the mean of the two. Each Tune line also splits its
time into the trials' own (Tune's `time_total_s`) and the rest (starting trials, handing over).

`--anatomy` instead times where a trial's fixed cost goes, with an empty Tune trial that only
imports the trainer: from `Tuner.fit` to the trial's first line (Tune starts a new Python process
for the trial's actor and imports Ray Tune there), the trainer's import in that process (torch), and
the same with a `worker_process_setup_hook` that imports the trainer when the process starts.

Usage: python bench/ray_overhead.py [--epochs 3] [--variant gcn] [--trials 1] [--in-process-only]
       python bench/ray_overhead.py --anatomy
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

FIXED = {"solver": "gts", "variant": "gcn", "data.dataset": "mawps", "data.fold": 0, "model.embedding_size": 64,
         "model.hidden_size": 128, "model.layers": 1, "threads": 1, "lr": 0.003}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--trials", type=int, default=1,
                        help="seeds 0..N-1 as one grid, one trial at a time, against N plain runs")
    parser.add_argument("--in-process-only", action="store_true", help="skip the TorchTrainer run")
    parser.add_argument("--variant", default="gcn", choices=("base", "gru", "gcn"),
                        help="the default sweep's arms: a base trial does not import torch-geometric")
    parser.add_argument("--anatomy", action="store_true", help="time an empty trial's start-up, and stop")
    args = parser.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    if args.anatomy:
        anatomy()
        return

    from psedual.train.trainer import train
    from psedual.train.resources import Resources
    from psedual.tune.space import SweepSpec, make_config
    from psedual.tune.sweep import run_sweep

    fixed = {**FIXED, "epochs": args.epochs, "variant": args.variant}
    work = Path(tempfile.mkdtemp(prefix="psedual-overhead-"))

    def plain_run(folder: str, epochs: int) -> float:
        began = time.perf_counter()
        train(make_config({**fixed, "epochs": epochs}), work / folder, progress=False, test=False)
        return time.perf_counter() - began

    # a 1-epoch run first, untimed: the first run in a process pays for the data cache and the
    # allocator warming up, which made the plain figure the slowest of the three when it went first
    plain_run("warm", 1)
    plain = plain_run("plain", args.epochs)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    times, inside = {}, {}
    try:
        runs = (("tune in-process", Resources()), ("tune + TorchTrainer", Resources(in_process=False)))
        for name, resources in runs[:1] if args.in_process_only else runs:
            spec = replace(SweepSpec(name=name.replace(" ", "_").replace("+", "and"), mode="grid", fixed=fixed,
                                     grid={"seed": list(range(args.trials))}), resources=resources)
            began = time.perf_counter()
            outcomes = run_sweep(spec, str(work / "results"), verbose=0)
            times[name] = time.perf_counter() - began
            inside[name] = _trials_own_time(work / "results" / spec.name)
            assert [o.status for o in outcomes] == ["completed"] * args.trials, outcomes
    finally:
        ray.shutdown()
    again = plain_run("plain-again", args.epochs)  # after the Tune runs, so drift shows in the spread
    print(f"{args.trials} {args.variant} trial(s) one at a time, {args.epochs} epochs each: one plain trainer run {plain:.1f} s before the Tune runs, {again:.1f} s after")
    plain = args.trials * (plain + again) / 2
    for name, t in times.items():
        print(f"  {name:<20} {t:6.1f} s  {t / plain:5.3f}x {args.trials} times the plain runs' mean ({100 * (t / plain - 1):+.1f}%):"
              f" {inside[name]:.1f} s inside the trials, {t - inside[name]:.1f} s outside them")


def _trials_own_time(experiment: Path) -> float:
    """The sum of the trials' own run times (Tune's `time_total_s`, from each trial's `result.json`):
    what is left of the sweep's time is Tune starting trials and handing over between them."""
    return sum(json.loads(path.read_text().splitlines()[-1])["time_total_s"]
               for path in experiment.glob("*/result.json"))


def _import_trainer() -> None:
    import psedual.train.trainer  # noqa: F401


def _empty_trial(config: dict) -> None:
    import ray.tune

    entered = time.time()
    _import_trainer()
    ray.tune.report({"entered": entered, "imported": time.time(), "pid": os.getpid()})


def anatomy() -> None:
    import ray
    import ray.tune

    import torch  # noqa: F401  (the driver of a real sweep has imported it: keep it out of the timing)

    for hook in (None, _import_trainer):
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"worker_process_setup_hook": hook} if hook else None)
        time.sleep(5)  # let Ray's own start-up (its daemons, prestarted workers) finish: only the trial's counts
        try:
            for n in range(2):
                began = time.time()
                result = ray.tune.Tuner(ray.tune.with_resources(_empty_trial, {"cpu": 1}), run_config=ray.tune.RunConfig(
                    storage_path=tempfile.mkdtemp(prefix="psedual-anatomy-"), verbose=0)).fit()[0].metrics
                ended = time.time()
                print(f"empty trial {n + 1}{' (setup hook imports the trainer)' if hook else ''}: Tuner.fit to "
                      f"the trial's first line {result['entered'] - began:.2f} s, the trainer's import "
                      f"{result['imported'] - result['entered']:.2f} s, report to fit's return "
                      f"{ended - result['imported']:.2f} s, in all {ended - began:.2f} s (pid {result['pid']})")
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
