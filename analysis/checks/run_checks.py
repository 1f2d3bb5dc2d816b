"""A run checked against its own tables, before it enters a claim (issue 39).

- Predictions: every run's per-example rows are complete (no nulls), unique by id, as many as
  it says it tested (`n_test`), give back its test accuracies and its recorded test split
  (`data_test_hash`), and mark an expression correct only where it is; its infilling rows are
  as many as it says it infilled.
- Validation: a runs row's validation score is its epochs table's at its best_epoch.
- Replicates: two seeds of one arm with identical predictions or loss curves are one seed.
A failure is a `GuardrailError` naming the run (`guardrails` holds the checks between runs).
"""

from __future__ import annotations

import polars as pl

from analysis.checks.guardrails import SHOWN_IDS, GuardrailError, non_finite, run_name
from psedual.data.expr import SLOT
from psedual.data.identity import split_hash


def check_predictions(runs: pl.DataFrame, preds: dict[tuple[str, str], pl.DataFrame], columns: list[str]) -> None:
    """Refuse a run whose test accuracy is not a number, or whose predictions are missing,
    duplicated, null, truncated, not its recorded test split, or short of its infilled rows."""
    for r in runs.iter_rows(named=True):
        key = (r["experiment"], r["trial"])
        if non_finite(r.get("test_value_acc")):
            raise GuardrailError(f"{run_name(key)}: test_value_acc is {r['test_value_acc']}: not a result (a diverged "
                                 f"or broken run); leave it out with --where+ or fix its row")
        table = preds.get(key)
        if table is None or table.is_empty():
            raise GuardrailError(f"{run_name(key)}: no rows in the predictions table")
        dup = table.filter(pl.col("id").is_duplicated())["id"].unique().sort().to_list()
        if dup:
            raise GuardrailError(f"{run_name(key)}: test example id(s) repeated: {dup[:SHOWN_IDS]}")
        for col in columns:
            null = table.filter(pl.col(col).is_null())["id"].sort().to_list()
            if null:
                raise GuardrailError(f"{run_name(key)}: {len(null)} test example(s) with no {col}: {null[:SHOWN_IDS]}")
        n_test = r.get("n_test")
        if n_test is not None and table.height != n_test:
            raise GuardrailError(f"{run_name(key)}: {table.height} prediction rows but the run tested {n_test} "
                                 f"examples: the predictions are truncated or padded")
        for col, said in RUN_ACCURACY.items():
            if col in table.columns and r.get(said) is not None and not table[col].is_null().any():
                acc = table[col].cast(pl.Float64).mean()
                if abs(acc - r[said]) > 1e-9:
                    raise GuardrailError(f"{run_name(key)}: its predictions give {said} {acc:.6f} but the runs table says "
                                         f"{r[said]:.6f}")
        _check_expressions(key, table)
        _check_split(key, r, table)


RUN_ACCURACY = {"value_correct": "test_value_acc", "expression_correct": "test_expr_acc",
                "expression_correct_values": "test_expr_acc_values"}
"""Each per-example correctness column of the predictions table, and the runs column its mean is."""


def _check_expressions(key: tuple[str, str], table: pl.DataFrame) -> None:
    """Strict expression correctness is the predicted expression's being the gold one, token for
    token (`psedual.metrics.expression_correct`): recomputed where the table holds both. A strictly
    right expression is right by values too (the same tokens give the same numbers)."""
    if {"predicted", "gold", "expression_correct"} <= set(table.columns):
        same = pl.col("predicted").eq_missing(pl.col("gold"))
        for marked, wrong in ((True, ~same), (False, same)):
            bad = table.filter((pl.col("expression_correct") == marked) & wrong)["id"].sort().to_list()
            if bad:
                raise GuardrailError(f"{run_name(key)}: {len(bad)} test example(s) marked {'' if marked else 'not '}"
                                     f"expression_correct where the predicted expression is "
                                     f"{'not ' if marked else ''}the gold expression: {bad[:SHOWN_IDS]}")
    if {"expression_correct", "expression_correct_values"} <= set(table.columns):
        bad = table.filter(pl.col("expression_correct") & ~pl.col("expression_correct_values"))["id"].sort().to_list()
        if bad:
            raise GuardrailError(f"{run_name(key)}: {len(bad)} test example(s) strictly expression_correct but not "
                                 f"expression_correct_values: {bad[:SHOWN_IDS]}")
    if {"predicted", "gold", "expression_correct_values"} <= set(table.columns):
        marked = table.filter(pl.col("expression_correct_values"))
        bad = [i for i, p, g in marked.select("id", "predicted", "gold").rows() if not _same_skeleton(p, g)]
        if bad:
            raise GuardrailError(f"{run_name(key)}: {len(bad)} test example(s) marked expression_correct_values where "
                                 f"the predicted expression's operators or constants are not the gold's: "
                                 f"{sorted(bad)[:SHOWN_IDS]}")
    if {"predicted", "value_correct"} <= set(table.columns):
        bad = table.filter(pl.col("value_correct") & (pl.col("predicted").list.len().fill_null(0) == 0))["id"]
        if bad.len():
            raise GuardrailError(f"{run_name(key)}: {bad.len()} test example(s) marked value_correct with no predicted "
                                 f"expression: {bad.sort().to_list()[:SHOWN_IDS]}")


def _same_skeleton(predicted: list[str] | None, gold: list[str] | None) -> bool:
    """Whether two prefix expressions can be equal once their slots are replaced by numbers (the
    published expression accuracy, `psedual.metrics.expression_correct_values`): as long, and equal
    wherever neither holds a slot. Without the problem's numbers this is as far as it can be checked."""
    if predicted is None or gold is None or len(predicted) != len(gold):
        return False
    return all(p == g or SLOT.fullmatch(p) or SLOT.fullmatch(g) for p, g in zip(predicted, gold))


def _check_split(key: tuple[str, str], r: dict, table: pl.DataFrame) -> None:
    """The predictions are the test split the run recorded, and hold every infilled row it counted."""
    if r.get("data_test_hash") and "gold" in table.columns:
        got = split_hash(zip(table["id"].to_list(), (g or [] for g in table["gold"].to_list())))
        if got != r["data_test_hash"]:
            raise GuardrailError(f"{run_name(key)}: its {table.height} prediction rows (ids and golds, hash {got}) are "
                                 f"not the test split it recorded (data_test_hash {r['data_test_hash']}): ids not "
                                 f"in its test split, or other golds")
    if r.get("n_test_infilled") is not None and "infill_gold" in table.columns:
        have = table["infill_gold"].is_not_null().sum()
        if have != r["n_test_infilled"]:
            raise GuardrailError(f"{run_name(key)}: {have} prediction rows hold infilling but the run infilled "
                                 f"{r['n_test_infilled']} test examples: the infilling rows are truncated or padded")


def _same(x, y) -> bool:
    """Equal scores: both NaN (a diverged run's), or within rounding."""
    if non_finite(x) or non_finite(y):
        return str(x) == str(y)
    return abs(x - y) <= 1e-9


def check_validation(runs: pl.DataFrame, epochs: pl.DataFrame, competing: set[tuple[str, str]]) -> None:
    """Each trained run's validation scores in the runs table are its epochs table's at its
    `best_epoch`: a runs row whose `valid_value_acc` is anything else (a copy of its test accuracy)
    would win its slot on what it was not selected by. A run without epochs rows is refused where
    it competes for its slot (`competing`: slots of several trials), flagged (`selection`) where it
    is its slot's only run."""
    scores = [c for c in ("valid_value_acc", "valid_expr_acc") if c in runs.columns and c in epochs.columns]
    tables = epochs.partition_by(["experiment", "trial"], as_dict=True) if epochs.height else {}
    for r in runs.iter_rows(named=True):
        key = (r["experiment"], r["trial"])
        rows = tables.get(key)
        if r.get("llm.model") is not None:
            continue
        if rows is None and key in competing:
            raise GuardrailError(f"{run_name(key)}: no epochs rows, and it competes with other trials of its slot by its "
                                 f"runs row's validation score: that score cannot be checked; add its epochs table "
                                 f"or leave it out with --where+")
        if rows is None:
            continue
        if rows["epoch"].null_count():
            raise GuardrailError(f"{run_name(key)}: {rows['epoch'].null_count()} epochs row(s) without an epoch number: "
                                 f"which epoch it kept cannot be checked")
        if r.get("best_epoch") is None:
            continue
        kept = rows.filter(pl.col("epoch") == r["best_epoch"])
        if kept.is_empty():
            raise GuardrailError(f"{run_name(key)}: best_epoch {r['best_epoch']} has no row in "
                                 f"its epochs table (epochs {sorted(rows['epoch'].to_list())}): its validation score "
                                 f"cannot be checked")
        for col in scores:
            said, there = r[col], kept[col][0]
            if said is not None and there is not None and not _same(said, there):
                raise GuardrailError(f"{run_name((r['experiment'], r['trial']))}: {col} {said:.6g} in the runs table but "
                                     f"{there:.6g} at its best_epoch {r['best_epoch']} in its epochs table: the runs "
                                     f"row is not what the run validated (a test score copied in?); it would win its "
                                     f"slot on it")


def _fingerprint(table: pl.DataFrame) -> tuple[int, ...]:
    """A run's prediction rows in id order, each as a hash of every column read but the run's key."""
    return tuple(table.drop("experiment", "trial", strict=False).sort("id").hash_rows(seed=0).to_list())


def check_seed_replicates(runs: pl.DataFrame, group: list[str], seed: str, preds: dict[tuple[str, str], pl.DataFrame],
                          epochs: pl.DataFrame) -> None:
    """Two runs of one arm (`group`: the cell and arm) under different seeds whose predictions are
    identical row for row, or whose training-loss curves are, are one seed run twice: counted as
    two, they would halve the spread a claim is tested against."""
    curves = {}
    if "train_loss" in epochs.columns:
        for key, rows in epochs.sort("epoch").partition_by(["experiment", "trial"], as_dict=True).items():
            loss = rows["train_loss"]
            if loss.null_count() < loss.len():
                curves[key] = (tuple(rows["epoch"].to_list()), tuple(loss.to_list()))
    for part in runs.partition_by(group, maintain_order=True):
        for what, marks in (("predictions", {k: _fingerprint(preds[k]) for k in part.select("experiment", "trial")
                                             .rows() if k in preds}),
                            ("training curves", {k: curves[k] for k in part.select("experiment", "trial").rows()
                                                 if k in curves})):
            seen: dict = {}
            for r in part.sort(seed).iter_rows(named=True):
                key = (r["experiment"], r["trial"])
                if key not in marks:
                    continue
                first = seen.setdefault(marks[key], (key, r[seed]))
                if first[0] != key and first[1] != r[seed]:
                    raise GuardrailError(f"{run_name(first[0])} (seed {first[1]}) and {run_name(key)} (seed {r[seed]}) hold "
                                         f"identical {what}: one seed run twice, not two seeds; keep one with "
                                         f"--where+")
