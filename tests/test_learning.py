"""Learning curves per arm (analysis/report/learning.py): known answers of the curves and of the sentences
that read them, and the commands that print them (compare, curve --over epoch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.cli import main as analyze
from analysis.report import learning
from test_analysis import _pairs, _preds, _write_tables


def _curve(base: list[float], treat: list[float], treatment: str = "gcn") -> pl.DataFrame:
    rows = [("c", arm, e + 1, 3, v, 1.0) for arm, values in (("base", base), (treatment, treat))
            for e, v in enumerate(values)]
    return pl.DataFrame(rows, schema=learning.CURVE_SCHEMA, orient="row")


def test_standing_known_answers():
    assert learning.standing(_curve([50, 60, 70], [48, 55, 68]), "base", "gcn") == \
        "base ahead at every epoch (1-3); Δ -2.00 points at epoch 3"
    assert learning.standing(_curve([50, 60, 70], [52, 61, 70.5]), "base", "gcn") == \
        "PseDual-GCN ahead at every epoch (1-3); Δ +0.50 points at epoch 3"
    # base ahead early, the treatment from epoch 3 on: the lead after the last change is what counts
    assert learning.standing(_curve([50, 60, 70, 72, 73], [49, 58, 71, 71, 74]), "base", "gcn") == \
        "PseDual-GCN ahead from epoch 5 (before it: base ahead at 3 of 4 epochs); Δ +1.00 points at epoch 5"
    assert learning.standing(_curve([50, 60, 70, 72], [49, 58, 71, 73]), "base", "gcn") == \
        "PseDual-GCN ahead from epoch 3 (before it: base ahead at 2 of 2 epochs); Δ +1.00 points at epoch 4"
    assert learning.standing(_curve([50, 60], [50, 60]), "base", "gcn") == \
        "level at every epoch (1-2); Δ +0.00 points at epoch 2"
    assert learning.standing(_curve([50, 60], [51, 60]), "base", "gcn").startswith("level at the last epoch (2)")
    assert learning.standing(_curve([50, 60, 61], [50, 61, 62]), "base", "gcn") == \
        "PseDual-GCN ahead from epoch 2 (before it: level at 1 of 1 epochs); Δ +1.00 points at epoch 3"
    # tied means summed in another order differ in their last bits: still level (a report's counts
    # changed from one run to the next before)
    tied = 83.33333333333333
    assert learning.standing(_curve([50, tied, 61], [50, tied + 1e-13, 62]), "base", "gcn") == \
        "PseDual-GCN ahead from epoch 3 (before it: level at 2 of 2 epochs); Δ +1.00 points at epoch 3"
    # any arm column: the labels are the arms' (report.label)
    assert learning.standing(_curve([1, 2], [0, 1], "scheduled"), "base", "scheduled").startswith("base ahead")


def _study(root: Path, seeds=range(4), folds=(0,), n_epochs=6) -> None:
    """base and gcn runs whose validation curves are known: base climbs 10 points an epoch from 40;
    gcn starts 6 points behind and gains 2 points an epoch on it; each seed adds `seed` points."""
    rng = np.random.default_rng(0)
    runs, preds, curves = [], {}, {}
    for seed in seeds:
        for fold in folds:
            a, b = _pairs(rng, 100, 0.05, 0.05)
            for variant, c, start, slope in (("base", a, 40.0, 10.0), ("gcn", b, 34.0, 12.0)):
                trial = f"{variant}-s{seed}-f{fold}"
                runs.append({"trial": trial, "variant": variant, "solver": "gts", "seed": seed, "data.fold": fold,
                             "best_epoch": n_epochs})
                preds[trial] = _preds([f"mawps:{fold * 100 + i}" for i in range(100)], c)
                curves[trial] = [(start + slope * e + seed + fold) / 100 for e in range(n_epochs)]
    _write_tables(root, "study", runs, preds)
    for trial, curve in curves.items():  # the epochs table: the whole curve, each run's best the last
        pl.DataFrame({"trial": trial, "epoch": list(range(1, n_epochs + 1)), "valid_value_acc": curve}).write_parquet(
            root / "epochs" / "experiment=study" / f"{trial}.parquet")
    for r in runs:  # the runs row holds the best epoch's validation score, as the trainer writes it
        path = root / "runs" / "experiment=study" / f"{r['trial']}.parquet"
        pl.read_parquet(path).with_columns(valid_value_acc=pl.lit(curves[r["trial"]][-1])).write_parquet(path)


def test_curves_mean_and_sd_over_seeds_folds_averaged_first(tmp_path, capsys):
    _study(tmp_path, seeds=range(4), folds=(0, 1))
    assert analyze(["analyze", "compare", "--root", str(tmp_path), "--treatment", "gcn", "--resamples", "500"]) == 0
    out = capsys.readouterr().out
    # gcn − base = −6 + 2(e − 1): behind at epochs 1-3, level at 4, ahead at 5-6
    assert "data.dataset=mawps, solver=gts: PseDual-GCN vs base: PseDual-GCN ahead from epoch 5 (before it: base ahead at 3, " \
           "level at 1 of 4 epochs); Δ +4.00 points at epoch 6" in out
    from analysis.tables import read

    claims_rows = pl.read_parquet(tmp_path / "claims" / "compare_all.parquet")
    curve = learning.curves(claims_rows, read.scan(str(tmp_path), "runs").collect(),
                            read.scan(str(tmp_path), "epochs"))
    first = curve.filter((pl.col("arm") == "base") & (pl.col("epoch") == 1)).row(0, named=True)
    # seeds 0-3, each the mean of folds 0 and 1 (+0, +1): 40.5, 41.5, 42.5, 43.5
    assert first["n_seeds"] == 4 and first["mean"] == pytest.approx(42.0) and \
        first["sd"] == pytest.approx(np.std([40.5, 41.5, 42.5, 43.5], ddof=1))
    assert curve.height == 2 * 6


def test_curve_over_epoch_prints_the_table_and_draws_the_png(tmp_path, capsys):
    _study(tmp_path)
    png = tmp_path / "learning.png"
    assert analyze(["analyze", "curve", "--root", str(tmp_path), "--over", "epoch", "--png", str(png),
                    "--resamples", "500"]) == 0
    out = capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert "| epoch | base | PseDual-GCN |" in out and "| 6 | 91.50 ± 1.29 | 95.50 ± 1.29 |" in out
    assert f"figure: {png}" in out and "PseDual-GCN ahead from epoch 5" in out
    # the training-size curve takes no arm options
    assert analyze(["analyze", "curve", "--root", str(tmp_path), "--treatment", "gcn"]) == 2
    assert "arm, base and treatment are for --over epoch" in capsys.readouterr().err


def _table1_like() -> tuple[pl.DataFrame, list[tuple[str, str, str]]]:
    """Eight cells (paper-small's Table 1: dataset × solver) × base, GRU, GCN × 5 epochs; GCN runs
    1 point ahead of base at every epoch, GRU 2 behind."""
    rows, compared = [], []
    for i in range(8):
        cell = f"data.dataset={'mawps' if i < 5 else 'svamp'}, solver=s{i}"
        for arm, shift in (("base", 0.0), ("gru", -2.0), ("gcn", 1.0)):
            rows += [{"cell": cell, "arm": arm, "epoch": e, "n_seeds": 3, "mean": 10.0 * e + shift, "sd": 1.0}
                     for e in range(1, 6)]
        compared += [(cell, "base", "gru"), (cell, "base", "gcn")]
    return pl.DataFrame(rows, schema=learning.CURVE_SCHEMA), compared


def test_the_curves_are_small_multiples_with_a_delta_strip(tmp_path):
    """Issue 48: one panel per cell (its arms against their reference), each with the Δ strip that
    shows a point's difference; before, 24 lines in one panel with repeated colours."""
    curve, compared = _table1_like()
    groups = learning.panels(compared)
    assert len(groups) == 8 and all(t == ["gru", "gcn"] for t in groups.values())
    epochs, gap = learning.gaps(curve, compared[0][0], "base", "gcn")
    assert epochs == [1, 2, 3, 4, 5] and gap == pytest.approx([1.0] * 5)
    assert learning.gaps(curve, compared[0][0], "base", "gru")[1] == pytest.approx([-2.0] * 5)
    png = tmp_path / "multiples.png"
    learning.figure(curve, str(png), "table1-like", compared)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    colours = learning._colours(curve)  # one colour per arm in every panel, the solver alone black
    assert colours["base"] == "#000000" and len(set(colours.values())) == len(colours)
    with pytest.raises(ValueError, match="at least one comparison"):
        learning.figure(curve, str(png), "none", [])
