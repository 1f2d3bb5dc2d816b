"""After a sweep: evaluate each trial's chosen checkpoint on test once, and write the tables."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from psedual.results import tables
from psedual.storage import DEFAULT_ROOT
from psedual.train import records
from psedual.train.config import TrainConfig
from psedual.train.outcome import TrialOutcome
from psedual.train.resources import Resources
from psedual.train.rows import ENV_PREFIX, DataRecord, Environment, RunResult, Trial
from psedual.train.trainer import test_run


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


def _runs_frame(rows: list[dict]) -> pl.DataFrame:
    return pl.from_arrow(records.arrow_table(rows, records.RUNS_SCHEMA, "the runs table"))


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
    for folder in map(Path, folders):
        saved = json.loads((folder / "config.json").read_text()) if (folder / "config.json").is_file() else {}
        missing = [n for n in ("config.json", "predictions.parquet", "metrics.parquet", "epochs.parquet")
                   if not (folder / n).is_file() and not ("llm" in saved and n == "epochs.parquet")]
        if missing:
            raise FileNotFoundError(f"{folder}: not a finished run folder (missing {', '.join(missing)})")
        metrics, = records.read(folder / "metrics.parquet", records.METRICS_SCHEMA)
        trial = folder.name
        epochs = []
        if "llm" not in saved:  # a trained run's epochs, config and arm (older metrics lack the arm)
            epochs = records.read(folder / "epochs.parquet", records.EPOCHS_SCHEMA)
            config = TrainConfig.from_dict(saved)
            metrics = {**metrics, **config.flat(), "variant": config.variant}
        row = {**metrics, **records.values(Trial(trial, "completed", None, version)),
               "epochs_done": len(epochs)}
        tables.write(root, "epochs", experiment, trial, [{"trial": trial, **e} for e in epochs])
        tables.write(root, "predictions", experiment, trial,
                     [{"trial": trial, **r} for r in records.read(folder / "predictions.parquet",
                                                                  records.PREDICTIONS_SCHEMA)])
        tables.write(root, "runs", experiment, trial, [row])
        rows.append(row)
    return _runs_frame(rows)


TESTED = ("test_seconds", *(f.name for f in records.columns(DataRecord)),
          *(f.name for f in records.columns(Environment, ENV_PREFIX)))
"""What the runs table takes from a tested checkpoint's metrics besides the result (the
environment is where the trial trained, from its checkpoint's env.json, not where it was tested)."""


@dataclass
class Tested:
    """What testing one trial's checkpoint gave: the result, and the tables' rows."""

    result: RunResult
    counts: dict
    """`TESTED`: the test's time, the split sizes, the data identity and where it trained."""
    epochs: list[dict]
    predictions: list[dict]


def evaluate_checkpoint(checkpoint) -> Tested:
    """Evaluate a trial's checkpoint (which holds `best.pt`) on test once, on the device its
    config names (`auto`: the GPU of the Ray task that runs this, if it has one)."""
    with tempfile.TemporaryDirectory() as d:
        checkpoint.to_directory(d)
        result = test_run(d)
        metrics, = records.read(Path(d) / "metrics.parquet", records.METRICS_SCHEMA)
        # the checkpoint may be older than the last report; its history is what it holds
        return Tested(result, {k: metrics[k] for k in TESTED},
                      records.read(Path(d) / "epochs.parquet", records.EPOCHS_SCHEMA),
                      records.read(Path(d) / "predictions.parquet", records.PREDICTIONS_SCHEMA))


def evaluate_trials(outcomes: list[TrialOutcome], resources: Resources | None = None) -> dict[str, Tested]:
    """Test every trial that left a checkpoint. With `resources` (and Ray running, as after a
    sweep) each test is a Ray task holding what one of the trial's workers held (its CPUs, its
    GPU), so the tests run side by side across the cluster; without, one after another here."""
    todo = [o for o in outcomes if o.checkpoint is not None]
    if resources is None or not todo:
        return {o.trial: evaluate_checkpoint(o.checkpoint) for o in todo}
    import ray

    task = ray.remote(num_cpus=resources.cpus_per_worker, num_gpus=resources.gpus_per_worker,
                      max_retries=0)(evaluate_checkpoint)
    return dict(zip((o.trial for o in todo), ray.get([task.remote(o.checkpoint) for o in todo])))


def collect(outcomes: list[TrialOutcome], root: str, experiment: str,
            resources: Resources | None = None) -> pl.DataFrame:
    """Test each trial's checkpoint (see `evaluate_trials`: in parallel Ray tasks with `resources`),
    write `runs`, `epochs` and `predictions` for every trial; return the runs rows."""
    version = code_version()
    tested = evaluate_trials(outcomes, resources)
    runs = []
    for o in outcomes:
        config = TrainConfig.from_flat(o.flat)
        row = {**records.values(Trial(o.trial, o.status, o.error, version)), "variant": config.variant,
               **config.flat(), "epochs_done": o.metrics.get("epoch", 0)}
        if o.trial in tested:
            t = tested[o.trial]
            row.update({**records.values(t.result), **t.counts})
            tables.write(root, "epochs", experiment, o.trial, [{"trial": o.trial, **e} for e in t.epochs])
            tables.write(root, "predictions", experiment, o.trial, [{"trial": o.trial, **p} for p in t.predictions])
        tables.write(root, "runs", experiment, o.trial, [row])
        runs.append(row)
    return _runs_frame(runs)
