"""How much of a test score is memory? Accuracy on the test problems that repeat a training problem
(same normalised text and gold, another id) beside accuracy on the rest (issue 49).

    .venv/bin/python bench/leakage_accuracy.py --root RESULTS --experiment gts_5fold

MAWPS-single repeats problems across its folds: each fold's test split holds 50-67 problems a run
also trained on under other ids (the runs table's `data_test_leaked`, a claim's `leakage` flag). For
each run of the experiment this rebuilds its splits from its `data.*` settings (the run's own
count must come out the same, or it stops), splits its test predictions by repeated or not, and
prints per run, and pooled per arm (`variant`) and seed (its folds: out-of-fold predictions of
every problem once), the value accuracy of each part with Wilson 95% intervals.
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import fields

import polars as pl

from analysis.stats.stats import proportion_ci
from analysis.tables import read
from psedual.data.cache import load_dataset
from psedual.data.config import DataConfig
from psedual.data.splits import leaked_ids, split_dataset


def repeated(run: dict) -> frozenset[str]:
    """The test ids of `run` (a runs-table row) that repeat a problem of its training split."""
    data = DataConfig(**{f.name: run[f"data.{f.name}"] for f in fields(DataConfig) if f"data.{f.name}" in run})
    ids = leaked_ids(split_dataset(_dataset(data.dataset, data.data_root, data.user_path), data))["test"]
    if run.get("data_test_leaked") is not None and len(ids) != run["data_test_leaked"]:
        raise SystemExit(f"run {run['trial']}: {len(ids)} repeated test problems rebuilt, its table says "
                         f"{run['data_test_leaked']}: the data changed since it ran")
    return ids


@functools.cache
def _dataset(name: str, root: str | None, user_path: str | None):
    """Each dataset read once: every run of a 5-fold study reads the same one."""
    return load_dataset(name, root, user_path)


def _cells(rows: pl.DataFrame) -> str:
    """All, repeated and new problems' cells of a table row."""
    return " | ".join(_cell(rows.filter(keep)["value_correct"])
                      for keep in (pl.lit(True), pl.col("repeated"), ~pl.col("repeated")))


def _cell(right: pl.Series) -> str:
    k, n = int(right.sum()), right.len()
    if n == 0:
        return "– (0)"
    low, high = proportion_ci(k, n)
    return f"{100 * k / n:.2f} [{low:.2f}, {high:.2f}] ({n})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True, help="the sweep's storage (its runs and predictions tables)")
    parser.add_argument("--experiment", required=True)
    args = parser.parse_args()
    runs = read.scan(args.root, "runs", [args.experiment]).collect().sort("trial")
    predictions = read.scan(args.root, "predictions", [args.experiment]).select("trial", "id", "value_correct")
    parts = []
    for run in runs.iter_rows(named=True):
        ids = repeated(run)
        mine = predictions.filter(pl.col("trial") == run["trial"]).collect()
        parts.append(mine.with_columns(pl.col("id").is_in(list(ids)).alias("repeated"),
                                       pl.lit(run.get("data.fold")).alias("fold"),
                                       pl.lit(str(run.get("variant"))).alias("variant"),
                                       pl.lit(run.get("seed")).alias("seed")))
    table = pl.concat(parts)
    print(f"{args.experiment}: test value accuracy (%), by whether a test problem repeats a training problem "
          f"[Wilson 95% CI] (problems)\n")
    print("| run | fold | all | repeats a training problem | repeats none |\n|---|---|---|---|---|")
    for (trial, fold), rows in table.group_by("trial", "fold", maintain_order=True):
        print(f"| {trial} | {fold} | {_cells(rows)} |")
    # pooled per arm and seed: one seed's folds predict every problem once (out of fold)
    for (variant, seed), rows in table.group_by("variant", "seed", maintain_order=True):
        folds = ", ".join(str(f) for f in rows["fold"].unique(maintain_order=True))
        print(f"| pooled: {variant}, seed {seed} | {folds} | {_cells(rows)} |")


if __name__ == "__main__":
    main()
