"""The paper's protocol as analysis/checks/protocol.py reads it (issue 52, item 6): the published
recipes' epochs from the recipes' one table (psedual/train/recipe_table.py, without torch), and the
benchmarks' test split sizes, which analysis cannot load (they need the data) and keeps here, equal
to the package's."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from analysis.checks import protocol
from psedual.data.registry import DATASETS


@pytest.mark.parametrize("solver, dataset, epochs", [
    ("gts", "mawps", 80), ("dns", "math23k", 80), ("graph2tree", "svamp", 80), ("bert_tree", "mathqa", 50),
    ("re_deduction", "math23k", 500), ("re_deduction", "mathqa", 1000), ("re_deduction", "svamp", 1000),
    ("re_deduction", "mawps", 100), ("re_deduction", "mawps-single", 100),  # no script: MAWPS's
    ("llm:gpt", "svamp", None), ("gts", "no-such-set", None),
])
def test_the_recipes_epochs_are_read_from_the_recipes_table(solver, dataset, epochs):
    assert protocol._recipe(solver, dataset) == epochs


def test_the_protocol_reads_the_recipes_without_torch():
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import analysis.checks.protocol"],
                         cwd=Path(__file__).parent.parent, capture_output=True, text=True, check=True).stderr
    assert "psedual.train.recipe_table" in out and "torch" not in out


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
