"""Verdicts and marks that said more than the tests did (issue 52, items 4, 5 and 8): a Holm family
that lost its untestable member, a significance star beside a claim whose verdict refuses the test,
and float noise read as a spread (p 4e-74). `python tests/crafted_runs.py OUT 52.` prints the crafted
cases' outcomes under any checkout's analysis/."""

from __future__ import annotations

import polars as pl
import pytest

import crafted_claims as crafted
from analysis.cli import main as analyze
from analysis.stats import multiple, stats

CASES = {c.name: c for c in crafted.CASES}


def _run(name: str, root, capsys) -> tuple[int, str, pl.DataFrame]:
    case = CASES[name]
    case.build(root)
    words = [w.format(root=root) for w in case.words[1:]]
    code = analyze(["analyze", case.words[0], "--root", str(root), *words, "--resamples", "200"])
    out = capsys.readouterr().out
    claims = pl.concat([pl.read_parquet(p) for p in (root / "claims").glob("*.parquet")]) if code == 0 else None
    return code, out, claims


def test_a_family_keeps_its_untestable_member(tmp_path, capsys):
    # gcn's p 0.032 was adjusted over a family of one (gru's claim, untestable, dropped): `better`
    code, out, claims = _run("52.4 a family with an untestable member", tmp_path, capsys)
    assert code == 0
    gcn = claims.filter(pl.col("treatment_arm") == "gcn").row(0, named=True)
    gru = claims.filter(pl.col("treatment_arm") == "gru").row(0, named=True)
    assert gru["p"] is None and gru["verdict"].startswith("untestable") and gru["p_adjusted"] is None
    assert set(claims["n_family"].to_list()) == {2}
    assert 0.025 < gcn["p"] < 0.05 and gcn["p_adjusted"] == pytest.approx(2 * gcn["p"])
    assert gcn["verdict"].startswith("undecided") and "(2 comparisons)" in out


def test_holm_and_bh_count_a_member_without_a_p_value():
    assert multiple.adjust([0.03, None], "holm") == [pytest.approx(0.06), None]
    assert multiple.adjust([0.03, None], "bh") == [pytest.approx(0.06), None]
    assert multiple.adjust([0.03, None], "none") == [0.03, None]
    assert multiple.adjust([None, None], "holm") == [None, None]


def test_no_star_beside_a_claim_whose_verdict_refuses_the_test(tmp_path, capsys):
    # before: `0.00391 **↑` beside each size, over 20 test examples: "too few test examples: no verdict"
    code, out, claims = _run("52.5 a star on too few test examples", tmp_path, capsys)
    assert code == 0 and set(claims["verdict"].to_list()) == {"too few test examples (20 < 30): no verdict"}
    rows = [line for line in out.splitlines() if "| PseDual-GCN |" in line]
    assert len(rows) == 2 and not any("*" in line for line in rows), rows
    assert all(line.endswith("| 0.00391 |") for line in rows), rows


def test_float_noise_in_the_paired_differences_is_no_spread(tmp_path, capsys):
    # before: `better`, p 4.4e-74 and an MDE of 1e-15 points: Δ +1.00 on every seed, but for rounding
    code, out, claims = _run("52.8 Δ +1 on every seed but for float noise", tmp_path, capsys)
    assert code == 0
    r = claims.row(0, named=True)
    assert r["verdict"] == "untestable (Δ +1.00 on every seed: no spread, so no t-test)", r["verdict"]
    assert r["p"] is None and r["p_tost"] is None and r["mde"] is None and r["delta_sd"] == 0.0


def test_across_seeds_reads_spread_below_the_noise_floor_as_none():
    # as claims score a seed: 100 × the share right, the product rounded
    base = {s: 100.0 * (k / 400) for s, k in enumerate((205, 214, 222, 230, 239, 250))}
    noisy = {s: 100.0 * ((k + 4) / 400) for s, k in enumerate((205, 214, 222, 230, 239, 250))}
    assert len({noisy[s] - base[s] for s in base}) > 1  # the differences are not all the same float
    r = stats.across_seeds(base, noisy, n_resamples=200)
    assert r.p_ttest is None and r.untestable == "Δ +1.00 on every seed: no spread, so no t-test"
    zero = stats.across_seeds(base, {s: v + 1e-13 * s for s, v in base.items()}, n_resamples=200)
    assert zero.untestable is None and zero.p_ttest == 1.0 and zero.ci_low == zero.ci_high == 0.0
    real = stats.across_seeds(base, {s: v + 1e-6 * s for s, v in base.items()}, n_resamples=200)
    assert real.p_ttest is not None and real.untestable is None  # a millionth of a point is a spread
