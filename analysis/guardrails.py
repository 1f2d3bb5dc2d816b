"""Checks that a claim compares what it says it compares, before any statistic is computed.

- Predictions: every run's per-example rows are complete (no nulls), unique by id, as many as
  the run says it tested (`n_test`), and give back its `test_value_acc`. A run that fails is
  refused by name, with the ids concerned.
- Configs: the two arms of a claim may differ in the arm and nothing else. Every config
  column the runs table holds (hyperparameters, epochs, training size and subset seed,
  status and epochs done, experiment, code version) is compared between the arms' runs; a
  difference is refused, unless the column was searched within the slots (a tuned sweep:
  then it is flagged, with the tuning budget) or the user allowed it (`--allow-diff`: then
  it is flagged on that claim).
"""

from __future__ import annotations

import polars as pl

SHOWN_IDS = 5
RESULT_PREFIXES = ("valid_", "test_", "final_", "n_")
NOT_COMPARED = {"trial", "error", "best_epoch", "train_seconds", "test_seconds", "threads", "device",
                "llm.failures", "llm.changed", "llm.calls", "llm.prompt_tokens", "llm.completion_tokens"}
"""Run outcomes and execution details, not configuration (`threads` and `device` change only the
summation order and kernels; `precision` is compared; an LLM run's counts are outcomes)."""


class GuardrailError(ValueError):
    """Two arms cannot be compared: their test examples, folds, seeds or configs do not line up,
    or a run's predictions are incomplete."""


def _name(key: tuple[str, str]) -> str:
    return f"{key[0]}/{key[1]}"


def check_predictions(runs: pl.DataFrame, preds: dict[tuple[str, str], pl.DataFrame], columns: list[str]) -> None:
    """Refuse a run whose predictions are missing, duplicated, null or truncated."""
    for r in runs.iter_rows(named=True):
        key = (r["experiment"], r["trial"])
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


def config_columns(columns: list[str], exclude: list[str]) -> list[str]:
    """The runs table's configuration columns, less `exclude` (the arm and the slot keys)."""
    return [c for c in columns if c not in NOT_COMPARED and c not in exclude and not c.startswith(RESULT_PREFIXES)]


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
            flags.append(f"config differs (allowed by --allow-diff): {said}")
        else:
            raise GuardrailError(f"{cell}: the arms differ in more than {base_arm} vs {treat}: {said}; compare runs "
                                 f"that differ in the arm only, or pass --allow-diff {col} to compare anyway "
                                 f"(the claim is then flagged)")
    return flags


def budget(tuned: dict[tuple, tuple[int, set[str]]], slots: list[tuple]) -> int:
    """The most trials any of these slots held."""
    return max(tuned[s][0] for s in slots)
