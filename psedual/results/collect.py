"""Runs into the result tables: a sweep's trials with what their tests returned (`write_trials`;
`psedual.tune.evaluate` tests them), and finished run folders (`psedual results add`). Each row
is a `RunsRow` (`psedual.results.row`); nothing here imports Ray or runs a test.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from psedual.results import tables
from psedual.results.folder import RunFolder
from psedual.results.records import RunCost, RunInfo, Trial, values
from psedual.results.row import MetricsRow, RunsRow, Tested
from psedual.results.schema import RUNS_SCHEMA, arrow_table
from psedual.storage import DEFAULT_ROOT
from psedual.train.config import TrainConfig


def code_version() -> str:
    """`git describe` of the checkout when there is one; else $PSEDUAL_COMMIT (a copy of the source
    without .git, as bench/gpu_session.py runs it on a device machine, says so there); else the
    package version; else "unknown"."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], cwd=Path(__file__).parent,
                              capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        if os.environ.get("PSEDUAL_COMMIT"):
            return os.environ["PSEDUAL_COMMIT"]
        try:
            return version("psedual")
        except PackageNotFoundError:
            return "unknown"


def _runs_frame(rows: list[RunsRow]) -> pl.DataFrame:
    return pl.from_arrow(arrow_table([r.values() for r in rows], RUNS_SCHEMA, "the runs table"))


def _write(root: str, experiment: str, row: RunsRow, epochs: Sequence, predictions: Sequence) -> None:
    """One trial's rows of the three tables (its epochs and predictions as records)."""
    trial = row.trial.trial
    tables.write(root, "epochs", experiment, trial, [{"trial": trial, **values(e)} for e in epochs])
    tables.write(root, "predictions", experiment, trial, [{"trial": trial, **p} for p in predictions])
    tables.write(root, "runs", experiment, trial, [row.values()])


@dataclass(frozen=True)
class SweptTrial:
    """One trial of a sweep as the tables take it: how it ended, and its test, if it had one."""

    trial: Trial
    """Its id, status, error and the code that ran it."""
    config: TrainConfig
    """The config Tune gave it."""
    reported_epochs: int
    """The epoch of its last report (0 if none): its epochs done when it left no checkpoint to test."""
    tested: Tested | None
    """What testing its checkpoint returned; None if it left none."""

    def __post_init__(self) -> None:
        # the row's config is Tune's; the test read the checkpoint's: one run, or the row would lie
        if self.tested is not None and self.tested.config != self.config:
            raise ValueError(f"trial {self.trial.trial}: its checkpoint's config.json is not the config Tune gave it")

    def row(self) -> RunsRow:
        if self.tested is not None:
            return RunsRow(self.trial, self.tested.metrics())
        return RunsRow(self.trial, MetricsRow(RunInfo(self.config.variant), self.config.flat(),
                                              RunCost(self.reported_epochs, None)))


def write_trials(trials: Sequence[SweptTrial], root: str, experiment: str) -> pl.DataFrame:
    """Write `runs`, `epochs` and `predictions` for every trial (a trial never tested: its runs
    row alone); return the runs rows."""
    rows = []
    for t in trials:
        row = t.row()
        if t.tested is None:
            tables.write(root, "runs", experiment, t.trial.trial, [row.values()])
        else:
            _write(root, experiment, row, t.tested.epochs, [values(p) for p in t.tested.predictions])
        rows.append(row)
    return _runs_frame(rows)


@dataclass(frozen=True)
class AddConfig:
    """`psedual results add`: finished run folders into the result tables as one experiment's trials."""

    folders: tuple[str, ...]
    """Run folders of `psedual train` or `psedual llm` (trial id: the folder's name)."""
    experiment: str
    """Experiment name in the tables."""
    root: str = DEFAULT_ROOT
    """Results storage: a folder or a pyarrow URI."""

    def __post_init__(self) -> None:
        if not self.folders:
            raise ValueError("results add needs at least one run folder")
        if not self.experiment:
            raise ValueError("results add needs an --experiment name")


def add_run_folders(folders: list[str | Path], root: str, experiment: str) -> pl.DataFrame:
    """Write finished `psedual train` run folders (config.json, epochs/predictions/metrics
    Parquet) or `psedual llm` run folders (no epochs) into the result tables as trials of
    `experiment`, named by their folder names, so `psedual analyze` compares them like sweep
    trials. Nothing is re-evaluated: the tables hold what the run's own test evaluation wrote
    (an LLM run's replies stay in its folder: the predictions table holds the scored columns)."""
    names = [Path(f).name for f in folders]
    if len(set(names)) != len(names):
        raise ValueError(f"run folders must have distinct names (they become trial ids): {names}")
    version, rows = code_version(), []
    for folder in (RunFolder(Path(f)) for f in folders):
        folder.require_finished()
        row = RunsRow(Trial(folder.path.name, "completed", None, version), folder.metrics())
        _write(root, experiment, row, () if folder.is_llm() else folder.epochs(), folder.predictions())
        rows.append(row)
    return _runs_frame(rows)

