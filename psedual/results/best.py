"""Which epoch a run keeps: the first epoch with the highest validation value accuracy, or, for a
run configured with `selection: last` (the published GTS/Graph2Tree protocol), its last epoch.

The one rule of the package: training saves `best.pt` by it, testing reads the kept epoch's
row of `epochs.parquet` by it, so the result tables' `best_epoch` is it, and `analysis.claims`
checks each run's `best_epoch` against it. Plain Python over epoch rows, importing neither
torch nor Ray (analysis imports it where only the tables are).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

SELECT_BY = "valid_value_acc"
"""The epochs-table column an epoch is kept by (higher is better)."""


def best_epoch(rows: Iterable[Mapping]) -> Mapping:
    """The row of the first epoch (by its `epoch` number) with the highest `valid_value_acc`:
    a later epoch that only ties does not replace it."""
    ordered = sorted(rows, key=lambda row: row["epoch"])
    if not ordered:
        raise ValueError("no epochs: a run keeps an epoch only once one has been validated")
    # max returns the first of equal maxima, so ties go to the earliest epoch
    return max(ordered, key=lambda row: row[SELECT_BY])


def kept_epoch(rows: Iterable[Mapping], selection: str = "best") -> Mapping:
    """The row of the epoch a run with `selection` keeps: `best` (`best_epoch`) or `last` (the
    highest epoch number, whatever its validation says: the run may have none)."""
    if selection == "best":
        return best_epoch(rows)
    if selection != "last":
        raise ValueError(f"unknown selection {selection!r}; valid: best, last")
    ordered = sorted(rows, key=lambda row: row["epoch"])
    if not ordered:
        raise ValueError("no epochs: a run keeps an epoch only once one has been trained")
    return ordered[-1]
