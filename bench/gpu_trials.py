"""Trials sharing one GPU, through Ray Tune as a sweep runs them (bench/gpu_session.py).

`share`: the sweep search_spaces/gpu_session.yaml (GTS on MAWPS, one trial per seed) twice on a
local Ray: all trials at once, each holding 1/N of the GPU, then one at a time, each holding the
whole GPU. Prints each pass's wall time, its trials per minute, and the ratio (the goal: 8
trials at 0.125 GPU ≥ 4× the throughput of one at a time), after an untimed one-trial warm-up. On a CPU (`--device cpu`) the same,
with CPUs for GPUs: N trials at once on one CPU each, then one at a time.

`gloo`: one trial of two Ray Train workers (DDP) on one GPU, half of it each; ranks that share a
GPU talk over gloo (docs/gpu.md). On a CPU: two workers on the CPU.

Every trial must complete; a trial that ends in error is printed, and the script exits 1.

Usage: python bench/gpu_trials.py share|gloo [--device cuda|cpu] [--trials 8] [--epochs 2]
           [--train-size 512]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from psedual.train.resources import Resources
from psedual.tune.space import load_spec
from psedual.tune.sweep import run_sweep

SPACE = Path(__file__).resolve().parent.parent / "search_spaces" / "gpu_session.yaml"


def sweep(spec, resources: Resources, label: str) -> float:
    """Run `spec` with `resources` in a fresh folder; its wall seconds (every trial completed)."""
    with tempfile.TemporaryDirectory() as tmp:
        began = time.perf_counter()
        outcomes = run_sweep(replace(spec, name=label, resources=resources), tmp, verbose=False)
        wall = time.perf_counter() - began
    bad = [o for o in outcomes if o.status != "completed"]
    for o in bad:
        print(f"  trial {o.trial} {o.status}: {o.error}", flush=True)
    if bad or len(outcomes) != len(spec.trial_configs()):
        sys.exit(f"{label}: {len(bad)} of {len(outcomes)} trials did not complete")
    return wall


def parser() -> argparse.ArgumentParser:
    """The command line (bench/gpu_session.py's test checks its device calls against it)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("share", "gloo"))
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--trials", type=int, default=8, help="share: trials (seeds), all at once then one at a time")
    parser.add_argument("--epochs", type=int, default=None, help="default: the sweep file's")
    parser.add_argument("--train-size", type=int, default=None, help="default: the sweep file's")
    return parser


def resources(gpu: bool, trials: int) -> dict[str, Resources]:
    """Each pass's resources: `together` (all trials at once, 1/trials of the GPU each, or a CPU
    each), `alone` (one at a time, the whole GPU), `gloo` (two Train workers sharing one GPU)."""
    if gpu:
        return {"together": Resources(gpus_per_trial=1 / trials, cpus_per_worker=1, max_concurrent=trials),
                "alone": Resources(gpus_per_trial=1.0, cpus_per_worker=1, max_concurrent=1),
                "gloo": Resources(num_workers=2, in_process=False, gpus_per_trial=1.0)}
    return {"together": Resources(cpus_per_worker=1, max_concurrent=trials), "alone": Resources(max_concurrent=1),
            "gloo": Resources(num_workers=2, in_process=False)}


def main() -> None:
    args = parser().parse_args()
    spec = load_spec(SPACE)
    fixed = {**spec.fixed, "device": args.device}
    fixed |= {k: v for k, v in (("epochs", args.epochs), ("data.train_size", args.train_size)) if v is not None}
    gpu = args.device == "cuda"
    placed = resources(gpu, args.trials)
    if args.what == "gloo":
        spec = replace(spec, fixed=fixed, grid={"seed": [0]})
        wall = sweep(spec, placed["gloo"], "gloo")
        print(f"one trial of 2 Ray Train workers on one {'GPU' if gpu else 'CPU'} over gloo: completed in {wall:.1f} s")
        return
    spec = replace(spec, fixed=fixed, grid={"seed": list(range(args.trials))})
    n = args.trials
    together, alone = placed["together"], placed["alone"]
    share = f"{1 / n:g} GPU" if gpu else "1 CPU"
    # untimed: the first sweep of a process starts Ray's worker pool and reads the data cache
    sweep(replace(spec, grid={"seed": [0]}, fixed={**fixed, "epochs": 1}), alone, "warm-up")
    wall_together = sweep(spec, together, "together")
    print(f"{n} trials at once, {share} each: {wall_together:.1f} s, {60 * n / wall_together:.1f} trials/min", flush=True)
    wall_alone = sweep(spec, alone, "alone")
    print(f"{n} trials one at a time, {'1 GPU' if gpu else '1 CPU'} each: {wall_alone:.1f} s, "
          f"{60 * n / wall_alone:.1f} trials/min", flush=True)
    print(f"throughput at once / one at a time: {wall_alone / wall_together:.2f}x")


if __name__ == "__main__":
    main()
