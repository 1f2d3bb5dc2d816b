"""`psedual analyze table1` on a reproduction says its protocol (problem-vector read, selection,
training set) beside the published code's, splits off the test problems that repeat a training
problem, and does not take a last-epoch run for a test-selected one (issue 58)."""

from __future__ import annotations

import numpy as np

from analysis.cli import main as analyze
from analysis.report import alone
from analysis.tables import read
from test_analysis import _preds, _write_tables

N = 100


def _runs(root, **extra) -> None:
    """One seed of base GTS on MAWPS's 5 folds; fold f answers its first 80 + f problems right."""
    runs, preds = [], {}
    for f in range(5):
        trial = f"base-s0-f{f}"
        runs.append({"trial": trial, "variant": "base", "solver": "gts", "seed": 0, "data.fold": f, **extra})
        preds[trial] = _preds([f"mawps:{f * N + i}" for i in range(N)], np.arange(N) < 80 + f)
    _write_tables(root, "repro", runs, preds)


def _table1(root, capsys) -> str:
    assert analyze(["analyze", "table1", "--root", str(root), "--experiment+", "repro"]) == 0
    return capsys.readouterr().out


def test_a_reproduction_says_its_protocol_beside_the_published_code(tmp_path, capsys):
    _runs(tmp_path)  # runs from before the settings: our defaults
    out = _table1(tmp_path, capsys)
    assert "protocol (the published GTS and Graph2Tree code: encoder read published, selection last, every " \
           "training problem (no validation carve-out)):" in out, out
    assert "  data.dataset=mawps, solver=gts, base: encoder read final_state, selection best (the best validation " \
           "epoch), 1,000 training problems per run, 100 validating (carved from training)" in out, out
    assert "repeat a training problem" not in out  # no run recorded a repeat


def test_a_published_protocol_run_is_said_so_and_not_flagged_as_test_selected(tmp_path, capsys):
    _runs(tmp_path, **{"model.problem_vector": "published", "selection": "last", "n_valid": 0, "n_train": 1566,
                       "best_epoch": 2, "valid_value_acc": float("nan")})
    out = _table1(tmp_path, capsys)
    assert "base: encoder read published, selection last (the last epoch), 1,566 training problems per run, no " \
           "validation carve-out" in out, out
    assert "test-selected?" not in out, out


def test_a_best_epoch_that_is_not_the_last_is_flagged_for_a_last_epoch_run(tmp_path, capsys):
    _runs(tmp_path, selection="last", best_epoch=1)
    out = _table1(tmp_path, capsys)
    assert "test-selected? repro/base-s0-f0: best_epoch 1 is not the last epoch 2 (selection last)" in out, out


def test_the_repeats_of_training_problems_are_split_out(tmp_path):
    """Fold f's problems 0-9 repeat a training problem (all right); the rest are 70 + f of 90 right."""
    _runs(tmp_path, data_test_leaked=10)
    runs = read.scan(str(tmp_path), "runs").collect()
    notes: list[str] = []
    [row] = alone.arms(runs, read.scan(str(tmp_path), "epochs"), read.scan(str(tmp_path), "predictions"), "variant",
                       ["data.dataset", "solver"], "valid_value_acc", notes,
                       lambda run: frozenset(f"mawps:{run['data.fold'] * N + i}" for i in range(10)))
    assert row.repeats == (100.0, 50, 100.0 * sum(70 + f for f in range(5)) / 450, 450)
    assert "the rest 80.00 (450)" in alone.table([row], "markdown")
    assert "repeats 100.00 (50)" in alone.table([row], "markdown")
