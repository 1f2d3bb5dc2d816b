"""Sweep PseDual's knobs with Ray Tune, then test each trial's chosen checkpoint once.

    python tune.py                                   # the default sweep, on a local Ray started here
    python tune.py --space search_spaces/table1_mawps.yaml
    python tune.py --resume default                  # continue a killed sweep
    ray submit clusters/gpu.yaml tune.py --space psedual/search_spaces/table1_mawps.yaml --address auto \\
        --storage s3://my-bucket/psedual

(`ray submit` runs ~/tune.py in the head's home, where gpu.yaml mounts the repo as ~/psedual.)

Results land in <storage>/{runs,epochs,predictions}/experiment=<name>/ as Parquet
(default storage: ./results); the runs table is printed at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import polars as pl

from psedual.results.collect import collect
from psedual.tune.space import load_spec
from psedual.tune.sweep import run_sweep

DEFAULT_SPACE = "search_spaces/default.yaml"
SHOWN = ["trial", "variant", "solver", "lr", "status", "epochs_done", "best_epoch", "valid_value_acc",
         "test_value_acc", "test_expr_acc", "test_infill_acc", "train_seconds"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--space", default=DEFAULT_SPACE, help=f"sweep YAML (default {DEFAULT_SPACE})")
    parser.add_argument("--resume", metavar="NAME", help="continue the killed sweep NAME (its YAML is --space)")
    parser.add_argument("--storage", default="results", help="local folder or pyarrow URI (default ./results)")
    parser.add_argument("--address", help="Ray cluster to attach to (`auto` on a cluster); default: a local Ray")
    args = parser.parse_args(argv)
    if args.address is None:  # a Ray started here, for this process only: no token to manage
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")

    spec = load_spec(args.space)
    if args.resume and args.resume != spec.name:
        parser.error(f"--resume {args.resume}: {args.space} defines sweep {spec.name!r}")
    began = time.perf_counter()
    outcomes = run_sweep(spec, args.storage, resume=bool(args.resume), address=args.address,
                         verbose=0 if os.environ.get("CI") else 1)
    runs = collect(outcomes, args.storage, spec.name, spec.resources)  # tests run as parallel Ray tasks
    with pl.Config(tbl_rows=50, tbl_cols=len(SHOWN), tbl_width_chars=200, float_precision=4):
        print(runs.select([c for c in SHOWN if c in runs.columns]))
    print(f"{len(runs)} trials in {time.perf_counter() - began:.0f} s; tables in "
          f"{args.storage}/{{runs,epochs,predictions}}/experiment={spec.name}/")
    return 1 if (runs["status"] == "error").any() else 0


if __name__ == "__main__":
    sys.exit(main())
