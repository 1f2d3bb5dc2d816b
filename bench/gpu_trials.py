"""Trials sharing one GPU, through Ray Tune as a sweep runs them (bench/gpu_session.py).

`share`: the sweep search_spaces/gpu_session.yaml (GTS on MAWPS, one trial per seed) on a local
Ray, once per count in `--trials` (default 1 2 4 8): that many trials at once, each holding 1/N of
the GPU (on a CPU, `--device cpu`: one CPU each where the machine has a CPU for each, else an equal
share of its CPUs: 8 trials on 2 cores hold 0.25 each, which proves the code path, not a figure). Each trial's reports (Tune's result.json: one per
epoch) split its time into start-up and steady state:
- steady: an epoch after the first, timed from report to report (training, validation and the
  epoch's checkpoint); a trial's steady rate is its training problems ÷ its median steady epoch;
- start-up: the rest of the trial (from the pass's start to its last report, less its epochs at
  the steady pace), in three parts: `ray` (placement and the trial's process, to the trainable's
  start), `setup` (data, model and optimiser in the trainable, to its first epoch) and `warm-up`
  (the first epoch's time beyond a steady one's).
A pass's steady throughput is its trials' steady rates summed (they run at once); the table gives
each pass's against one trial alone (the goal on a GPU: 8 trials at 0.125 GPU ≥ 5×), and each
pass's start-up share of its trials' time (a figure that is steady only if it is under 10%).
An untimed one-trial warm-up comes first (Ray's worker pool, the data cache).

`gloo`: one trial of two Ray Train workers (DDP) on one GPU, half of it each; ranks that share a
GPU talk over gloo (docs/gpu.md). On a CPU: two workers on the CPU.

Every trial must complete; a trial that ends in error is printed, and the script exits 1.

Usage: python bench/gpu_trials.py share|gloo [--device cuda|cpu] [--trials 1 2 4 8] [--epochs 8]
           [--train-size 512]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from psedual.train.resources import Resources
from psedual.tune.space import load_spec
from psedual.tune.sweep import run_sweep

SPACE = Path(__file__).resolve().parent.parent / "search_spaces" / "gpu_session.yaml"


@dataclass(frozen=True)
class TrialTime:
    """One trial's time, from its reports (see the module's doc)."""

    total: float
    """Seconds from the pass's start to the trial's last report."""
    steady_epoch: float
    """The median epoch after the first, report to report (the first epoch's, with one epoch)."""
    epochs: int
    ray: float
    """Placement and the trial's process, to the trainable's start."""
    setup: float
    """Data, model and optimiser, to the first epoch's start."""
    warmup: float
    """The first epoch beyond a steady one."""

    @property
    def startup(self) -> float:
        return self.total - self.epochs * self.steady_epoch


def trial_time(reports: list[dict], began: float) -> TrialTime:
    """A trial's `TrialTime` from its reports (Tune's result.json lines, in order), the pass
    having started at `began` (time.time())."""
    first = reports[0]
    iters = [r["time_this_iter_s"] for r in reports]
    steady = statistics.median(iters[1:]) if len(iters) > 1 else iters[0]
    start = first["timestamp"] - first["time_total_s"]  # the trainable's start (Tune's clock: whole seconds)
    return TrialTime(total=reports[-1]["timestamp"] - began, steady_epoch=steady, epochs=len(reports),
                     ray=max(0.0, start - began), setup=max(0.0, iters[0] - first["seconds"]),
                     warmup=max(0.0, first["seconds"] - steady))


def sweep(spec, resources: Resources, label: str) -> tuple[float, list[TrialTime]]:
    """Run `spec` with `resources` in a fresh folder: its wall seconds and each trial's time
    (every trial completed)."""
    with tempfile.TemporaryDirectory() as tmp:
        began, wall_began = time.time(), time.perf_counter()
        outcomes = run_sweep(replace(spec, name=label, resources=resources), tmp, verbose=False)
        wall = time.perf_counter() - wall_began
        times = [trial_time([json.loads(line) for line in path.read_text().splitlines() if line.strip()], began)
                 for path in sorted(Path(tmp).glob("**/result.json"))]
    bad = [o for o in outcomes if o.status != "completed"]
    for o in bad:
        print(f"  trial {o.trial} {o.status}: {o.error}", flush=True)
    if bad or len(outcomes) != len(spec.trial_configs()):
        sys.exit(f"{label}: {len(bad)} of {len(outcomes)} trials did not complete")
    return wall, times


def parser() -> argparse.ArgumentParser:
    """The command line (bench/gpu_session.py's test checks its device calls against it)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("share", "gloo"))
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--trials", type=int, nargs="+", default=[1, 2, 4, 8],
                        help="share: a pass of this many trials (seeds) at once, for each count")
    parser.add_argument("--epochs", type=int, default=None, help="default: the sweep file's")
    parser.add_argument("--train-size", type=int, default=None, help="default: the sweep file's")
    return parser


def cpu_share(trials: int, cpus: int | None = None) -> float:
    """CPUs a trial holds on a CPU pass of `trials` at once: one each where `cpus` (default: this
    machine's) has one for each, else an equal share of them (all trials still run at once)."""
    return min(1.0, (cpus or os.cpu_count() or 1) / trials)


def resources(gpu: bool, trials: int, cpus: int | None = None) -> dict[str, Resources]:
    """Each pass's resources: `together` (all trials at once, 1/trials of the GPU each, or on a CPU
    `cpu_share` each), `alone` (one at a time, the whole GPU), `gloo` (two Train workers sharing one GPU)."""
    if gpu:
        return {"together": Resources(gpus_per_trial=1 / trials, cpus_per_worker=1, max_concurrent=trials),
                "alone": Resources(gpus_per_trial=1.0, cpus_per_worker=1, max_concurrent=1),
                "gloo": Resources(num_workers=2, in_process=False, gpus_per_trial=1.0)}
    return {"together": Resources(cpus_per_worker=cpu_share(trials, cpus), max_concurrent=trials),
            "alone": Resources(max_concurrent=1), "gloo": Resources(num_workers=2, in_process=False)}


def share_row(n: int, wall: float, times: list[TrialTime], problems: int, alone: float | None) -> str:
    """One pass's line of the table (`alone`: one trial's steady throughput, once measured)."""
    rate = sum(problems / t.steady_epoch for t in times)
    startup = sum(t.startup for t in times) / sum(t.total for t in times)
    mean = {k: statistics.mean(getattr(t, k) for t in times) for k in ("startup", "ray", "setup", "warmup")}
    ratio = f"{rate / alone:6.2f}x" if alone else "     —"
    return (f"{n:>6} {wall:8.1f} {statistics.mean(t.epochs for t in times):6.0f} "
            f"{statistics.mean(t.steady_epoch for t in times):8.2f} {rate:12.1f} {ratio} "
            f"{mean['startup']:9.1f} {100 * startup:8.1f}%{'' if startup < 0.1 else ' (not steady: >= 10%)'}"
            f"   ray {mean['ray']:.1f} + setup {mean['setup']:.1f} + warm-up {mean['warmup']:.1f}")


def main() -> None:
    args = parser().parse_args()
    spec = load_spec(SPACE)
    fixed = {**spec.fixed, "device": args.device}
    fixed |= {k: v for k, v in (("epochs", args.epochs), ("data.train_size", args.train_size)) if v is not None}
    gpu = args.device == "cuda"
    placed = resources(gpu, 1)
    if args.what == "gloo":
        spec = replace(spec, fixed=fixed, grid={"seed": [0]})
        wall, _ = sweep(spec, placed["gloo"], "gloo")
        print(f"one trial of 2 Ray Train workers on one {'GPU' if gpu else 'CPU'} over gloo: completed in {wall:.1f} s")
        return
    counts = sorted(set(args.trials))
    share = "one GPU" if gpu else (f"{os.cpu_count()} CPUs ("
                                   + ", ".join(f"{n} at {cpu_share(n):g}" for n in counts) + " CPU each)")
    # untimed: the first sweep of a process starts Ray's worker pool and reads the data cache
    sweep(replace(spec, fixed={**fixed, "epochs": 1}, grid={"seed": [0]}), placed["alone"], "warm-up")
    problems = int(fixed["data.train_size"])
    print(f"trials sharing {share}: steady throughput (training problems/s, summed over a pass's trials; "
          f"{problems} problems an epoch) and start-up (seconds a trial, mean)")
    header = (f"{'trials':>6} {'wall s':>8} {'epochs':>6} {'epoch s':>8} {'problems/s':>12} {'vs 1':>7} "
              f"{'start-up':>9} {'share':>9}   of which")
    print(header)
    alone = rate = None
    rows = []
    for n in counts:
        together = resources(gpu, n)["together"]
        wall, times = sweep(replace(spec, fixed=fixed, grid={"seed": list(range(n))}), together, f"share{n}")
        rows.append(share_row(n, wall, times, problems, alone))
        print(rows[-1], flush=True)
        rate = sum(problems / t.steady_epoch for t in times)
        alone = rate if n == 1 else alone
    # again, whole: the trials' progress lines between the rows push the first rows out of the tail a
    # report keeps (the H200 session's report lost those of 1, 2 and 4 trials)
    print("the table, whole:", header, *rows, sep="\n")
    most = max(args.trials)
    if alone and most > 1:
        each = f"{1 / most:g} GPU" if gpu else f"{cpu_share(most):g} CPU"
        print(f"steady throughput, {most} trials at {each} each / 1 trial alone: {rate / alone:.2f}x")


if __name__ == "__main__":
    main()
