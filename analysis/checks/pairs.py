"""Each seed pair of a claim, run against run (issue 52, items 1 and 2).

`guardrails.config_flags` compares the arms column by column as sets: base stopped early where
PseDual completed is a difference. A set hides how its values fall over the seeds: base stopped on
four seeds and completed on two, PseDual the other way round, is one set in both arms, and yet every
pair compares a stopped run with a completed one. So each pair (the base and treatment runs of one
seed and fold) must agree on
- every column the arms must share whose values vary within the arms (`status`, `epochs_done`,
  `experiment`, an LLM's temperature: the columns `check_pooled` lets vary within an arm), unless it
  was searched within the slots (a tuned number, flagged `tuned` already);
- its validation split's size (`n_valid`, recorded as an outcome, never compared as config): runs
  validated on other splits had their checkpoints chosen on other problems.
A pair that differs is refused, naming it and the column, unless `--allow_diff` allows the column:
then the claim is flagged with how many pairs differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from analysis.checks.guardrails import GuardrailError, run_name

VALIDATION = ("n_valid",)
"""What the paired runs record of their validation split, compared pair by pair where both have one."""


@dataclass(frozen=True)
class Pair:
    """The two runs of one seed and fold that a claim compares."""

    seed: int
    """The seed both ran with."""
    fold: int | None
    """The fold both tested on (None for a dataset without folds)."""
    base: dict
    """The base arm's runs row."""
    treatment: dict
    """The treatment arm's runs row."""

    def __post_init__(self) -> None:
        for side in (self.base, self.treatment):
            if "experiment" not in side or "trial" not in side:
                raise ValueError(f"seed {self.seed}: a pair's run needs its experiment and trial, got {sorted(side)}")

    def where(self) -> str:
        """`seed 0, fold 0` (a dataset without folds: `seed 0`)."""
        return f"seed {self.seed}" + ("" if self.fold is None else f", fold {self.fold}")


@dataclass(frozen=True)
class Difference:
    """One column in which one pair's runs differ."""

    pair: Pair
    """The pair."""
    column: str
    """The column."""
    base: object
    """The base run's value."""
    treatment: object
    """The treatment run's value."""

    def __post_init__(self) -> None:
        if not self.column or _same(self.base, self.treatment):
            raise ValueError(f"{self.pair.where()}: a difference needs a column and two values that differ, got "
                             f"{self.column!r}: {self.base!r} vs {self.treatment!r}")


def _same(x: object, y: object) -> bool:
    return x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))


def crossed(base: pl.DataFrame, other: pl.DataFrame, compared: list[str], searched: set[str]) -> list[str]:
    """The compared columns whose values vary within the arms and are the same set in both (a set
    that differs is `config_flags`' to refuse or flag): only a pair can tell them apart."""
    return [c for c in compared if c not in searched and base[c].n_unique() > 1
            and set(base[c].to_list()) == set(other[c].to_list())]


def differences(pairs: list[Pair], columns: list[str]) -> dict[str, list[Difference]]:
    """Per column, the pairs whose runs hold other values in it; a validation column only where
    both runs record a validation split (null in tables written before it; 0 without one)."""
    out: dict[str, list[Difference]] = {}
    for c in columns:
        for p in pairs:
            x, y = p.base.get(c), p.treatment.get(c)
            # a run without a validation split (0) is flagged test-selected already (`selection`)
            if c in VALIDATION and not (x and y):
                continue
            if not _same(x, y):
                out.setdefault(c, []).append(Difference(p, c, x, y))
    return out


def _why(column: str) -> str:
    if column in VALIDATION:
        return "the paired runs were validated on other splits: their checkpoints were chosen on other problems"
    return "the same values in both arms, crossed over the seeds: each pair compares unlike runs"


def check(cell: str, base_arm: str, treat: str, pairs: list[Pair], columns: list[str],
          allowed: set[str]) -> list[str]:
    """The flags of a claim whose pairs differ in allowed columns; a GuardrailError naming the first
    pair and column that differ otherwise, and how many pairs differ in each column."""
    found = differences(pairs, [*columns, *(c for c in VALIDATION if c not in columns)])
    refused = {c: d for c, d in found.items() if c not in allowed}
    if refused:
        first = next(iter(refused.values()))[0]
        counts = ", ".join(f"{len(d)} of {len(pairs)} pairs differ in {c}" if i == 0 else f"{len(d)} in {c}"
                           for i, (c, d) in enumerate(refused.items()))
        names = f"{run_name((first.pair.base['experiment'], first.pair.base['trial']))} ({base_arm}) and " \
                f"{run_name((first.pair.treatment['experiment'], first.pair.treatment['trial']))} ({treat})"
        raise GuardrailError(f"{cell}: {first.pair.where()}: {names} differ in {first.column}: {first.base!r} vs "
                             f"{first.treatment!r} ({counts}); {_why(first.column)}; compare pairs that differ in the "
                             f"arm only, or pass --allow_diff+ {first.column} to compare anyway (the claim is then "
                             f"flagged)")
    flags = []
    for c, d in found.items():
        e = d[0]
        flags.append(f"config differs per pair (allowed by --allow_diff): {c}: {len(d)} of {len(pairs)} pairs, e.g. "
                     f"seed {e.pair.seed}: {run_name((e.pair.base['experiment'], e.pair.base['trial']))} {e.base!r} vs "
                     f"{run_name((e.pair.treatment['experiment'], e.pair.treatment['trial']))} {e.treatment!r}")
    return flags
