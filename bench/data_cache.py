"""Prints how long each benchmark takes to load: first from its sources (cold cache),
then again from the Parquet cache. Usage: python bench/data_cache.py [DATASET ...]"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from psedual.data.cache import load_dataset


def main(names: list[str]) -> None:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["PSEDUAL_CACHE"] = cache
        print(f"{'dataset':<14} {'problems':>9} {'cold s':>8} {'cached s':>9} {'speed-up':>9}")
        for name in names:
            start = time.perf_counter()
            dataset = load_dataset(name)
            cold = time.perf_counter() - start
            start = time.perf_counter()
            load_dataset(name)
            warm = time.perf_counter() - start
            print(f"{name:<14} {len(dataset.problems):>9,} {cold:>8.2f} {warm:>9.2f} {cold / warm:>8.1f}x")


if __name__ == "__main__":
    main(sys.argv[1:] or ["math23k", "mawps", "mawps-single", "svamp", "mathqa"])
