"""Every value a sweep file gives a config key, checked against the TrainConfig field it sets.

A sweep file sets fields in five places: `fixed`, each `grid` axis's values, each arm, each
`search` distribution (its bounds or choices) and each Optuna `points` entry, and its `compare`
entries filter on them (`where`). Each value is checked here, before any TrainConfig is built
from it (whose own checks compare and would fail with Python's words) and long before Ray sees
it (a list of lists as seeds became a 192,000-character trial name). Which of its choices a
value is stays the config's own check, which lists the valid ones.
"""

from __future__ import annotations

from typing import Literal

from psedual.reexamine.config import VARIANTS
from psedual.train.config import VARIANT_KEY, TrainConfig
from psedual.tune.spec_types import SweepSpec
from psedual.tune.value_types import fits, problem, words

FIELDS = {**{k: v for k, v in TrainConfig.field_hints().items() if k != VARIANT_KEY}, "variant": Literal[VARIANTS]}
"""Each dotted key a sweep file may set, with its field's annotation (`variant` in place of the
expression encoder it sets)."""
FRACTIONAL = ("uniform", "loguniform")
"""Distributions that draw any number in their range (Optuna's suggest_float)."""


def value_problems(spec: SweepSpec) -> list[str]:
    """One line per value of the spec's config keys that its field cannot take, each naming where
    it is (`grid.lr: lr must be a number, got 'abc'`). Keys no field has are left to the spec's
    own check, which lists the valid ones."""
    said: list[str] = []
    placed = [("fixed", spec.fixed), *((f"arms[{i}]", arm) for i, arm in enumerate(spec.arms)),
              *((f"points[{i}]", point) for i, point in enumerate(spec.points)),
              *((f"compare[{i}].where", c.where) for i, c in enumerate(spec.compare))]
    for where, values in placed:
        if isinstance(values, dict):
            said += [f"{where}: {line}" for key, value in values.items() if key in FIELDS
                     for line in [problem(key, value, FIELDS[key])] if line]
    for key, values in spec.grid.items():
        if key in FIELDS and isinstance(values, list):
            said += [f"grid.{key}: {line}" for value in values for line in [problem(key, value, FIELDS[key])] if line]
    for key, dist in spec.search.items():
        if key in FIELDS and isinstance(dist, dict) and len(dist) == 1:
            said += [f"search.{key}: {line}" for line in _search_problems(key, *next(iter(dist.items())))]
    return said


def _search_problems(key: str, kind: str, values: object) -> list[str]:
    """A distribution's values against the field it draws: a choice's values as values of the
    field, a range's bounds as numbers of a kind the field takes (a fractional draw for a whole
    number of epochs would fail in the trial, not here)."""
    field = FIELDS[key]
    if not isinstance(values, list):
        return []  # the spec's own check says what each distribution needs
    if kind == "choice":
        return [line for value in values for line in [problem(key, value, field)] if line]
    if kind in FRACTIONAL and not fits(0.5, field):
        return [f"{kind} draws fractional numbers, and {key} must be {words(field)}"
                + (": use int: [low, high]" if fits(1, field) else "")]
    if kind == "int" and not fits(1, field):
        return [f"int draws whole numbers, and {key} must be {words(field)}"]
    return [line for value in values for line in [problem(key, value, int if kind == "int" else float)] if line]
