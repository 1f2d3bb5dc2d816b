"""The paper's protocol as analysis/checks/protocol.py holds it (issue 52, item 6): the published recipes'
epochs and the benchmarks' test split sizes, which analysis cannot import (the recipes import the
solvers and torch; the sizes need the data) and keeps here, equal to the package's."""

from __future__ import annotations

from collections import Counter

import polars as pl
import pytest

from analysis.checks import protocol
from psedual.data.registry import DATASETS
from psedual.train.recipes import RECIPES


def test_the_recipes_epochs_are_the_registry_s():
    assert set(protocol.RECIPE_EPOCHS) == set(RECIPES)
    for solver, recipe in RECIPES.items():
        for dataset in DATASETS:
            assert protocol._recipe(solver, dataset) == recipe.flat(dataset)["epochs"], (solver, dataset)


@pytest.mark.parametrize("dataset", sorted(protocol.TEST_PROBLEMS))
def test_the_test_split_sizes_are_the_loaded_benchmarks(dataset, datasets):
    tested = Counter(p.fold if DATASETS[dataset].folds else None
                     for p in datasets(dataset).problems if DATASETS[dataset].folds or p.split == "test")
    assert dict(tested) == protocol.TEST_PROBLEMS[dataset]


def test_the_full_protocol_differs_in_nothing():
    runs = pl.DataFrame({"solver": ["gts"] * 10, "epochs": [80] * 10, "data.train_size": [None] * 10,
                         "seed": [0, 0, 0, 0, 0, 1, 1, 1, 1, 1], "data.fold": [0, 1, 2, 3, 4] * 2,
                         "n_test": [397, 397, 397, 397, 399] * 2, "llm.model": [None] * 10})
    assert protocol.differences(runs, "mawps") == []
    assert protocol.beside("82.7", []) == "82.7" and protocol.beside("–", ["5 epochs"]) == "–"
    short = runs.filter(pl.col("data.fold") == 0).with_columns(epochs=pl.lit(30), n_test=pl.lit(100))
    assert protocol.differences(short, "mawps") == ["30 epochs (its published recipe: 80)",
                                                    "tested on 100 of the 397 test problems of folds [0]",
                                                    "folds [0] of 5"]
    llm = pl.DataFrame({"solver": ["llm:m"], "seed": [0], "n_test": [100], "llm.model": ["m"]})
    assert protocol.differences(llm, "svamp") == ["tested on 100 of the 1000 test problems"]
