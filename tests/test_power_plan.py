"""A grid sweep's plan (`psedual tune --space FILE --plan`): the spread an earlier experiment
measured, the Δ the sweep's seeds detect and the seeds a target needs, checked against
statsmodels; `seeds_for` resolved and capped; `compare` entries checked at load."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.power import TTestPower

from analysis.stats import equivalence
from psedual import power_plan
from psedual.cli import main
from psedual.comparisons import command_line, compare_options
from psedual.tune.space import SpecError, load_spec
from test_analysis import _preds, _write_tables

SWEEP = """\
# psedual tune --space {path} --plan   (a test's sweep)
name: planned
mode: grid
fixed: {{solver: gts, data.dataset: mawps, data.fold: 0, epochs: 1}}
grid:
  variant: [base, gcn]
{seeds}
"""


def _sweep(tmp_path, seeds="  seed: [0, 1, 2, 3, 4, 5]", extra=""):
    path = tmp_path / "planned.yaml"
    path.write_text(SWEEP.format(path=path, seeds=seeds) + extra)
    return path


def _earlier(root, accs: dict[str, list[float]]) -> None:
    """An earlier experiment `study` whose runs have these test value accuracies per seed (%)."""
    runs, preds = [], {}
    for variant, values in accs.items():
        for seed, acc in enumerate(values):
            trial = f"{variant}-s{seed}"
            right = int(round(acc))  # 100 examples: `acc` of them right
            runs.append({"trial": trial, "variant": variant, "solver": "gts", "seed": seed})
            preds[trial] = _preds([f"mawps:{i}" for i in range(100)], [i < right for i in range(100)])
    _write_tables(root, "study", runs, preds)


BASE = [60, 62, 61, 65, 63]
GCN = [61, 61, 64, 66, 66]  # per-seed Δ +1, −1, +3, +1, +3


def test_the_observed_spread_is_the_sd_of_the_per_seed_delta(tmp_path):
    _earlier(tmp_path, {"base": BASE, "gcn": GCN})
    got = power_plan.observed(str(tmp_path), "study", [], "variant", "base", "gcn")
    assert got.sd == pytest.approx(np.std([1, -1, 3, 1, 3], ddof=1)) and got.source == "experiment study, 5 paired seeds"
    assert power_plan.observed(str(tmp_path), "study", [], "variant", "base", "gru") is None
    assert power_plan.observed(str(tmp_path), "study", ["solver=dns"], "variant", "base", "gcn") is None


def test_the_plan_against_statsmodels(tmp_path, capsys):
    _earlier(tmp_path, {"base": BASE, "gcn": GCN})
    sd = np.std([1, -1, 3, 1, 3], ddof=1)
    assert main(["tune", "--space", str(_sweep(tmp_path)), "--plan", "true", "--plan_from", "study",
                 "--storage", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    d = TTestPower().solve_power(effect_size=None, nobs=6, alpha=0.05, power=0.8, alternative="two-sided")
    n = TTestPower().solve_power(effect_size=0.9 / sd, nobs=None, alpha=0.05, power=0.8, alternative="two-sided")
    assert f"detects |Δ| ≥ {d * sd:.2f} points" in out
    assert f"about {math.ceil(n)} seeds would detect the paper's +0.9" in out  # GTS-GCN on MAWPS, Table 1
    assert "plan: " in out and "4 trials" not in out and "12 trials, 6 seeds" in out


def test_seeds_for_resolves_caps_and_says_so(tmp_path, capsys):
    path = _sweep(tmp_path, seeds="seeds_for: {delta: 2.0, max: 12}")
    assert main(["tune", "--space", str(path), "--plan", "true", "--plan_sd", "2.0"]) == 0
    out = capsys.readouterr().out
    n = math.ceil(TTestPower().solve_power(effect_size=1.0, nobs=None, alpha=0.05, power=0.8, alternative="two-sided"))
    assert f"seeds_for: {n} seeds detect Δ 2 at the largest sd of the per-seed Δ, 2.00 (--plan_sd)" in out
    assert f"{2 * n} trials, {n} seeds" in out
    assert main(["tune", "--space", str(path), "--plan", "true", "--plan_sd", "4.0"]) == 0
    assert "capped at max 12" in capsys.readouterr().out
    # no spread anywhere: refused before anything runs, naming the ways to give one
    assert main(["tune", "--space", str(path), "--plan", "true"]) == 2
    assert "seeds_for needs the spread of the per-seed Δ" in capsys.readouterr().err


@pytest.mark.parametrize("extra, said", [
    ("compare:\n  - {arm: variant, base: base, treatments: [gru]}\n", "variant ['gru'] never trained by this sweep"),
    ("compare:\n  - {arm: variant, where: {psedual.nope: 1}}\n", "unknown key 'psedual.nope'"),
    ("compare:\n  - {arm: variant, base: gcn, treatments: [gcn]}\n", "must exclude base 'gcn'"),
    ("compare:\n  - {arms: variant}\n", "compare[0]"),
    ("seeds_for: {delta: 1.0}\n", "give grid.seed or seeds_for, not both"),
    ("seeds_for: {delta: 0}\n", "seeds_for: delta must be a nonzero"),
])
def test_bad_comparisons_and_seeds_for_are_refused_at_load(tmp_path, extra, said):
    with pytest.raises(SpecError, match="planned.yaml") as err:
        load_spec(_sweep(tmp_path, extra=extra))
    assert said in str(err.value)


def test_a_paper_file_refuses_the_sweep_plans_options(capsys):
    assert main(["tune", "--space", "search_spaces/paper.yaml", "--profile", "small", "--plan", "true",
                 "--plan_sd", "2"]) == 2
    assert "is a paper file: plan_from and plan_sd plan a grid sweep file's comparisons" in capsys.readouterr().err


def test_each_planned_comparison_is_named_by_its_where_and_decided_either_way(capsys):
    """The control study's three `variant` comparisons differ only in their `where`: each line says
    which it is, and the seeds that decide it either way: significant if Δ is the target, equivalent
    within the margin (TOST) if Δ is 0."""
    assert main(["tune", "--space", "search_spaces/reexamination_control.yaml", "--plan", "true",
                 "--plan_sd", "1.2"]) == 0
    out = capsys.readouterr().out
    lines = [x for x in out.splitlines() if x.startswith("  PseDual-GCN vs base (")]
    assert [x.split(":")[0].strip() for x in lines] == [
        "PseDual-GCN vs base (where psedual.control=none, psedual.fusion=scheduled)",
        "PseDual-GCN vs base (where psedual.control=other_problem)",
        "PseDual-GCN vs base (where psedual.control=no_expression)"]
    significant = math.ceil(TTestPower().solve_power(effect_size=0.9 / 1.2, nobs=None, alpha=0.05, power=0.8))
    equivalent = equivalence.tost_n(0.0, 1.2, 1.0, 0.05)
    assert equivalent == 14 and equivalence.tost_power(0.0, 1.2, 13, 1.0, 0.05) < 0.8  # the fewest
    assert all(f"decided either way by {max(significant, equivalent)} seeds (at 0.05: {significant} for the paper's "
               f"+0.9, {equivalent} for equivalence within ±1 if Δ is 0)" in x for x in lines)


def test_a_compare_entry_s_margin_reaches_the_plan_and_the_job_s_analyze(tmp_path, capsys):
    extra = "compare:\n  - {arm: variant, base: base, treatments: [gcn], margin: 0.5}\n"
    path = _sweep(tmp_path, extra=extra)
    assert main(["tune", "--space", str(path), "--plan", "true", "--plan_sd", "1.0"]) == 0
    assert f"{equivalence.tost_n(0.0, 1.0, 0.5, 0.05)} for equivalence within ±0.5 if Δ is 0" in capsys.readouterr().out
    options, = compare_options(load_spec(path), ["base", "gcn"], "results", "planned")
    assert options.margin == 0.5  # what the job's analysis runs with, and the command it prints
    argv = command_line(options).split()
    assert argv[argv.index("--margin") + 1] == "0.5"
    with pytest.raises(SpecError, match="margin: expected a positive number"):
        load_spec(_sweep(tmp_path, extra=extra.replace("0.5", "-1")))
