"""Power on every claim (`analysis.stats.power`): the MDE and the seeds needed are statsmodels' for the
claim's own test and n, from the observed spread of its paired differences, and every claim
command prints them."""

from __future__ import annotations

import math
import re

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.power import TTestPower

from analysis.cli import main as analyze
from analysis.stats import power
from analysis.tables import paper
from claim_rows import claim_row
from test_analysis_report import _figure1


def _statsmodels_n(effect: float) -> float:
    return TTestPower().solve_power(effect_size=effect, nobs=None, alpha=0.05, power=0.8, alternative="two-sided")


@pytest.mark.parametrize("target,sd", [(0.9, 2.0), (1.0, 3.0), (0.5, 1.0), (2.0, 0.7), (0.3, 4.0)])
def test_seeds_needed_are_statsmodels_s(target, sd):
    need = power.n_needed(target, sd)
    assert abs(need - _statsmodels_n(target / sd)) <= 1
    # and the least n that reaches 80% power (statsmodels' own power function at n and n - 1)
    assert TTestPower().power(effect_size=target / sd, nobs=need, alpha=0.05) >= 0.8
    if need > 2:
        assert TTestPower().power(effect_size=target / sd, nobs=need - 1, alpha=0.05) < 0.8


def test_known_answers():
    # the textbook paired t: d = 0.5 at 80% power, two-sided 0.05 needs 34 pairs (G*Power's answer)
    assert power.n_needed(0.5, 1.0) == 34
    # 8 seeds detect 1.16 sd of the per-seed Δ; 3 seeds only 3.26 sd
    assert power.mde(1.0, 8) == pytest.approx(1.156, abs=1e-3)
    assert power.mde(2.0, 3) == pytest.approx(2 * 3.264, abs=1e-2)
    for n, sd in ((3, 2.5), (8, 1.3), (400, 38.0)):
        d = power.mde(sd, n) / sd
        assert TTestPower().power(effect_size=d, nobs=n, alpha=0.05) == pytest.approx(0.8, abs=1e-6)
    assert power.mde(0.0, 8) is None and power.mde(1.0, 1) is None  # no spread, no second unit
    assert power.n_needed(1.0, 0.0) is None and power.n_needed(0.001, 50.0) == power.MAX_N + 1
    # the per-example difference: +1 only the treatment right, -1 only the base, else 0
    d = np.array([1] * 10 + [-1] * 5 + [0] * 85)
    assert power.example_sd(5, 10, 100) == pytest.approx(100 * d.std(ddof=1))


def _claim(**kw) -> dict:
    return claim_row(**({"n_seeds": 4, "n_examples": 200, "delta_sd": 2.0,
                         "verdict": "undecided: about 9 more seeds would decide"} | kw))


def test_each_claim_gets_its_own_test_s_power_and_target():
    rows = pl.DataFrame([_claim(), _claim(treatment_arm="gru", n_seeds=1, delta_sd=None, only_base=12,
                                          only_treatment=20, verdict="better"),
                         _claim(solver="my_solver", delta_sd=1.5, n_seeds=10)])
    out = power.annotate(rows, paper.load()).to_dicts()
    seeds, one, other = out
    # 4 seeds, sd 2: statsmodels' MDE at n 4; the target is the paper's Table 1 Δ for GTS-GCN on MAWPS
    assert seeds["mde"] == pytest.approx(2.0 * TTestPower().solve_power(nobs=4, alpha=0.05, power=0.8))
    assert (seeds["target_delta"], seeds["target_from"]) == (pytest.approx(0.9), "paper")
    assert abs(seeds["n_needed"] - _statsmodels_n(0.9 / 2.0)) <= 1 and seeds["needed_unit"] == "seeds"
    # the verdict is the claim's own (analysis.claims.verdicts): the power columns stand beside it
    assert [r["verdict"] for r in out] == rows["verdict"].to_list()
    # one seed: the examples are the unit, their spread from the discordant pairs; a verdict of
    # better is left as it is
    sd = power.example_sd(12, 20, 200)
    assert one["mde"] == pytest.approx(sd * TTestPower().solve_power(nobs=200, alpha=0.05, power=0.8))
    # one trained seed: no count of examples makes a method claim, so none is given (issue 60, class 5)
    assert one["needed_unit"] == "seeds" and one["n_needed"] is None and one["verdict"] == "better"
    assert one["target_delta"] == pytest.approx(0.8)  # the paper's GTS-GRU on MAWPS: 83.5 − 82.7
    # a solver the paper has not: a 1-point target
    assert (other["target_delta"], other["target_from"]) == (1.0, "default")


def test_the_claim_commands_print_the_power(tmp_path, capsys):
    _figure1(tmp_path, "x", seeds=3)
    for words in (["compare", "--treatment", "gcn", "--by+", "data.train_size"], ["table1", "--by+",
                  "data.train_size"], ["curve", "--png", str(tmp_path / "c.png")]):
        assert analyze(["analyze", *words, "--root", str(tmp_path), "--resamples", "200"]) == 0, words
        out = capsys.readouterr().out
        assert "MDE; n for target Δ" in out and "80% power" in out, words
        stored = pl.read_parquet(next((tmp_path / "claims").glob(f"{words[0]}_*.parquet")))
        for r in stored.iter_rows(named=True):  # the stored rows are what is printed, and statsmodels'
            assert power.line(r) in out
            assert r["mde"] == pytest.approx(r["delta_sd"] * TTestPower().solve_power(
                nobs=r["n_seeds"], alpha=0.05, power=0.8))
            assert abs(r["n_needed"] - math.ceil(_statsmodels_n(r["target_delta"] / r["delta_sd"]))) <= 1


def test_a_given_target_replaces_the_paper_s(tmp_path, capsys):
    _figure1(tmp_path, "x", seeds=3)
    words = ["analyze", "compare", "--treatment", "gcn", "--by+", "data.train_size", "--root", str(tmp_path),
             "--resamples", "200"]
    assert analyze([*words, "--target_delta", "2.5"]) == 0
    assert "to detect the given +2.5 (t-test, 80% power)" in capsys.readouterr().out
    stored = pl.read_parquet(tmp_path / "claims" / "compare_all.parquet")
    assert stored["target_from"].to_list() == ["given", "given"] and stored["target_delta"].to_list() == [2.5, 2.5]
    for r in stored.iter_rows(named=True):
        assert abs(r["n_needed"] - _statsmodels_n(2.5 / r["delta_sd"])) <= 1
    assert analyze([*words, "--target_delta", "0"]) == 2
    assert "target_delta must be a nonzero Δ" in capsys.readouterr().err


@pytest.mark.parametrize("control,controls,target", [("none", None, (pytest.approx(0.9), "paper")),
                                                     ("other_problem", "other_problem", (1.0, "default"))])
def test_a_control_against_base_takes_no_paper_delta(tmp_path, control, controls, target):
    """The paper's Δ (GTS-GCN vs base on MAWPS, +0.9) is the target of PseDual-GCN against base, not of a
    control against base (its infiller reads another problem's expression): the paper made no such
    comparison, and the control study's report printed +0.9 beside it."""
    from analysis.claims import claims
    from analysis.tables import read
    from test_analysis import _pairs, _preds, _write_tables

    rng = np.random.default_rng(4)
    runs, preds = [], {}
    for seed in range(3):
        a, b = _pairs(rng, 200, 0.05, 0.08)
        for variant, correct, ctl in (("base", a, None), ("gcn", b, control)):
            runs.append({"trial": f"{variant}{seed}", "variant": variant, "solver": "gts", "seed": seed,
                         "psedual.control": ctl})
            preds[f"{variant}{seed}"] = _preds([f"mawps:{i}" for i in range(200)], correct)
    _write_tables(tmp_path, "c", runs, preds)
    built = claims.build(read.scan(str(tmp_path), "runs").collect(), read.scan(str(tmp_path), "epochs"),
                         read.scan(str(tmp_path), "predictions"),
                         claims.Comparison(family="t", treatments=("gcn",), n_resamples=200))
    row = power.annotate(built.rows).row(0, named=True)
    assert row["controls"] == controls
    assert (row["target_delta"], row["target_from"]) == target
