"""`psedual analyze study` and `psedual analyze leakage` (issue 56): the commands that write the
committed study reports and the leakage split, run as a user runs them."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from analysis.cli import main as analyze
from analysis.paper_report import code_commit

ROOT = Path(__file__).resolve().parents[1]
STUDY = "converged_5fold"


def _psedual(words: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "psedual.cli", *words], cwd=cwd, capture_output=True, text=True,
                          timeout=900)


def _command(report: str) -> list[str]:
    """The words of a report's own `- command:` line, after `psedual`."""
    line = next(x for x in report.splitlines() if x.startswith("- command: `"))
    words = shlex.split(line.removeprefix("- command: `").removesuffix("`"))
    assert words[:3] == ["psedual", "analyze", "study"], words[:3]
    return words[1:]


@pytest.mark.slow
def test_a_committed_study_report_regenerates_from_its_own_command_line(tmp_path):
    """The report's command, run as written (in a copy of its tables: the command writes its claims
    beside them), writes the report again: every line the same but when and at which commit."""
    committed = (ROOT / "docs" / STUDY / "report.md").read_text(encoding="utf-8")
    shutil.copytree(ROOT / "docs" / STUDY / "results", tmp_path / "docs" / STUDY / "results")
    (tmp_path / "search_spaces").symlink_to(ROOT / "search_spaces")
    done = _psedual(_command(committed), tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"report: docs/{STUDY}/report.md" in done.stdout.splitlines()
    again = (tmp_path / "docs" / STUDY / "report.md").read_text(encoding="utf-8")
    differ = [(a, b) for a, b in zip(committed.splitlines(), again.splitlines()) if a != b]
    assert len(committed.splitlines()) == len(again.splitlines())
    assert [a.split(" UTC")[0][:10] for a, _ in differ] == ["- written "], differ
    for png in ("forest.png", "learning.png"):
        assert (tmp_path / "docs" / STUDY / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_study_command_says_where_it_runs_without_the_sweep_loader(tmp_path, capsys):
    """analysis never imports the sweep code: `python -m analysis analyze study` has no sweep
    loader and says which command has, in one line."""
    assert analyze(["analyze", "study", "--space", "search_spaces/converged.yaml", "--experiment", "converged",
                    "--root", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == ("psedual analyze: error: analyze study reads its sweep file with "
                                               "psedual's sweep loader: run it as `psedual analyze study ...`")
    assert not (tmp_path / "out").exists()


def test_the_study_command_refuses_a_sweep_file_that_plans_nothing(tmp_path):
    """A reproduction (the solver alone) plans no comparison: said, no empty report written."""
    done = _psedual(["analyze", "study", "--space", "search_spaces/gts_mawps_5fold.yaml", "--experiment", "gts_5fold",
                     "--root", "docs/gts_5fold/results", "--out", str(tmp_path / "out")], ROOT)
    assert done.returncode == 2
    assert done.stderr.strip() == ("psedual analyze: error: search_spaces/gts_mawps_5fold.yaml plans no comparison "
                                   "for experiment gts_5fold: nothing to report")
    assert not (tmp_path / "out" / "report.md").exists()


def test_the_commit_a_report_names_falls_back_outside_a_checkout(monkeypatch):
    """Without git (a copy of the source, a device machine) the report names the package's version."""
    assert code_commit() != "" and not code_commit().startswith("package version")
    monkeypatch.setenv("PATH", "")
    assert code_commit().startswith("package version ")


def test_the_leakage_split_stops_when_the_data_changed_since_the_run(tmp_path):
    """A run's repeated test problems are rebuilt from its data settings: a count other than its
    runs table's is refused in one line naming the run, not split on other problems."""
    root = tmp_path / "results"
    shutil.copytree(ROOT / "docs" / "gts_5fold" / "results", root)
    path = next((root / "runs" / "experiment=gts_5fold").glob("fold0*.parquet"))
    runs = pl.read_parquet(path)
    assert runs["data_test_leaked"].to_list() == [67]
    runs.with_columns(pl.lit(68).cast(runs["data_test_leaked"].dtype).alias("data_test_leaked")).write_parquet(path)
    done = _psedual(["analyze", "leakage", "--root", str(root), "--experiment", "gts_5fold"], ROOT)
    assert done.returncode == 2, done.stdout[-2000:]
    assert done.stderr.strip() == ("psedual analyze: error: run fold0: 67 repeated test problems rebuilt, its "
                                   "table says 68: the data changed since it ran")
