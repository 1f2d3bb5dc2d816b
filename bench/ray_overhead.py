"""Ray's cost on one trial: the plain trainer vs the same trial through Tune (in-process)
and through Tune + TorchTrainer (1 worker), as ratios in one run.

The trial: GTS + PseDual(GCN), MAWPS fold 0 (1,409 training problems), embedding 64,
hidden 128, `--epochs` epochs, 1 thread; no test evaluation in any of the three. Ray is
started once before timing; each Tune run is timed around `run_sweep`, so it includes
trial start-up, checkpoint reporting and, for TorchTrainer, starting the Train worker.

Usage: python bench/ray_overhead.py [--epochs 3]
"""

from __future__ import annotations

import argparse
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
    args = parser.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    from psedual.train.trainer import train
    from psedual.tune.space import Resources, SweepSpec, make_config
    from psedual.tune.sweep import run_sweep

    fixed = {**FIXED, "epochs": args.epochs}
    work = Path(tempfile.mkdtemp(prefix="psedual-overhead-"))
    began = time.perf_counter()
    train(make_config(fixed), work / "plain", progress=False, test=False)
    plain = time.perf_counter() - began
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    times = {}
    try:
        for name, resources in (("tune in-process", Resources()), ("tune + TorchTrainer", Resources(in_process=False))):
            spec = replace(SweepSpec(name=name.replace(" ", "_").replace("+", "and"), mode="grid", fixed=fixed,
                                     grid={"seed": [0]}), resources=resources)
            began = time.perf_counter()
            outcome, = run_sweep(spec, str(work / "results"), verbose=0)
            times[name] = time.perf_counter() - began
            assert outcome.status == "completed", outcome
    finally:
        ray.shutdown()
    print(f"one trial, {args.epochs} epochs: plain trainer {plain:.1f} s")
    for name, t in times.items():
        print(f"  {name:<20} {t:6.1f} s  {t / plain:5.3f}x  (+{100 * (t / plain - 1):.1f}%)")


if __name__ == "__main__":
    main()
