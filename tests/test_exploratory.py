"""Every unplanned pair of arms, seen and not over-claimed (issue 48): on the committed converged
study's tables, the teacher-forcing signal nobody planned (+1.01, p 0.008) is shown, adjusted over
all pairs, with no verdict; and the study report carries it, its forest plot and small multiples."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from analysis.claims import exploratory
from analysis.cli import main as analyze
from analysis.tables import read
from analysis.tables.text import p_value

ROOT = Path(__file__).resolve().parents[1]
CONVERGED = ROOT / "docs" / "converged" / "results"


def _linked(tmp_path: Path) -> Path:
    """The committed tables under a root of this test's own (claims are written beside them)."""
    root = tmp_path / "results"
    for table in ("runs", "epochs", "predictions"):
        (root / table).mkdir(parents=True)
        for part in (CONVERGED / table).iterdir():
            (root / table / part.name).symlink_to(part)
    return root


def _arm(runs: pl.DataFrame, name: str, **where) -> exploratory.Arm:
    mine = runs
    for k, v in where.items():
        mine = mine.filter(pl.col(k).eq_missing(v))
    return exploratory.Arm(name, frozenset(mine["experiment"] + "/" + mine["trial"]))


def _per_seed(runs: pl.DataFrame, arm: exploratory.Arm) -> np.ndarray:
    mine = runs.filter((pl.col("experiment") + "/" + pl.col("trial")).is_in(list(arm.trials))).sort("seed")
    return 100 * mine["test_value_acc"].to_numpy()


def test_teacher_forcing_vs_base_is_shown_adjusted_over_all_pairs():
    runs = read.scan(str(CONVERGED), "runs", ["converged"]).collect()
    base = _arm(runs, "base", variant="base")
    tf = _arm(runs, "GCN teacher forcing", variant="gcn", **{"psedual.fusion": "teacher_forcing"})
    rows = exploratory.pair(runs, read.scan(str(CONVERGED), "epochs"), read.scan(str(CONVERGED), "predictions"),
                            base, tf, ("data.dataset", "solver"), 200, 0)
    r = rows.row(0, named=True)
    a, b = _per_seed(runs, base), _per_seed(runs, tf)
    assert r["delta"] == pytest.approx((b - a).mean()) and round(r["delta"], 2) == 1.01
    assert r["p"] == pytest.approx(sps.ttest_rel(b, a).pvalue) and round(r["p"], 3) == 0.008
    assert (r["comparison"], r["verdict"], r["arm"]) == ("GCN teacher forcing vs base", exploratory.VERDICT, "variant")
    # with nine other pairs' p's, Holm (statsmodels') over all ten
    others = [0.877, 0.0676, 0.269, 0.373, 0.271, 0.0698, 0.0228, 0.229, 0.152]
    adjusted = exploratory.adjust_all(others, rows)["p_all"][0]
    assert adjusted == pytest.approx(multipletests([*others, r["p"]], method="holm")[1][-1])
    assert adjusted > 0.05 > r["p"]  # one of ten looks: not a finding


def test_unplanned_pairs_are_the_pairs_no_claim_made():
    arms = [exploratory.Arm(n, frozenset({n})) for n in "abcde"]
    planned = {frozenset((frozenset({"a"}), frozenset({"b"}))), frozenset((frozenset({"d"}), frozenset({"c"})))}
    got = [(x.name, y.name) for x, y in exploratory.unplanned(arms, planned)]
    assert len(got) == 10 - 2 and ("a", "b") not in got and ("c", "d") not in got and got[0] == ("a", "c")
    with pytest.raises(ValueError, match="needs a name and runs"):
        exploratory.Arm("x", frozenset())


def test_compare_prints_its_unplanned_pair(tmp_path, capsys):
    where = ["psedual.fusion=null|scheduled", "psedual.epsilon_schedule=null|horizon"]
    assert analyze(["analyze", "compare", "--root", str(_linked(tmp_path)), "--experiment", "converged", "--treatment",
                    "[gru, gcn]", *(x for w in where for x in ("--where+", w)), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "Exploratory: each pair of treatments no comparison planned (no verdict; p adjusted by holm over all 3 " \
           "pairs" in out
    line = next(x for x in out.splitlines() if "PseDual-GCN vs PseDual-GRU" in x)
    assert "| +0.73 |" in line and "| 0.0698 |" in line and "variant, psedual.expression_encoder" in line
    # written in a table of its own, marked so; the claims folder keeps one shape, so a glob over it reads
    path = tmp_path / "results" / "exploratory" / "compare_converged.parquet"
    assert f"note: 1 exploratory row written to {path}" in out
    mine = pl.read_parquet(path).row(0, named=True)
    assert (mine["verdict"], mine["treatment_arm"], mine["base_arm"]) == (exploratory.VERDICT, "gcn", "gru")
    assert mine["family"] == "compare_converged"
    assert round(mine["delta"], 2) == 0.73 and round(mine["p"], 4) == 0.0698
    assert mine["p_all"] > mine["p"] and f"| {p_value(mine['p_all'])} |" in line  # as printed
    stored = pl.read_parquet(tmp_path / "results" / "claims" / "*.parquet")
    assert stored.height == 2 and exploratory.VERDICT not in stored["verdict"].to_list()


def test_the_study_report_shows_decisions_the_exploratory_signal_and_its_figures(tmp_path):
    root = _linked(tmp_path)
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "psedual.cli", "analyze", "study", "--space",
                           "search_spaces/converged.yaml", "--experiment", "converged", "--root", str(root), "--out",
                           str(out), "--resamples", "200"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    text = (out / "report.md").read_text()
    assert "not significant" not in text
    assert text.count("equivalent within ±1") == 2 and text.count("| undecided: about ") == 2
    assert "| PseDual-GCN, teacher forcing vs base | 10 | 84.46 ± 1.15 | 85.47 ± 0.62 | +1.01 | [+0.34, +1.68] | " \
           "0.00778 | 0.0778 |" in text
    assert "| 0.904 **near teacher forcing** |" in text  # the arm, and the claim's flag
    assert "near teacher forcing: psedual.epsilon_schedule=epoch is scheduled fusion but its ε ends at 0.904" in text
    for png in ("forest.png", "learning.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"]({png})" in text


def test_the_study_report_reads_any_grid_study(tmp_path):
    """The control study's sweep file (5 arms, three `variant` comparisons that differ only in their
    `where`) on crafted tables: every arm named by what sets it apart, every unplanned pair shown."""
    from test_analysis_checks import _ids, _pairs, _preds, _write

    rng = np.random.default_rng(5)
    arms = {"base": {"variant": "base"}}
    for control, fusion in (("none", "scheduled"), ("other_problem", "scheduled"), ("no_expression", "scheduled"),
                            ("none", "teacher_forcing")):
        arms[f"{control}-{fusion}"] = {"variant": "gcn", "psedual.control": control, "psedual.fusion": fusion,
                                       "psedual.epsilon_schedule": "horizon",
                                       "final_epsilon": 1.0 if fusion == "teacher_forcing" else 0.5}
    runs = []
    for seed in range(6):
        for i, (name, config) in enumerate(arms.items()):
            right = _pairs(rng, 200, 0.02 * i, 0.05)[1] | (np.arange(200) < 100 + seed)  # each seed its own runs
            runs.append(({"trial": f"{name}-s{seed}", "seed": seed, "train_seconds": 10.0, **config},
                         _preds(_ids(200), right)))
    root = tmp_path / "results"
    _write(root, runs, experiment="control")
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "psedual.cli", "analyze", "study", "--space",
                           "search_spaces/reexamination_control.yaml", "--experiment", "control", "--root", str(root),
                           "--out", str(out), "--resamples", "200"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    text = (out / "report.md").read_text()
    # a control's name says it is one (issue 60, class 1)
    for name in ("| base |", "| PseDual-GCN |", "| PseDual-GCN, control: another problem's expression |",
                 "| PseDual-GCN, control: no expression |", "| PseDual-GCN, teacher forcing |"):
        assert name in text, name
    exploratory_rows = [x for x in text.split("## Exploratory")[1].split("![forest")[0].splitlines()
                        if x.startswith("| PseDual-GCN")]
    assert len(exploratory_rows) == 10 - 5  # ten pairs of five arms, five of them planned
    assert "over all 10 pairs of arms" in text and "not significant" not in text
    assert pl.read_parquet(root / "exploratory" / "control.parquet").height == 5  # in a table of their own
    assert pl.read_parquet(root / "claims" / "*.parquet").height == 5  # the planned claims, one shape


def test_an_arm_s_final_epsilon_says_what_its_infiller_read():
    """ε mixes the gold and predicted expressions' keys: an arm that reads no expression has none to
    report (it read 0.500 before, like scheduled fusion), teacher forcing is 1 by definition."""
    from analysis.checks import arms

    def runs(**cols):
        return pl.DataFrame({"final_epsilon": [0.5, 0.5], **{k: [v, v] for k, v in cols.items()}})

    assert arms.final_epsilon(runs(**{"psedual.fusion": "scheduled", "psedual.control": "none"})) == "0.500"
    assert arms.final_epsilon(runs(**{"psedual.fusion": "scheduled", "psedual.control": "no_expression"})) == \
        "– (reads no expression)"
    assert arms.final_epsilon(runs(**{"psedual.fusion": "teacher_forcing"})) == "1 (teacher forcing)"


def test_the_study_report_pools_each_seed_s_folds(tmp_path):
    """converged_5fold.yaml (issue 49): 5 folds x 3 seeds per arm. The arms table gives each seed's
    accuracy over its five folds' test problems (not 15 runs' mean and sd), and each claim its
    per-fold figures beside the pooled claim."""
    from test_analysis_checks import _preds, _write

    runs = []
    for seed in range(3):
        for fold in range(5):
            n = 100 + 20 * fold  # folds of different sizes: pooled is not the folds' mean
            for variant, right in (("base", 60 + seed + fold), ("gcn", 62 + seed + 2 * fold)):
                runs.append(({"trial": f"{variant}-s{seed}-f{fold}", "variant": variant, "seed": seed,
                              "data.fold": fold, "train_seconds": 10.0, "final_epsilon": None if variant == "base"
                              else 0.5, "psedual.fusion": None if variant == "base" else "scheduled"},
                             _preds([f"mawps:{fold}-{i}" for i in range(n)], np.arange(n) < right)))
    root = tmp_path / "results"
    _write(root, runs, experiment="converged_5fold")
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "psedual.cli", "analyze", "study", "--space",
                           "search_spaces/converged_5fold.yaml", "--experiment", "converged_5fold", "--root", str(root),
                           "--out", str(out), "--resamples", "200"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    text = (out / "report.md").read_text()
    sizes = [100 + 20 * f for f in range(5)]
    base = [100 * sum(60 + s + f for f in range(5)) / sum(sizes) for s in range(3)]
    assert f"| base | base | 3 × 5 folds | {np.mean(base):.2f} ± {np.std(base, ddof=1):.2f} |" in text, text[:3000]
    folds = ", ".join(f"fold {f}: {100 * (61 + f) / n:.2f} → {100 * (63 + 2 * f) / n:.2f}"
                      for f, n in enumerate(sizes))
    assert f"- PseDual-GCN vs base: {folds}" in text, text
