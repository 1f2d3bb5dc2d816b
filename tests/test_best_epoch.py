"""The one best-epoch rule: the first epoch with the highest validation value accuracy."""

from __future__ import annotations

import polars as pl
import pytest

from analysis.checks.selection import _selection_flags
from psedual.results.best import best_epoch

# epochs 2 and 4 tie on the highest validation value accuracy; rows out of epoch order
TIED = [{"epoch": 4, "valid_value_acc": 0.5, "valid_expr_acc": 0.4},
        {"epoch": 1, "valid_value_acc": 0.25, "valid_expr_acc": 0.2},
        {"epoch": 2, "valid_value_acc": 0.5, "valid_expr_acc": 0.3},
        {"epoch": 3, "valid_value_acc": 0.375, "valid_expr_acc": 0.5}]


def test_ties_go_to_the_first_epoch():
    assert best_epoch(TIED)["epoch"] == 2
    assert best_epoch([{"epoch": 1, "valid_value_acc": 0.0}])["epoch"] == 1
    assert best_epoch(TIED[1:2] + TIED[3:])["epoch"] == 3  # the highest, not the latest
    with pytest.raises(ValueError, match="no epochs"):
        best_epoch([])


@pytest.mark.parametrize("claimed, flagged", [(2, False), (4, True), (3, True)])
def test_the_trainer_and_the_analysis_keep_the_same_epoch(claimed, flagged):
    """analysis checks each run's best_epoch by the same rule: a run whose best_epoch is the
    trainer's pick is not flagged, any other is."""
    epochs = pl.DataFrame([{"experiment": "e", "trial": "t", **row} for row in TIED])
    runs = pl.DataFrame([{"experiment": "e", "trial": "t", "n_valid": 8, "best_epoch": claimed}])
    assert (claimed == best_epoch(TIED)["epoch"]) != flagged
    assert bool(_selection_flags(runs, epochs)) == flagged
