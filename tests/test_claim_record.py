"""A claim is one typed, frozen record (`analysis.tables.claim.Claim`, issue 56): the claims table
stores every field the verdict reads, so a stored claim read back is judged again to the same verdict;
the committed studies' claims are, and so are claims the verdict reads `untestable` and `trainable` of."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import crafted_claims as crafted
from analysis.claims import claims, targets, verdicts
from analysis.tables.claim import CLAIMS_SCHEMA, Claim, claims_of, frame
from claim_rows import claim_row
from test_analysis_checks import _build, _effect, _ids, _preds, _write

ROOT = Path(__file__).resolve().parents[1]
STUDIES = sorted(p.parent.parent for p in (ROOT / "docs").glob("*/results/claims"))
"""The committed studies whose claims tables are in docs/ (converged, converged_5fold, control)."""


def test_the_committed_claims_are_judged_again_to_their_verdicts():
    judged = []
    for study in STUDIES:
        for row in claims.load(str(study / "results")).iter_rows(named=True):
            judged.append((study.name, row["verdict"], targets.again(row)))  # the verdict, and its target's words
    assert len(judged) >= 9 and {s for s, _, _ in judged} >= {"converged", "converged_5fold", "control"}
    assert [(s, v) for s, v, _ in judged] == [(s, again) for s, _, again in judged]
    # the committed verdicts span the rule: a difference, an equivalence, and both kinds of undecided
    said = {v.split(" ")[0].rstrip(":") for _, v, _ in judged}
    assert said >= {"better", "worse", "equivalent", "undecided"}


def test_a_stored_untestable_claim_and_its_family_are_judged_again(tmp_path, capsys):
    # gru's claim is untestable (the same Δ on every seed): the verdict reads `untestable`, which the
    # claims table did not store before issue 56
    case = next(c for c in crafted.CASES if c.name == "52.4 a family with an untestable member")
    case.build(tmp_path)
    from analysis.cli import main as analyze
    assert analyze(["analyze", case.words[0], "--root", str(tmp_path),
                    *[w.format(root=tmp_path) for w in case.words[1:]], "--resamples", "200"]) == 0
    stored = claims_of(claims.load(str(tmp_path)))
    gru = next(c for c in stored if c.treatment_arm == "gru")
    assert gru.untestable and gru.verdict == f"untestable ({gru.untestable})"
    assert [targets.again(r) for r in claims.load(str(tmp_path)).iter_rows(named=True)] == [c.verdict for c in stored]


def test_a_stored_zero_shot_claim_keeps_its_one_seed_verdict(tmp_path):
    # one seed of zero-shot LLM runs is the method (trainable False): `better`; the same claim read as
    # trained arms would be `inconclusive (1 seed)`, so the table must say which it was
    n = 400
    a, b = _effect(seed=1)
    _write(tmp_path, [({"trial": "b0", "variant": "base", "llm.model": "m"}, _preds(_ids(n), a)),
                      ({"trial": "g0", "variant": "gcn", "llm.model": "m"}, _preds(_ids(n), b))])
    built = _build(tmp_path).rows
    claims.write(built, str(tmp_path), "llm")
    (claim,) = claims_of(claims.load(str(tmp_path)))
    assert claim.trainable is False and claim.verdict == "better" and verdicts.verdict(claim) == "better"
    assert verdicts.verdict(dataclasses.replace(claim, trainable=True)) == "inconclusive (1 seed)"


def test_the_claims_table_holds_every_field_and_reads_back_equal(tmp_path):
    # one column per field, no more, no fewer
    assert set(CLAIMS_SCHEMA) == {f.name for f in dataclasses.fields(Claim)}
    (claim,) = claims_of(claims.load(str(STUDIES[0] / "results")))[:1]
    path = claims.write(frame([claim]), str(tmp_path), "again")
    assert pl.read_parquet(path).schema == pl.Schema(CLAIMS_SCHEMA)
    assert claims_of(claims.load(str(tmp_path))) == [claim]


def test_an_older_table_without_the_new_columns_reads_with_their_defaults():
    old = claims.load(str(STUDIES[0] / "results")).drop("untestable", "trainable", "alpha")
    claim = claims_of(old)[0]
    assert (claim.untestable, claim.trainable, claim.alpha) == (None, True, 0.05)


def _claim(**change) -> Claim:
    return Claim.from_row(claim_row(**change))


def test_a_claim_is_judged_from_its_own_fields():
    assert verdicts.verdict(_claim()) == "better"
    # its own level, stored with it: at 0.0001 the p of 0.001 no longer agrees with the 95% CI
    assert verdicts.verdict(_claim(alpha=0.0001)) == "inconclusive (the 95% CI and paired_t_seeds disagree)"
    assert verdicts.verdict(_claim(n_seeds=3)) == "inconclusive (3 seeds)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        _claim().verdict = "better"  # type: ignore[misc]


@pytest.mark.parametrize("change, said", [
    ({"n_seeds": 5, "seeds": tuple(range(6))}, "n_seeds 5 with seeds [0, 1, 2, 3, 4, 5]"),
    ({"p": 1.5}, "p 1.5 is no probability"),
    ({"ci_low": 3.0}, "95% CI [3.0, 2.5] runs backwards"),
    ({"test": "welch"}, "test 'welch' (valid: mcnemar_exact, paired_t_seeds)"),
    ({"only_base": 3}, "only_base and only_treatment are given together"),
    ({"alpha": 0.0}, "alpha 0.0 is not in (0, 1)"),
])
def test_a_claim_refuses_fields_that_contradict_each_other(change, said):
    with pytest.raises(ValueError, match="claim mawps, gts, value, gcn vs base: ") as err:
        _claim(**change)
    assert said in str(err.value)


def test_a_row_missing_a_field_is_named():
    row = claim_row()
    del row["delta"]
    with pytest.raises(ValueError, match="a claim row lacks delta"):
        Claim.from_row(row)
    assert np.isclose(Claim.from_row(claim_row() | {"mde": 1.0}).delta, 2.0)  # power's columns aside
