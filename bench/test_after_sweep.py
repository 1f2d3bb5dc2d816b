"""Testing after a sweep: each trial's checkpoint one by one on the driver, against parallel Ray
tasks with the trial's resources, on the same finished sweep; checks the tables are the same.

Runs the sweep once (local Ray), then `collect` both ways into separate folders and prints
the two wall times, their ratio, and whether runs/epochs/predictions rows are equal.

Usage: RAY_AUTH_MODE=disabled python bench/test_after_sweep.py [--space search_spaces/default.yaml]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import polars as pl

from psedual.tune.evaluate import collect
from psedual.tune.space import load_spec
from psedual.tune.sweep import run_sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--space", default="search_spaces/default.yaml")
    args = parser.parse_args()
    spec = load_spec(args.space)
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        began = time.perf_counter()
        outcomes = run_sweep(spec, str(root / "sweep"), verbose=0)
        print(f"{spec.name}: {len(outcomes)} trials swept in {time.perf_counter() - began:.0f} s")
        seconds = {}
        for way, resources in (("one by one", None), ("parallel", spec.resources)):
            began = time.perf_counter()
            runs = collect(outcomes, str(root / way.replace(" ", "_")), spec.name, resources)
            seconds[way] = time.perf_counter() - began
            print(f"  test after the sweep, {way:<10}: {seconds[way]:6.1f} s for {runs.height} trials "
                  f"(sum of per-trial test times {runs['test_seconds'].sum():.1f} s)")
        same = all(
            pl.read_parquet(root / "one_by_one" / t / f"experiment={spec.name}" / "*.parquet").drop(drop).equals(
                pl.read_parquet(root / "parallel" / t / f"experiment={spec.name}" / "*.parquet").drop(drop))
            for t, drop in (("runs", ["test_seconds", "code_version"]), ("epochs", []), ("predictions", [])))
        print(f"  one by one ÷ parallel: {seconds['one by one'] / seconds['parallel']:.2f}×; "
              f"tables equal (test_seconds aside): {same}")


if __name__ == "__main__":
    main()
