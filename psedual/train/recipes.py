"""Each solver's published recipe (the table: `psedual/train/recipe_table.py`, which analysis reads
without torch), checked against the run's config: every key a TrainConfig key, and every recipe on
every data set a valid TrainConfig.

`psedual train --recipe SOLVER` starts from `Recipe.flat(dataset)` (options given beside it
override it), and a paper file's part with `recipe: published` builds each trial on its solver's
recipe for its data set (psedual/tune/paper.py). docs/solvers.md's recipe table is rendered from
the table (`make readme`), and tests/test_recipes.py reads every value back from that table.
"""

from __future__ import annotations

from typing import Literal

from psedual.data.registry import DATASETS
from psedual.train.config import TrainConfig
from psedual.train.recipe_table import ANY, RECIPES, Recipe, Setting

__all__ = ["ANY", "RECIPES", "Recipe", "RecipeName", "Setting", "check", "get_recipe"]


def check(recipe: Recipe) -> Recipe:
    """`recipe`, each of its keys one TrainConfig has and its values a valid config on every data set."""
    for s in recipe.settings:
        if s.key not in TrainConfig.flat_keys():
            raise ValueError(f"recipe {recipe.solver}: key {s.key!r}: not a TrainConfig key")
    for dataset in DATASETS:
        TrainConfig.from_flat({**recipe.flat(dataset), "data.fold": 0})  # on MAWPS fold 0: only the values count
    return recipe


for _recipe in RECIPES.values():  # at import: a recipe no run could train with never reaches one
    check(_recipe)
RecipeName = Literal[tuple(RECIPES)]  # `--recipe`'s annotation: the CLI lists the names


def get_recipe(solver: str) -> Recipe:
    """A solver's recipe; a solver without one lists those that have one."""
    if solver not in RECIPES:
        raise ValueError(f"no published recipe for solver {solver!r}; recipes: {', '.join(RECIPES)}")
    return RECIPES[solver]
