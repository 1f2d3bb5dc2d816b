"""`recipe: published` in a grid sweep (a sweep file or a paper file's part): each trial at its
solver's published recipe on its data set (`psedual.train.recipes`).

The body's solver and data-set grid axes become arms, each carrying its recipe's values, and a key
the body sets itself (in `fixed`, `grid` or an arm) overrides the recipe's. The recipe's values thus
live in one place, the registry, and every trial's config, as the runs table stores it, holds them.
"""

from __future__ import annotations

import itertools

from psedual.train.config import TrainConfig
from psedual.train.recipes import get_recipe
from psedual.tune.errors import SpecError

RECIPE = "recipe"
"""A grid body's key naming the recipe its trials train at (removed before it is checked as a sweep)."""
RECIPES = ("published",)
"""What `recipe:` may say: `published`, each solver's own (psedual/train/recipes.py)."""
RECIPE_AXES = ("solver", "data.dataset")
"""The keys a recipe depends on: grid axes over them become arms (each with its recipe)."""


def with_recipe(body: dict, where: str) -> dict:
    """A grid body (with `recipe:`) as a plain sweep's: its solver and data-set axes crossed into
    its arms, each arm with its solver's recipe on its data set, less the keys the part sets."""
    body = dict(body)
    kind = body.pop(RECIPE)
    if kind not in RECIPES:
        raise SpecError(f"{where}: recipe: {kind!r}; valid: {', '.join(RECIPES)}")
    if body.get("mode") != "grid":
        raise SpecError(f"{where}: recipe: only a grid part trains at recipes (an Optuna search tunes them)")
    fixed, grid = body.get("fixed") or {}, dict(body.get("grid") or {})
    if not isinstance(fixed, dict) or not isinstance(body.get("arms") or [], list):
        raise SpecError(f"{where}: fixed: expected a mapping, arms: a list")
    axes = {key: grid.pop(key) for key in RECIPE_AXES if key in grid}
    defaults = TrainConfig()
    arms = []
    for arm in body.get("arms") or [{}]:
        for values in itertools.product(*axes.values()):
            keys = {**(arm if isinstance(arm, dict) else {}), **dict(zip(axes, values))}
            trial = {**fixed, **keys}
            try:
                recipe = get_recipe(trial.get("solver", defaults.solver)).flat(
                    trial.get("data.dataset", defaults.data.dataset))
            except ValueError as err:
                raise SpecError(f"{where}: recipe: {err}") from None
            given = {*fixed, *grid, *keys}
            arms.append({**keys, **{k: v for k, v in recipe.items() if k not in given}})
    return {**body, "grid": grid, "arms": arms}
