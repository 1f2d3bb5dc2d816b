"""The guardrails as one registry (issue 56): each a small named function with its scope and a
docstring; `selection.select` and `claims.build` run the registry, so adding a check is one function
and one entry in `GUARDRAILS`, seen applied here."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.checks import registry
from analysis.checks.guardrails import GuardrailError
from analysis.checks.registry import GUARDRAILS, Guardrail, Pairing, Slots
from test_analysis import _preds, _write_tables
from test_analysis_checks import _build, _effect, _ids, _write
from test_analysis_checks import _preds as _pred_rows
from test_analysis_guardrails import _run


def _six_seeds(root) -> None:
    runs = []
    for s in range(6):
        a, b = _effect(seed=s)
        runs += [({"trial": f"b{s}", "variant": "base", "seed": s}, _pred_rows(_ids(400), a)),
                 ({"trial": f"g{s}", "variant": "gcn", "seed": s}, _pred_rows(_ids(400), b))]
    _write(root, runs)


def one_gpu_model(p: Pairing) -> list[str]:
    """Both arms trained on one GPU model (a probe: the tests' runs record none, so it always flags)."""
    return [f"{p.cell}: probe saw {len(p.pairs)} seed pairs"]


def test_a_guardrail_added_is_one_function_and_one_entry(tmp_path, monkeypatch):
    _six_seeds(tmp_path)
    before = _build(tmp_path).rows.row(0, named=True)["flags"]
    monkeypatch.setitem(GUARDRAILS, "one_gpu_model", Guardrail("arms", one_gpu_model))
    after = _build(tmp_path).rows.row(0, named=True)["flags"]
    assert after == [*before, "data.dataset=mawps, solver=gts: probe saw 6 seed pairs"]


def test_a_guardrail_that_refuses_stops_the_claim_and_one_of_the_slots_the_command(tmp_path, monkeypatch):
    _six_seeds(tmp_path)

    def never(p: Pairing) -> list[str]:
        """Refuses every claim (a probe)."""
        raise GuardrailError(f"{p.cell}: refused by the probe")

    monkeypatch.setitem(GUARDRAILS, "never", Guardrail("seed pair", never))
    with pytest.raises(GuardrailError, match="refused by the probe"):
        _build(tmp_path)
    monkeypatch.delitem(GUARDRAILS, "never")

    def slots_seen(s: Slots) -> list[str]:
        """Says how many trials its slots hold (a probe: a slot guardrail's flag is a note)."""
        return [f"{s.runs.height} trials in {len(set(s.runs['trial']))} slots"]

    monkeypatch.setitem(GUARDRAILS, "slots_seen", Guardrail("slot", slots_seen))
    assert "12 trials in 12 slots" in _build(tmp_path).notes


def test_the_torch_build_is_an_environment_guardrail_like_the_others(tmp_path, monkeypatch):
    p = _preds([f"mawps:{i}" for i in range(50)], np.arange(50) % 3 > 0)
    env = {"env.torch": "2.7.1+cu126", "env.cuda": "12.6", "env.device": "cuda:0", "env.gpu": "NVIDIA A10G"}
    _write_tables(tmp_path, "c", [_run("b0", "base", **env), _run("g0", "gcn", **{**env, "env.torch": "2.7.1+cpu"})],
                  {"b0": p, "g0": p})
    flagged = [f for f in _build(tmp_path).rows.row(0, named=True)["flags"] if f.startswith("environment")]
    assert flagged == ["environment differs (not refused: trials take the nodes that are free): env.torch: base "
                       "['2.7.1+cu126'] vs gcn ['2.7.1+cpu']"]
    assert GUARDRAILS["environment[env.torch]"].scope == "environment"
    # the registry is what runs it (a copy without it: deleting the entry and restoring it would move it last)
    monkeypatch.setattr(registry, "GUARDRAILS", {k: g for k, g in GUARDRAILS.items() if k != "environment[env.torch]"})
    assert not [f for f in _build(tmp_path).rows.row(0, named=True)["flags"] if f.startswith("environment")]


def test_every_guardrail_says_its_scope_and_what_it_checks():
    assert len(GUARDRAILS) >= 15 and {g.scope for g in GUARDRAILS.values()} == set(registry.SCOPES)
    assert all(g.about and g.about[0].isupper() for g in GUARDRAILS.values())

    def undocumented(p: Pairing) -> list[str]:
        return []

    with pytest.raises(ValueError, match="guardrail undocumented: its function needs a docstring"):
        Guardrail("arms", undocumented)
    with pytest.raises(ValueError, match="guardrail one_gpu_model: unknown scope 'cell'; valid: slot, run, arm"):
        Guardrail("cell", one_gpu_model)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"unknown scope\(s\) \['cell'\]"):
        registry.run(None, ("cell",))  # type: ignore[arg-type]
