"""A verdict against its target and margin (issue 57, `analysis.claims.targets`): "smaller than the
paper's +0.8?" answered by a one-sided t at the target, a margin at or above the target said, a real
difference inside the margin said both ways, the margin line under the claims, and exploratory pairs
at the claims' margin. Known answers from the committed converged claims (GRU vs base +0.08 over 10
seeds, GCN vs base +0.81), recomputed here with scipy."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import polars as pl
import pytest
from scipy import stats

from analysis.claims import exploratory, targets
from analysis.claims.verdicts import says_differ
from analysis.report.report import claim_mark
from analysis.stats import power
from analysis.tables.claim import Claim, frame

ROOT = Path(__file__).resolve().parents[1]
VARIANT = ROOT / "docs/converged/results/claims/compare_converged_variant.parquet"


def _committed() -> pl.DataFrame:
    """The committed GRU and GCN vs base claims as the rule judged them, before any target words (the
    stored table, written by `analyze study`, already carries them: `targets.judge` adds to a fresh claim)."""
    from analysis.claims.verdicts import verdict
    from analysis.tables.claim import claims_of

    stored = pl.read_parquet(VARIANT)
    return stored.with_columns(pl.Series("verdict", [verdict(c) for c in claims_of(stored)], dtype=pl.String)) \
        .drop([c for c in targets.COLUMNS if c in stored.columns])


@pytest.fixture(scope="module")
def rows() -> pl.DataFrame:
    """The committed GRU and GCN vs base claims, annotated as `analyze` annotates them (the paper's Δ)."""
    return power.annotate(_committed())


def _one_sided(row: dict, target: float) -> float:
    t = (row["delta"] - target) / (row["delta_sd"] / math.sqrt(row["n_seeds"]))
    return float(stats.t.cdf(t, row["n_seeds"] - 1))


def test_the_paper_target_is_tested_one_sided_and_the_margin_that_cannot_test_it_is_said(rows):
    judged = targets.judge(rows)
    gru, gcn = judged.row(0, named=True), judged.row(1, named=True)
    assert (gru["target_delta"], gcn["target_delta"]) == (0.8, 0.9)
    p_gru, p_gcn = _one_sided(gru, 0.8), _one_sided(gcn, 0.9)
    assert gru["p_target"] == pytest.approx(p_gru) and gcn["p_target"] == pytest.approx(p_gcn)
    assert gru["p_target_adjusted"] == pytest.approx(min(1.0, 2 * min(p_gru, p_gcn)))  # Holm over the two
    assert gru["verdict"] == (
        "undecided: about 17 more seeds would decide (TOST at ±1, 27 in all); ±1 points of accuracy includes the "
        "paper's +0.8: this does not test it; not shown smaller than the paper's +0.8 points of accuracy (one-sided t "
        f"at the target, p {p_gru:.3g}, holm {2 * p_gru:.3g})")
    assert "±1 points of accuracy includes the paper's +0.9: this does not test it" in gcn["verdict"]


def test_a_margin_below_the_target_is_not_said_and_a_shown_target_reads_smaller(rows):
    narrow = rows.with_columns(pl.lit(0.4).alias("margin"), pl.lit(0.01).alias("delta_sd"))
    judged = targets.judge(narrow)
    assert "does not test it" not in judged["verdict"][0]
    assert "; smaller than the paper's +0.8 points of accuracy (one-sided t at the target, p " in judged["verdict"][0]
    assert "not shown" not in judged["verdict"][0] and judged["p_target_adjusted"][0] < 0.05


def test_a_real_difference_inside_the_margin_says_both_and_keeps_its_mark(rows):
    claim = Claim.from_row(rows.row(1, named=True))
    better = dataclasses.replace(claim, verdict="better", p_adjusted=0.004, p_tost_adjusted=0.01)
    judged = targets.judge(frame([better]).with_columns(rows.select("target_delta", "target_from")[1]))
    verdict = judged["verdict"][0]
    assert verdict.startswith("better; equivalent within ±1 points of accuracy too: real, and smaller than the margin")
    assert says_differ(verdict) and claim_mark(dataclasses.replace(better, verdict=verdict)) == "**"
    assert not says_differ("inconclusive (3 seeds); better") and not says_differ(None)


def test_a_held_back_or_targetless_claim_gets_no_target_words(rows):
    held = rows.with_columns(pl.lit("inconclusive (3 seeds)").alias("verdict"))
    assert targets.judge(held)["verdict"].to_list() == ["inconclusive (3 seeds)"] * 2
    assert targets.judge(held)["p_target"].to_list() == [None, None]
    default = power.annotate(_committed().with_columns(pl.lit("x").alias("controls")))
    assert default["target_from"].to_list() == ["default"] * 2  # a control takes no paper Δ: 1 point, no claim's target
    assert targets.judge(default)["verdict"].to_list() == _committed()["verdict"].to_list()
    given = targets.judge(power.annotate(_committed(), target_delta=2.0))
    assert "smaller than the given +2 points of accuracy" in given["verdict"][0]


def test_the_margin_line_says_the_margin_its_unit_and_the_default_for_a_target(rows):
    line = targets.margin_line(rows, 1.0)
    assert line.startswith("margin: ±1 points of accuracy (--margin, at analyze's default); a margin at or above a "
                           "claim's target cannot test it")
    assert "half the target (±0.4 for 0.8, ±0.45 for 0.9) is the default a sweep in rounds takes" in line
    assert targets.margin_line(rows.with_columns(pl.lit(0.45).alias("margin")), 1.0).startswith(
        "margin: ±0.45 points of accuracy (as --margin gives it)")
    assert targets.margin_line(rows).startswith("margin: ±1 points of accuracy (its sweep file's comparisons')")


def test_an_exploratory_pair_takes_the_claims_margin(rows):
    assert exploratory.margin_of(rows) == 1.0
    assert exploratory.margin_of(rows.with_columns(pl.Series("margin", [0.45, 0.8]))) == 0.45
    assert exploratory.margin_of(rows.drop("margin")) == 1.0
    gru, gcn = (exploratory.Arm(n, frozenset(rows[c][i])) for n, c, i in
                (("GRU", "treatment_trials", 0), ("GCN", "treatment_trials", 1)))
    base = exploratory.Arm("base", frozenset(rows["base_trials"][0]))
    assert exploratory.margin_near(rows.with_columns(pl.Series("margin", [0.4, 0.45])), gru, gcn) == 0.4
    assert exploratory.margin_near(rows.with_columns(pl.Series("margin", [0.4, 0.45])), base, gcn) == 0.4


def test_a_stored_claim_is_judged_again_with_its_target_words(rows):
    judged = targets.judge(rows)
    assert [targets.again(r) for r in judged.iter_rows(named=True)] == judged["verdict"].to_list()
    assert "includes the paper's +0.8" in judged["verdict"][0]
    # a table from before the target test: its verdict as it was
    assert [targets.again(r) for r in rows.iter_rows(named=True)] == rows["verdict"].to_list()
