"""The looks on record (issue 57): where a results root holds a sweep in rounds' looks table,
`psedual analyze` and the study report state its design and each look, and the seeds that finished
after a claim's decisive look, with the rule for them. The looks are crafted through the sweep's own
writer (`psedual.results.looks.write_looks`) from `analysis.stats.sequential.decide`, beside the
committed converged runs (10 seeds a claim: seeds after a decisive look at 6 are 6, 7, 8, 9)."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from analysis.cli import main as analyze
from analysis.stats import sequential as sq
from analysis.tables import looks
from psedual.results.looks import write_looks

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = ROOT / "docs/converged/results/claims/compare_converged_variant.parquet"
DESIGN = sq.SequentialDesign(looks=(6, 8, 10))
GCN = [3.1, 2.6, 3.4, 2.9, 3.0, 2.8]  # decided at look 1: better
GRU = [0.5, -1.2, 1.9, -0.4, 0.3, 1.1, -2.0, 0.8, 0.2, -0.6]  # decided at look 3: smaller than +0.8
NAMES = {"gcn": "PseDual-GCN vs base (psedual.fusion scheduled)", "gru": "PseDual-GRU vs base (psedual.fusion scheduled)"}


def _rows() -> list[dict]:
    extra = {"design": DESIGN.describe(), "not_seeds": 0, "not_seeds_list": ""}
    out = [{**sq.decide(DESIGN, GCN, 0, 0.45, 0.9, "the paper's").row(NAMES["gcn"]), "planned_look": 1,
            "planned_seeds": 6, **extra}]
    for k, n in enumerate(DESIGN.looks):
        lost = {"not_seeds": 1, "not_seeds_list": "7"} if k == 2 else {}
        out.append({**sq.decide(DESIGN, GRU[:n], k, 0.45, 0.8, "the paper's").row(NAMES["gru"]), "planned_look": k + 1,
                    "planned_seeds": n, **extra, **lost})
    return out


@pytest.fixture()
def root(tmp_path) -> Path:
    write_looks(str(tmp_path), "converged", _rows())
    return tmp_path


def test_a_root_without_looks_has_none_and_experiments_are_kept_apart(root, tmp_path_factory):
    assert looks.present(str(tmp_path_factory.mktemp("bare"))) is None
    assert looks.present(str(root), ["other"]) is None
    assert looks.present(str(root), ["converged"]).height == 4


def test_the_section_states_the_design_each_look_and_the_seeds_after_the_decisive_look(root):
    found = looks.present(str(root))
    text = looks.section(found, pl.read_parquet(CLAIMS))
    assert ("Sweep in rounds `converged`: its looks table (4 looks). Design: O'Brien–Fleming spending, two-sided "
            "α 0.05 (one-sided α 0.05 a TOST half and for the target); looks at 6, 8, 10 seeds; stops on difference, "
            "equivalence, target.") in text
    gcn = sq.decide(DESIGN, GCN, 0, 0.45, 0.9, "the paper's")
    assert (f"| {NAMES['gcn']} | 1 of 3 | 6 | {gcn.delta:+.2f} | [{gcn.ci[0]:+.2f}, {gcn.ci[1]:+.2f}] | "
            f"{gcn.statistic:+.2f} | {gcn.boundary:.3f} | {gcn.spent_alpha:.4f} | ") in text
    assert "| ±0.45 | +0.9 | better at look 1 of 3 (6 seeds; O'Brien–Fleming spending, two-sided α 0.05) | – |" in text
    assert "smaller than the paper's +0.8 points of accuracy at look 3 of 3 (10 seeds;" in text
    assert "| 1 (seed 7) |" in text  # a seed that failed is no seed, and said
    assert (f"- {NAMES['gcn']}: 4 seeds finished after its decisive look (1 of 3, 6 seeds): 6, 7, 8, 9; not judged "
            "(the rule below)") in text
    assert f"- {NAMES['gru']}: no seed finished after its decisive look (3 of 3, 10 seeds)" in text
    assert text.endswith(looks.RULE) and "Seeds that finished after it" in looks.RULE


def test_a_claim_no_row_matches_is_said_not_guessed(root):
    text = looks.section(looks.present(str(root)), pl.read_parquet(CLAIMS).head(1))  # the GRU row only
    assert f"- {NAMES['gcn']}: no one claim row of these runs is this claim" in text


@pytest.mark.slow
def test_analyze_compare_prints_the_looks_and_the_claims_margin(tmp_path, capsys):
    """`analyze compare` on the converged runs with looks beside them: the margin line, the looks, and
    the exploratory pair's TOST at the claims' margin (±0.45, not ±1)."""
    shutil.copytree(ROOT / "docs/converged/results", tmp_path / "results")
    write_looks(str(tmp_path / "results"), "converged", _rows())
    assert analyze(["analyze", "compare", "--root", str(tmp_path / "results"), "--experiment+", "converged",
                    "--treatment+", "gru", "--treatment+", "gcn", "--where+", "psedual.fusion=null|scheduled",
                    "--where+", "psedual.epsilon_schedule=null|horizon", "--margin", "0.45", "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "\nmargin: ±0.45 points of accuracy (as --margin gives it)" in out
    assert "Looks on record (a sweep in rounds: the study's verdicts are these):" in out
    assert f"- {NAMES['gcn']}: 4 seeds finished after its decisive look (1 of 3, 6 seeds): 6, 7, 8, 9" in out
    assert "not shown smaller than the paper's +0.8 points of accuracy (one-sided t at the target" in out
    extra = pl.read_parquet(tmp_path / "results/exploratory/compare_converged.parquet")
    assert extra["margin"].to_list() == [0.45] and "| 0.234 at ±1 |" not in out


@pytest.mark.slow
def test_the_study_report_has_a_looks_section(tmp_path):
    """`psedual analyze study` on the converged runs with looks beside them: the section after the
    claims, the margin line under the claims, and the rule for seeds after a decisive look."""
    import subprocess
    import sys

    shutil.copytree(ROOT / "docs/converged/results", tmp_path / "results")
    write_looks(str(tmp_path / "results"), "converged", _rows())
    done = subprocess.run([sys.executable, "-m", "psedual.cli", "analyze", "study", "--space",
                           str(ROOT / "search_spaces/converged.yaml"), "--experiment", "converged", "--root",
                           str(tmp_path / "results"), "--out", str(tmp_path / "out"), "--resamples", "200"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    report = (tmp_path / "out/report.md").read_text(encoding="utf-8")
    claims, section = report.index("## Claims (planned)"), report.index("## Looks (a sweep in rounds: the study's verdicts)")
    assert claims < section < report.index("## Exploratory")
    assert "\nmargin: ±1 points of accuracy (its sweep file's comparisons'); a margin at or above" in report
    assert f"- {NAMES['gcn']}: 4 seeds finished after its decisive look (1 of 3, 6 seeds): 6, 7, 8, 9" in report
    assert looks.RULE in report and "looks at 6, 8, 10 seeds" in report
