"""`psedual analyze table1` on runs with no PseDual arm (issue 49: GTS reproduced at its published
recipe over MAWPS's 5 folds): each arm's accuracy alone, folds pooled, with its CI beside the paper's."""

from __future__ import annotations

import numpy as np
from scipy import stats as sps

from analysis.cli import main as analyze
from test_analysis import _preds, _write_tables

N = 100
"""Test problems per fold."""


def _folds(root, right: dict[int, list[int]], folds=range(5), **extra) -> None:
    """Base GTS runs on MAWPS: per seed, fold f answers right[seed][f] of its N problems right."""
    runs, preds = [], {}
    for seed, per_fold in right.items():
        for f in folds:
            trial = f"base-s{seed}-f{f}"
            runs.append({"trial": trial, "variant": "base", "solver": "gts", "seed": seed, "data.fold": f, **extra})
            preds[trial] = _preds([f"mawps:{f * N + i}" for i in range(N)], np.arange(N) < per_fold[f])
    _write_tables(root, "gts_5fold", runs, preds)


def _table1(root, capsys) -> str:
    assert analyze(["analyze", "table1", "--root", str(root), "--experiment+", "gts_5fold"]) == 0
    return capsys.readouterr().out


def test_one_seed_pools_its_five_folds_with_a_wilson_interval_beside_the_paper(tmp_path, capsys):
    _folds(tmp_path, {0: [80, 82, 84, 86, 88]})
    out = _table1(tmp_path, capsys)
    low, high = sps.binomtest(420, 500).proportion_ci(method="wilson")
    row = (f"| data.dataset=mawps, solver=gts | base | 1 | 5 of 5 | 500 | 84.00 | [{100 * low:.2f}, {100 * high:.2f}] "
           f"| 82.7 | 82.6 | yes, yes |")
    assert row in out, out
    assert "nothing is compared" in out
    assert "data.dataset=mawps, solver=gts, base: fold 0: 80.00, fold 1: 82.00, fold 2: 84.00, fold 3: 86.00, " \
           "fold 4: 88.00" in out


def test_several_seeds_take_the_t_interval_and_a_paper_figure_outside_it_is_said(tmp_path, capsys):
    _folds(tmp_path, {0: [90] * 5, 1: [92] * 5, 2: [91] * 5})
    out = _table1(tmp_path, capsys)
    accs = [90.0, 92.0, 91.0]
    low, high = sps.t.interval(0.95, 2, loc=np.mean(accs), scale=sps.sem(accs))
    assert f"| 3 | 5 of 5 | 500 | 91.00 | [{low:.2f}, {high:.2f}] | 82.7 | 82.6 | no ({82.7 - 91:+.2f}), " \
           f"no ({82.6 - 91:+.2f}) |" in out, out


def test_missing_folds_and_runs_cut_short_are_said(tmp_path, capsys):
    _folds(tmp_path, {0: [30, 34, 0, 0, 0]}, folds=(0, 1), epochs=80, epochs_done=2)
    out = _table1(tmp_path, capsys)
    assert "| 2 of 5 (0, 1): not the 5-fold protocol | 200 | 32.00 |" in out, out
    assert "note: 2 run(s) trained fewer epochs than their config's: gts_5fold/base-s0-f0 (2 of 80, completed), " \
           "gts_5fold/base-s0-f1 (2 of 80, completed)" in out, out


def test_a_seed_without_every_fold_is_left_out_and_named(tmp_path, capsys):
    _folds(tmp_path, {0: [80] * 5})
    _folds(tmp_path, {1: [90] * 5}, folds=(0, 1, 2))
    out = _table1(tmp_path, capsys)
    assert "| 1 | 5 of 5 | 500 | 80.00 |" in out, out
    assert "note: data.dataset=mawps, solver=gts, variant=base: seed(s) [1] lack some of folds [0, 1, 2, 3, 4]: " \
           "left out" in out, out


def test_the_job_prints_a_reproduction_beside_the_paper(tmp_path, monkeypatch, capsys):
    """`python tune.py --space search_spaces/gts_mawps_5fold.yaml` plans no comparison (one arm): after its
    runs table the job prints the pooled accuracy beside the paper's (the sweep and the tests stubbed
    here by the tables they would write)."""
    from pathlib import Path

    import polars as pl

    import psedual.tune.evaluate
    import psedual.tune.sweep
    import psedual.tune.trackers
    from psedual.job import run_spec
    from psedual.tune.space import load_spec

    _folds(tmp_path, {0: [80, 82, 84, 86, 88]})
    runs = pl.read_parquet(tmp_path / "runs" / "experiment=gts_5fold" / "*.parquet")
    monkeypatch.setattr(psedual.tune.sweep, "run_sweep", lambda *a, **k: [])
    monkeypatch.setattr(psedual.tune.evaluate, "collect", lambda *a, **k: runs)
    monkeypatch.setattr(psedual.tune.trackers, "log_tested", lambda *a, **k: None)
    spec = load_spec(Path(__file__).parent.parent / "search_spaces" / "gts_mawps_5fold.yaml")
    assert run_spec(spec, "gts_5fold", False, str(tmp_path), None) == 0
    out = capsys.readouterr().out
    assert f"Beside the paper: psedual analyze table1 --root {tmp_path} --experiment+ gts_5fold" in out
    assert "| data.dataset=mawps, solver=gts | base | 1 | 5 of 5 | 500 | 84.00 |" in out, out
