"""Equivalence in every verdict (issue 48): the TOST, the posterior, the seeds that would decide, on
the committed converged study's own tables (known answers) and against statsmodels and simulation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps
from statsmodels.stats.weightstats import ttost_paired

from analysis.claims import claims, verdicts
from analysis.cli import main as analyze
from analysis.stats import equivalence
from analysis.tables import read
from test_exploratory import _linked

CONVERGED = Path(__file__).resolve().parents[1] / "docs" / "converged" / "results"
GCN = ("variant=gcn",)
# (arm, base, treatment, where): the converged study's four planned claims, as its sweep file states them
PLANNED = {
    "gru": ("variant", "base", "gru", ("psedual.fusion=null|scheduled", "psedual.epsilon_schedule=null|horizon")),
    "gcn": ("variant", "base", "gcn", ("psedual.fusion=null|scheduled", "psedual.epsilon_schedule=null|horizon")),
    "fusion": ("psedual.fusion", "teacher_forcing", "scheduled", (*GCN, "psedual.epsilon_schedule=horizon")),
    "epsilon": ("psedual.epsilon_schedule", "epoch", "horizon", (*GCN, "psedual.fusion=scheduled")),
}
# the issue's recomputation of the TOST at ±1 from the same tables, to its 3 decimals
KNOWN_TOST = {"gru": 0.042, "gcn": 0.315, "fusion": 0.001, "epsilon": 0.005}


def _runs(where, root=CONVERGED) -> pl.DataFrame:
    return read.select(read.scan(str(root), "runs", ["converged"]), read.parse_where(list(where))).collect()


def _family(name: str, treatments: tuple[str, ...], margin: float = 1.0, where_more=()) -> dict[str, dict]:
    """The claims of one family (one `analyze compare`), by treatment."""
    arm, base, _, where = PLANNED[name]
    cmp = claims.Comparison(family=name, arm=arm, base=base, treatments=treatments, n_resamples=200, margin=margin)
    rows = claims.build(_runs((*where, *where_more)), read.scan(str(CONVERGED), "epochs", ["converged"]),
                        read.scan(str(CONVERGED), "predictions", ["converged"]), cmp).rows
    return {r["treatment_arm"]: r for r in rows.iter_rows(named=True)}


def _claim(name: str, margin: float = 1.0, where_more=()) -> dict:
    """A planned claim alone in its family."""
    treatment = PLANNED[name][2]
    return _family(name, (treatment,), margin, where_more)[treatment]


def _per_seed(where) -> np.ndarray:
    """An arm's test value accuracy per seed (%), straight from the runs table (not through claims)."""
    return 100 * _runs(where).sort("seed")["test_value_acc"].to_numpy()


@pytest.mark.parametrize("name", list(PLANNED))
def test_the_converged_tost_is_statsmodels_and_the_issue_s(name):
    arm, base, treatment, where = PLANNED[name]
    r = _claim(name)
    keep = [w for w in where if not w.startswith(f"{arm}=")]
    one = _per_seed([*keep, f"{arm}={treatment}"] if arm != "variant" else [f"variant={treatment}", *keep])
    other = _per_seed([*keep, f"{arm}={base}"] if arm != "variant" else ["variant=base"])
    expected = ttost_paired(one, other, -1.0, 1.0)[0]
    assert r["p_tost"] == pytest.approx(expected, rel=1e-9)
    assert round(r["p_tost"], 3) == KNOWN_TOST[name]
    d = one - other
    posterior = sps.t(d.size - 1, loc=d.mean(), scale=d.std(ddof=1) / np.sqrt(d.size))
    assert r["p_equivalent"] == pytest.approx(posterior.cdf(1) - posterior.cdf(-1), rel=1e-9)
    assert r["margin"] == 1.0


def test_the_converged_verdicts():
    rows = _family("gru", ("gru", "gcn"))
    # the two variants form one family: each kind of p is adjusted by Holm over it, so GRU's TOST p
    # 0.042 is 0.084 adjusted, and undecided; the issue's reading of it as equivalent was unadjusted
    assert rows["gru"]["p_tost_adjusted"] == pytest.approx(2 * rows["gru"]["p_tost"])
    assert rows["gru"]["verdict"] == "undecided: about 17 more seeds would decide (TOST at ±1, 27 in all)"
    assert rows["gcn"]["verdict"] == "undecided: about 15 more seeds would decide (the difference test, 25 in all)"
    assert _claim("fusion")["verdict"] == "equivalent within ±1"
    assert _claim("epsilon")["verdict"] == "equivalent within ±1"
    # the issue's posterior figures: P(|Δ| < 0.5) = 0.94 for scheduled vs teacher forcing
    assert round(_claim("fusion", margin=0.5)["p_equivalent"], 2) == 0.94


def test_a_tighter_margin_undecides_and_fewer_seeds_hold_an_equivalence_back():
    tight = _claim("fusion", margin=0.3)
    assert tight["p_tost"] > 0.05 and tight["verdict"].startswith("undecided: about ")
    # 3 seeds: the TOST alone would decide, the seeds guardrail holds it back as it holds a difference back
    three = _claim("fusion", margin=3.0, where_more=("seed=0|1|2",))
    assert three["p_tost_adjusted"] < 0.05 and three["verdict"] == "inconclusive (3 seeds)"


def test_the_published_epsilon_arm_is_flagged_near_teacher_forcing():
    flags = _claim("epsilon")["flags"]
    said = [f for f in flags if f.startswith("near teacher forcing")]
    assert said == ["near teacher forcing: psedual.epsilon_schedule=epoch is scheduled fusion but its ε ends at "
                    "0.904 > 0.9 in 10 of 10 run(s): the predicted expression weighs at most 0.096; docs/psedual.md"]
    assert not any(f.startswith("near teacher forcing") for f in _claim("fusion")["flags"])  # ε 0.5; TF is TF


def test_tost_power_is_the_simulated_rejection_rate():
    rng = np.random.default_rng(0)
    for delta, sd, n in ((0.08, 1.5, 10), (0.2, 0.54, 5), (0.5, 1.0, 15)):
        sims = 3000
        hits = sum(ttost_paired(rng.normal(delta, sd, n), np.zeros(n), -1.0, 1.0)[0] < 0.05 for _ in range(sims))
        assert equivalence.tost_power(delta, sd, n, 1.0, 0.05) == pytest.approx(hits / sims, abs=0.03)
    assert equivalence.tost_power(1.2, 1.0, 50, 1.0, 0.05) == 0.0  # |Δ| beyond the margin: never equivalent


def test_the_seeds_that_decide_are_the_fewest_at_80_percent():
    n = equivalence.tost_n(0.08, 1.5, 1.0, 0.025)
    assert equivalence.tost_power(0.08, 1.5, n, 1.0, 0.025) >= 0.8 > equivalence.tost_power(0.08, 1.5, n - 1, 1.0, 0.025)
    # a Δ near 0: the TOST decides sooner; a Δ near the margin: the difference test does
    assert equivalence.to_decide(0.08, 1.5, 1.0, 0.025).by == "equivalence"
    assert equivalence.to_decide(0.81, 1.23, 1.0, 0.025).by == "difference"
    assert equivalence.to_decide(0.5, None, 1.0, 0.05) == equivalence.Decision(None, None)
    assert verdicts.level(0.05, "holm", 2) == 0.025 and verdicts.level(0.05, "none", 2) == 0.05


def test_one_seed_is_over_examples():
    rng = np.random.default_rng(3)
    base = rng.random(400) < 0.8
    treat = base.copy()
    flip = rng.choice(400, 6, replace=False)
    treat[flip] = ~treat[flip]
    eq = equivalence.equivalence(100.0 * treat, 100.0 * base, 3.0)
    expected = ttost_paired(100.0 * treat, 100.0 * base, -3.0, 3.0)[0]
    assert eq.p_tost == pytest.approx(expected) and eq.p_tost < 0.05
    assert equivalence.equivalence([1.0, 1.0], [0.0, 0.0], 1.0) == equivalence.Equivalence(1.0, None, None)
    with pytest.raises(ValueError, match="margin must be > 0"):
        equivalence.Equivalence(0.0, None, None)


def test_margin_is_an_option_and_old_claims_tables_still_read(tmp_path, capsys):
    root = _linked(tmp_path)
    # an old claims table (before issue 48): no margin, TOST or posterior columns
    (root / "claims").mkdir()
    old = pl.read_parquet(next((CONVERGED / "claims").glob("*.parquet")))
    old.drop([c for c in ("margin", "p_tost", "p_tost_adjusted", "p_equivalent") if c in old.columns]).write_parquet(
        root / "claims" / "old.parquet")
    arm, base, treatment, where = PLANNED["fusion"]
    words = ["analyze", "compare", "--root", str(root), "--experiment", "converged", "--arm", arm, "--base", base,
             "--treatment", treatment, *(x for w in where for x in ("--where+", w)), "--resamples", "200"]
    assert analyze([*words, "--margin", "0.3"]) == 0
    out = capsys.readouterr().out
    assert "at ±0.3" in out and "undecided: about" in out and "TOST p (adj)" in out
    loaded = claims.load(str(root))
    assert loaded.height == old.height + 1
    assert loaded.filter(pl.col("margin").is_null()).height == old.height  # the old rows: null, not an error
    assert analyze([*words, "--margin", "0"]) == 2
    assert "--margin 0 points of accuracy is refused" in capsys.readouterr().err
