"""Checks that a claim compares what it says it compares, before any statistic is computed.

- Predictions: every run's per-example rows are complete (no nulls), unique by id, as many as
  the run says it tested (`n_test`), and give back its `test_value_acc`. A run that fails is
  refused by name, with the ids concerned.
- Results: a non-finite value (NaN, ±inf: a diverged run) is never a result and never wins a
  slot; a run's infilling rows are as many as it says it infilled (`n_test_infilled`).
- Data: a run's predictions give back the test split it recorded (`data_test_hash`, over ids and
  golds); paired runs trained and tested on the same data (`n_train`, `data_train_hash`,
  `data_test_hash`, and the golds of every paired example). Tables written before the hashes
  were recorded are flagged: their data identity is not checked.
- Slots: the trials of one slot may differ only in what a sweep searched; trials that differ
  in their data are refused (add the column to the cell), and replicates (the same config and
  seed) are refused rather than the luckiest kept.
- Configs: the two arms of a claim may differ in the arm and nothing else. Every runs column
  but the records' outcomes and the execution details (`psedual.train.rows.NOT_COMPARED`) is
  compared between the arms' runs: hyperparameters, epochs, training size and subset seed,
  status and epochs done, experiment, code version, an LLM's settings. When the arm is a
  column that names the arm (`variant`, `llm.reexamine`), the others differ with it and are
  not compared. A difference is refused, unless the column was searched within the slots (a
  tuned sweep: then it is flagged, with the tuning budget) or the user allowed it
  (`--allow_diff`: then it is flagged on that claim).
"""

from __future__ import annotations

import math

import polars as pl

from psedual.data.identity import split_hash
from psedual.train.rows import ARM_COLUMNS, NOT_COMPARED

SHOWN_IDS = 5
DATA_IDENTITY = ("n_train", "data_train_hash", "data_test_hash")
"""What paired runs must share, seed by seed and fold by fold: the data they trained and tested on."""


class GuardrailError(ValueError):
    """Two arms cannot be compared: their test examples, folds, seeds, configs or data versions do
    not line up, a slot holds replicates, a result is not finite, or a run's predictions are incomplete."""


def _name(key: tuple[str, str]) -> str:
    return f"{key[0]}/{key[1]}"


def non_finite(value) -> bool:
    """NaN or ±inf (a diverged run's score); None is missing, not non-finite."""
    return isinstance(value, float) and not math.isfinite(value)


def check_predictions(runs: pl.DataFrame, preds: dict[tuple[str, str], pl.DataFrame], columns: list[str]) -> None:
    """Refuse a run whose test accuracy is not a number, or whose predictions are missing,
    duplicated, null, truncated, not its recorded test split, or short of its infilled rows."""
    for r in runs.iter_rows(named=True):
        key = (r["experiment"], r["trial"])
        if non_finite(r.get("test_value_acc")):
            raise GuardrailError(f"{_name(key)}: test_value_acc is {r['test_value_acc']}: not a result (a diverged "
                                 f"or broken run); leave it out with --where+ or fix its row")
        table = preds.get(key)
        if table is None or table.is_empty():
            raise GuardrailError(f"{_name(key)}: no rows in the predictions table")
        dup = table.filter(pl.col("id").is_duplicated())["id"].unique().sort().to_list()
        if dup:
            raise GuardrailError(f"{_name(key)}: test example id(s) repeated: {dup[:SHOWN_IDS]}")
        for col in columns:
            null = table.filter(pl.col(col).is_null())["id"].sort().to_list()
            if null:
                raise GuardrailError(f"{_name(key)}: {len(null)} test example(s) with no {col}: {null[:SHOWN_IDS]}")
        n_test = r.get("n_test")
        if n_test is not None and table.height != n_test:
            raise GuardrailError(f"{_name(key)}: {table.height} prediction rows but the run tested {n_test} "
                                 f"examples: the predictions are truncated or padded")
        if "value_correct" in table.columns and r.get("test_value_acc") is not None:
            acc = table["value_correct"].mean()
            if abs(acc - r["test_value_acc"]) > 1e-9:
                raise GuardrailError(f"{_name(key)}: its predictions give value accuracy {acc:.6f} but the runs "
                                     f"table says {r['test_value_acc']:.6f}")
        _check_split(key, r, table)


def _check_split(key: tuple[str, str], r: dict, table: pl.DataFrame) -> None:
    """The predictions are the test split the run recorded, and hold every infilled row it counted."""
    if r.get("data_test_hash") and "gold" in table.columns:
        got = split_hash(zip(table["id"].to_list(), (g or [] for g in table["gold"].to_list())))
        if got != r["data_test_hash"]:
            raise GuardrailError(f"{_name(key)}: its {table.height} prediction rows (ids and golds, hash {got}) are "
                                 f"not the test split it recorded (data_test_hash {r['data_test_hash']}): ids not "
                                 f"in its test split, or other golds")
    if r.get("n_test_infilled") is not None and "infill_gold" in table.columns:
        have = table["infill_gold"].is_not_null().sum()
        if have != r["n_test_infilled"]:
            raise GuardrailError(f"{_name(key)}: {have} prediction rows hold infilling but the run infilled "
                                 f"{r['n_test_infilled']} test examples: the infilling rows are truncated or padded")


def _values(column: pl.Series) -> list:
    """A column's distinct values in order, a missing one last."""
    return column.drop_nulls().unique().sort().to_list() + ([None] if column.null_count() else [])


def check_slots(runs: pl.DataFrame, slot: list[str], compared: list[str]) -> None:
    """Refuse a slot whose trials trained on different data, or that holds replicates (the same
    config and seed): keeping the best of replicates by a score would cherry-pick one."""
    for part in runs.partition_by(slot, maintain_order=True):
        if part.height < 2:
            continue
        names = [_name((e, t)) for e, t in part.select("experiment", "trial").rows()]
        where = ", ".join(f"{k}={part[k][0]}" for k in slot)
        # the data config, and what the runs recorded of their data (a missing record is no difference)
        data = {c: _values(part[c]) for c in compared if c.startswith("data.") and part[c].n_unique() > 1}
        data |= {c: _values(part[c]) for c in DATA_IDENTITY
                 if c in part.columns and part[c].drop_nulls().n_unique() > 1}
        if data:
            said = "; ".join(f"{c} {v}" for c, v in data.items())
            config = [c for c in data if c.startswith("data.")]
            fix = f"add --by+ {config[0]} (or --where+)" if config else "leave one data version out with --where+"
            raise GuardrailError(f"slot {where}: its runs {names} trained on different data ({said}); {fix} so "
                                 f"each cell holds one data version")
        seen: dict[tuple, str] = {}
        for name, row in zip(names, part.select([c for c in compared if c != "experiment"]).rows()):
            same = seen.setdefault(tuple(map(str, row)), name)
            if same != name:
                raise GuardrailError(f"slot {where}: {same} and {name} are replicates (the same config and seed); "
                                     f"keeping the better one would cherry-pick it: give each run its own seed, or "
                                     f"keep one with --where+ trial=...")


def data_flags(cell: str, pairs: list[tuple[dict, dict]], allowed: set[str]) -> list[str]:
    """Paired runs (base, treatment) must have trained and tested on the same data: a GuardrailError
    naming both where they did not (a flag where --allow_diff names the column), and a flag where
    the runs table does not record it (tables written before `data_*_hash`)."""
    flags, unknown = [], []
    for b, t in pairs:
        names = f"{_name((b['experiment'], b['trial']))} and {_name((t['experiment'], t['trial']))}"
        for col in DATA_IDENTITY:
            x, y = b.get(col), t.get(col)
            if x is None or y is None:
                # a zero-shot LLM run trained on nothing: only its test split has an identity
                trained = b.get("llm.model") is None or t.get("llm.model") is None
                if col == "data_test_hash" or (col == "data_train_hash" and trained):
                    unknown.append(names)
                continue
            if x != y:
                said = f"{names} trained or tested on different data: {col} {x} vs {y}"
                if col not in allowed:
                    raise GuardrailError(f"{cell}: {said}; compare runs on the same data, or pass --allow_diff+ {col} "
                                         f"to compare anyway (the claim is then flagged)")
                flags.append(f"data differs (allowed by --allow_diff): {said}")
    if unknown:
        shown = sorted(set(unknown))
        flags.append(f"data identity not recorded for {len(shown)} pair(s) ({'; '.join(shown[:2])}"
                     f"{', ...' if len(shown) > 2 else ''}): tables written before data_train_hash/data_test_hash; "
                     f"that the arms saw the same data is not checked (re-collect or rerun them to check it)")
    return flags


def config_columns(columns: list[str], exclude: list[str]) -> list[str]:
    """The runs table's columns the arms must share (all but the records' outcomes and the
    execution details: `psedual.train.rows.NOT_COMPARED`), less `exclude` (the arm and the slot
    keys) and, where `exclude` holds a column that names the arm, the others that do."""
    skip = {*NOT_COMPARED, *exclude, *(ARM_COLUMNS if ARM_COLUMNS & set(exclude) else ())}
    return [c for c in columns if c not in skip]


def tuning(runs: pl.DataFrame, slot: list[str], compared: list[str]) -> dict[tuple, tuple[int, set[str]]]:
    """Per slot, before one run is kept: its number of trials (the tuning budget) and the config
    columns that vary among them (what was searched)."""
    out = {}
    for part in runs.partition_by(slot, maintain_order=True):
        key = tuple(part.row(0, named=True)[k] for k in slot)
        varying = {c for c in compared if part[c].n_unique() > 1}
        out[key] = (part.height, varying)
    return out


def config_flags(cell: str, base_arm: str, treat: str, base: pl.DataFrame, other: pl.DataFrame,
                 compared: list[str], searched: set[str], allowed: set[str]) -> list[str]:
    """The flags of a claim whose arms differ in searched or allowed columns; a GuardrailError
    for any other difference. A column null throughout one arm (e.g. `psedual.*` for the base
    solver) is that arm's not having the setting, not a difference."""
    flags = []
    for col in compared:
        a, b = set(base[col].to_list()), set(other[col].to_list())
        if a == b or a == {None} or b == {None}:
            continue
        said = f"{col}: {base_arm} {sorted(a, key=str)} vs {treat} {sorted(b, key=str)}"
        if col in searched:
            flags.append(f"tuned: {said} (searched within the slots)")
        elif col in allowed:
            flags.append(f"config differs (allowed by --allow_diff): {said}")
        else:
            raise GuardrailError(f"{cell}: the arms differ in more than {base_arm} vs {treat}: {said}; compare runs "
                                 f"that differ in the arm only, or pass --allow_diff+ {col} to compare anyway "
                                 f"(the claim is then flagged)")
    return flags


def budget(tuned: dict[tuple, tuple[int, set[str]]], slots: list[tuple]) -> int:
    """The most trials any of these slots held."""
    return max(tuned[s][0] for s in slots)
