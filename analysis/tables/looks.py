"""The `looks` table of a sweep in rounds (`<root>/looks/experiment=<name>/looks.parquet`, written by
the sweep's searcher at every look: `psedual/results/looks.py` holds its schema): read with its
experiment, and each claim's verdict (its last look)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

TABLE = "looks"
"""The table's folder under a root."""


def read_looks(root: str, experiments: list[str] | None = None) -> pl.DataFrame:
    """Every look of the named experiments (all under `root` without names), with an `experiment`
    column from the folder; a root without looks, or a named experiment without them, is a
    FileNotFoundError naming what was looked for."""
    if "://" in root and not root.startswith("file://"):
        names = experiments or ["*"]
        return pl.concat([pl.read_parquet(f"{root.rstrip('/')}/{TABLE}/experiment={e}/looks.parquet", hive_partitioning=True)
                          for e in names], how="diagonal_relaxed")
    folder = Path(root.removeprefix("file://")) / TABLE
    found = {p.parent.name.removeprefix("experiment="): p for p in sorted(folder.glob("experiment=*/looks.parquet"))}
    if not found:
        raise FileNotFoundError(f"{folder}: no looks table here (a sweep in rounds writes experiment=<name>/looks.parquet)")
    missing = sorted(set(experiments or []) - set(found))
    if missing:
        raise FileNotFoundError(f"{folder}: no looks of experiment {', '.join(missing)}; present: {', '.join(found)}")
    # the experiment from the folder's name, whatever it holds (Polars' hive parsing would split `a=b`)
    return pl.concat([pl.read_parquet(found[e]).with_columns(experiment=pl.lit(e)) for e in (experiments or found)],
                     how="diagonal_relaxed")


def verdicts(looks: pl.DataFrame) -> pl.DataFrame:
    """Each experiment's claims at their last look: the verdict, its seeds and Δ with the repeated interval."""
    return (looks.group_by("experiment", "claim", maintain_order=True).last()
            .select("experiment", "claim", "look", "of", "seeds", "delta", "ci_low", "ci_high", "verdict"))
