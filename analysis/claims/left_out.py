"""What `--where` left out of the arms a claim compares (issue 52, item 7).

`--where seed=0|1|2|3|4|5` over eight seeds compares six, and before said nothing of the other two:
a filter that keeps the seeds that agree is a cherry-pick the claim cannot show. A run left out of
the selection is one of a claim's arms where it lies in the claim's cell, holds the arm's value, and
shares every config column the arm's compared runs hold one value of (its status, code version and
other records aside: a `--where status=completed` leaves out runs of the arm too). Each such claim is
flagged, naming the runs and their seeds. A `--where` that keeps one configuration of an arm
(`fusion=null|scheduled`, leaving out teacher forcing) leaves out runs of another config: none is
named.
"""

from __future__ import annotations

import polars as pl

from analysis.checks import guardrails
from analysis.checks.selection import FOLD, SEED, cell_label
from analysis.claims.claims import Comparison, cell_columns
from analysis.tables import read

SHOWN = 5
"""Runs named per arm before `...`."""


def _config(runs: pl.DataFrame, columns: list[str]) -> dict[str, object]:
    """The columns the arm's compared runs hold one value of, and that value."""
    return {c: runs[c][0] for c in columns if runs[c].n_unique() == 1}


def _of_arm(left: pl.DataFrame, cell: str, by: list[str], arm: str, value: str, config: dict) -> list[dict]:
    return [r for r in left.iter_rows(named=True)
            if cell_label(r, by) == cell and str(r[arm]) == value and all(r[c] == v for c, v in config.items())]


def _named(runs: list[dict]) -> str:
    names = [guardrails.run_name((r["experiment"], r["trial"])) for r in runs]
    return ", ".join(names[:SHOWN]) + (", ..." if len(names) > SHOWN else "")


def flag(rows: pl.DataFrame, kept: pl.DataFrame, everything: pl.DataFrame, cmp: Comparison) -> pl.DataFrame:
    """The claim rows, each flagged with the runs of its arms in `everything` (the experiments' runs)
    that the selection (`kept`) left out."""
    left = everything.join(kept.select(read.KEY), on=list(read.KEY), how="anti").sort("experiment", "trial")
    if left.is_empty() or rows.is_empty():
        return rows
    arm = read.column(cmp.arm, everything.columns)
    by = cell_columns(cmp, everything.columns)
    columns = [c for c in guardrails.config_columns(everything.columns, [*by, arm, SEED, FOLD])
               if c not in guardrails.RECORD_COLUMNS and c != "experiment"]
    key = pl.col("experiment") + "/" + pl.col("trial")
    flags = []
    for r in rows.iter_rows(named=True):
        out = {}
        for value, trials in ((r["base_arm"], r["base_trials"]), (r["treatment_arm"], r["treatment_trials"])):
            compared = kept.filter(key.is_in(trials))
            out[value] = _of_arm(left, r["cell"], by, arm, value, _config(compared, columns))
        runs = [x for found in out.values() for x in found]
        if not runs:
            flags.append(r["flags"])
            continue
        seeds = sorted({x[SEED] for x in runs}, key=str)
        arms = "; ".join(f"{value} {_named(found)}" for value, found in out.items() if found)
        flags.append([*r["flags"], f"--where left out {len(runs)} run(s) of the arms this claim compares: {arms} "
                                   f"(seeds {seeds}): the claim is over the runs kept only"])
    return rows.with_columns(pl.Series("flags", flags, dtype=rows.schema["flags"]))
