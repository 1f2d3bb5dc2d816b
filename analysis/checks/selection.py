"""The one path from the runs table to checked runs (`select`), for every claim, table and figure.

Each (arm, seed, fold) slot keeps one run: failed runs are left out (an unknown status refused),
every run must have a seed, every candidate's validation score must be its epochs table's,
non-finite scores never win, replicates and slots of mixed data are refused, a sweep's several
trials are reduced to the best by a validation metric (picking by a test metric is flagged), every
kept run's predictions are checked against the test split it recorded and against its own scores,
and two seeds of one arm that are one run twice are refused (`guardrails`). `claims` builds its
comparisons on what this returns.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analysis.checks import guardrails, registry, validation
from analysis.checks.guardrails import FOLD, SEED, GuardrailError  # FOLD, SEED: the slot keys; callers read them here too
from analysis.tables import read
from psedual.results.best import kept_epoch
from psedual.results.row import before_column
from psedual.results.records import FAILED, STATUSES  # STATUSES: the tables' statuses (any other is refused)




def cell_label(row: dict, keys: list[str]) -> str:
    """`k=v, ...` over `keys`; a run from before a column existed shows the behaviour it had then."""
    return ", ".join(f"{k}={before_column(k, row[k])}" for k in keys)


FINISHED = (~pl.col("status").is_in(FAILED)) & pl.col("error").is_null() & pl.col("test_value_acc").is_not_null()
"""A run with a test result to compare (a stopped trial's chosen checkpoint was tested too) that
recorded no error: a filled `error` column is a run that failed, whatever its status says."""


def _why_left_out(r: dict) -> str:
    if r["status"] in FAILED or r["error"] is None:
        return f"status {r['status']}" + ("" if r["test_value_acc"] is not None else ", no test result")
    return f"error: {' '.join(str(r['error']).split())[:200]}"


def _usable(runs: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    """The runs that finished: a run whose status the tables never record is refused; one that
    failed (status `error`, or an `error` recorded) or has no test result is left out, named."""
    odd = runs.filter(~pl.col("status").is_in(STATUSES) | pl.col("status").is_null())
    if odd.height:
        names = ", ".join(f"{r['experiment']}/{r['trial']} (status {r['status']})" for r in odd.head(5).iter_rows(
            named=True))
        raise GuardrailError(f"{odd.height} run(s) with a status the result tables never record: {names}; valid: "
                             f"{', '.join(STATUSES)}; a failed run is no result: leave it out with --where+")
    bad = runs.filter(~FINISHED)
    if bad.height:
        names = ", ".join(f"{r['experiment']}/{r['trial']} ({_why_left_out(r)})" for r in bad.iter_rows(named=True))
        notes.append(f"skipped {bad.height} run(s) that failed or have no test result: {names}")
    return runs.join(bad.select(read.KEY), on=list(read.KEY), how="anti")


def _selection_flags(runs: pl.DataFrame, epochs: pl.DataFrame) -> dict[tuple[str, str], list[str]]:
    """Per run, the reasons to suspect its checkpoint was chosen on test rather than validation."""
    flags: dict[tuple[str, str], list[str]] = {}
    # the epoch training would have kept, by the package's one rule for the run's `selection` (a run
    # from before the setting kept its best validation epoch)
    tables = {key: rows.to_dicts() for key, rows in epochs.group_by(list(read.KEY))}
    for r in runs.iter_rows(named=True):
        rows = tables.get(tuple(r[k] for k in read.KEY))
        rule = r.get("selection") or "best"
        r["valid_best"] = kept_epoch(rows, rule)["epoch"] if rows else None
        if r.get("llm.model") is not None:  # a zero-shot LLM run: no checkpoint was chosen on any split
            continue
        name = f"{r['experiment']}/{r['trial']}"
        reasons = []
        if not r["n_valid"] and rule != "last":  # a last-epoch run (the published protocol) chose nothing
            reasons.append(f"test-selected? {name} has no validation split")
        if r["valid_best"] is None:
            reasons.append(f"test-selected? {name} has no epochs rows: its best_epoch cannot be checked against "
                           f"validation")
        elif r["best_epoch"] != r["valid_best"]:
            reasons.append(f"test-selected? {name}: best_epoch {r['best_epoch']} is not the "
                           + (f"last epoch {r['valid_best']} (selection last)" if rule == "last"
                              else f"validation argmax {r['valid_best']}"))
        on_test = validation.flag(r)
        if on_test:
            reasons.append(on_test)
        if reasons:
            flags[(r["experiment"], r["trial"])] = reasons
    return flags


def keep_one_per_slot(runs: pl.DataFrame, slot: list[str], select_by: str, notes: list[str],
            flags: dict[tuple[str, str], list[str]]) -> pl.DataFrame:
    """One run per slot: the best by `select_by`. A non-finite score (a diverged trial's NaN) ranks
    below every number and below a missing one, so it never wins; a slot left with only such
    scores is refused. A run that won its slot on a test metric is flagged as test-selected (in
    `flags`, by run)."""
    if select_by.startswith("valid") and "n_valid" in runs.columns and runs.schema[select_by].is_float():
        # a run without a validation set (`data.valid_fraction 0`, the published protocol) wrote NaN
        # for its validation scores: it has none, it did not diverge
        none = (pl.col("n_valid") == 0) & pl.col(select_by).is_nan()  # a score beside no validation set is kept
        runs = runs.with_columns(pl.when(none).then(None).otherwise(pl.col(select_by)).alias(select_by))
    score = pl.col(select_by)
    if runs.schema[select_by].is_float():  # Polars sorts NaN above every number
        score = pl.when(score.is_finite()).then(score)
    ranked = runs.with_columns(_score=score).sort(["_score", "trial"], descending=[True, False], nulls_last=True)
    diverged = ranked.filter(pl.col("_score").is_null() & pl.col(select_by).is_not_null())
    picked = ranked.group_by(slot, maintain_order=True).agg(pl.all().first(), pl.len().alias("_k"))
    lost = picked.filter(pl.col("_score").is_null() & pl.col(select_by).is_not_null())
    if lost.height:
        r = lost.row(0, named=True)
        raise GuardrailError(f"slot {cell_label(r, slot)}: {r['experiment']}/{r['trial']} has {select_by} "
                             f"{r[select_by]}, and no run of its slot a finite one: nothing to keep honestly; leave "
                             f"the slot out with --where+")
    if diverged.height:
        names = ", ".join(f"{e}/{t} ({v})" for e, t, v in diverged.select("experiment", "trial", select_by).rows())
        notes.append(f"{diverged.height} run(s) with a non-finite {select_by} cannot win their slot: {names}")
    several = picked.filter(pl.col("_k") > 1)
    if several.height:
        notes.append(f"{several.height} slot(s) held several trials; kept the best by {select_by}")
        if select_by.startswith("test"):
            for r in several.iter_rows(named=True):
                flags.setdefault((r["experiment"], r["trial"]), []).append(
                    f"test-selected: {r['experiment']}/{r['trial']} is the best of {r['_k']} trials by {select_by}")
    return picked.drop("_k", "_score")


@dataclass
class Selected:
    """The runs a command reads, one per slot, with every per-run check passed."""

    runs: pl.DataFrame
    preds: dict[tuple[str, str], pl.DataFrame]
    """each kept run's prediction rows, by (experiment, trial)"""
    flags: dict[tuple[str, str], list[str]]
    """per kept run, why its checkpoint may have been chosen on test"""
    tuned: dict[tuple, tuple[int, set[str]]]
    """per slot, its trials and the config columns they searched (`guardrails.tuning`)"""
    compared: list[str]
    """the config columns the arms must share"""


def select(runs: pl.DataFrame, epochs: pl.LazyFrame, predictions: pl.LazyFrame, slot: list[str], select_by: str,
           columns: list[str], notes: list[str], extra: tuple[str, ...] = ()) -> Selected:
    """The one path from the runs table to checked runs, used by every table and figure: usable
    runs, slots of one data version and no replicates, one run per slot (by `select_by`, never a
    non-finite score), selection flags, and complete predictions (`columns` must be non-null;
    `extra` columns are read too)."""
    runs = guardrails.blank_strings(runs)
    if "error" not in runs.columns:  # tables written before the column
        runs = runs.with_columns(error=pl.lit(None, pl.String))
    runs = _usable(runs, notes)
    if runs.is_empty():
        raise GuardrailError(f"no finished runs among those selected: {'; '.join(notes) or 'none'}")
    compared = guardrails.config_columns(runs.columns, slot)
    # every candidate's validation score is its epochs table's before one is picked by it
    epoch_rows = read.for_trials(epochs, runs).collect()
    several = runs.filter(pl.len().over(slot) > 1).select(read.KEY).rows()
    notes += registry.run(registry.Slots(runs, slot, compared, epoch_rows, frozenset(several)), registry.SELECTION)
    tuned = guardrails.tuning(runs, slot, compared)
    selected: dict[tuple[str, str], list[str]] = {}
    runs = keep_one_per_slot(runs, slot, select_by, notes, selected)
    epoch_rows = epoch_rows.join(runs.select(read.KEY), on=list(read.KEY), how="semi")
    run_flags = _selection_flags(runs, epoch_rows)
    for key, reasons in selected.items():
        run_flags.setdefault(key, []).extend(reasons)
    present = predictions.collect_schema().names()
    wanted = list(dict.fromkeys([*columns, *(c for c in (*CHECKED, *extra) if c in present)]))
    preds = read.for_trials(predictions, runs).select(*read.KEY, "id", *wanted).collect().partition_by(
        list(read.KEY), as_dict=True)
    notes += registry.run(registry.Kept(runs, slot, preds, columns, epoch_rows), registry.KEPT)
    return Selected(runs, preds, run_flags, tuned, compared)


CHECKED = ("gold", "predicted", "expression_correct", "expression_correct_values")
"""The prediction columns every selected run's rows are read with, where the table has them: its
test split's golds and its expressions are checked against what it says (`guardrails`)."""
