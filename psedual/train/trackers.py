"""Experiment trackers: which a sweep file's `loggers:` and `psedual train --loggers` may name, and
how a single run logs to them through their own libraries (a sweep uses Ray's callbacks:
psedual/tune/trackers.py). The trainer knows none of them: a run's `on_epoch` hook feeds them.

MLflow's store is `$MLFLOW_TRACKING_URI` (a tracking server) when set, else MLflow's own SQLite
store in the results root, `<root>/mlflow.db`: it works offline and needs no server. (MLflow 3's
file store, `./mlruns`, is in maintenance mode and refuses to open without
MLFLOW_ALLOW_FILE_STORE; SQLite is MLflow's default local store now.) With that local store the
artefacts go under the results root too (`<root>/mlartifacts`): MLflow's own default is
`./mlartifacts` or `./mlruns` in whatever folder the command ran from.

What a tracker gets of a run: every config field as a param (`variant` included), every epoch's
metrics, then the test metrics of the kept checkpoint (`TESTED`, at step = its epoch), the
checkpoint itself as an artefact (`best.pt`; its path as the tag `psedual.checkpoint`) and the
run's end as the tag `psedual.status` (`completed`, `stopped` early by a scheduler, `error`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from psedual.extras import MissingExtra, require
from psedual.storage import DEFAULT_ROOT, storage_uri


@dataclass(frozen=True)
class Tracker:
    """One tracker a sweep file or `psedual train` may log to."""

    about: str
    """What it records and where (the README and docs/sweeps.md say the same)."""
    module: str
    """The module it needs (import name)."""
    extra: str | None
    """The psedual extra that installs the module; None: a package of its own, `pip install <module>`."""
    single_run: bool
    """Whether `psedual train --loggers` takes it (else sweeps only, through Ray's callback)."""

    def __post_init__(self) -> None:
        if not self.about or not self.module:
            raise ValueError("a tracker needs what it is and the module it imports")


TRACKERS: dict[str, Tracker] = {
    "tensorboard": Tracker("TensorBoard event files: a sweep's in each trial's folder under the results root "
                           "(Ray's TBXLoggerCallback), a run's in <out>/tensorboard", "tensorboard", "track", True),
    "mlflow": Tracker("MLflow runs: each trial's or run's config as params and every epoch's metrics; store "
                      "$MLFLOW_TRACKING_URI, else <root>/mlflow.db", "mlflow", "track", True),
    "wandb": Tracker("Weights & Biases runs (Ray's WandbLoggerCallback): offline into <root>/wandb unless "
                     "WANDB_API_KEY is set", "wandb", None, False),
}
"""Every tracker, by the name sweep files and `--loggers` use."""
SINGLE_RUN = tuple(name for name, tracker in TRACKERS.items() if tracker.single_run)
"""The trackers `psedual train --loggers` takes."""
MLFLOW_DB = "mlflow.db"
"""MLflow's local SQLite store, in the results root."""
MLFLOW_ARTIFACTS = "mlartifacts"
"""The local store's artefact root, in the results root."""
STATUS_TAG = "psedual.status"
"""The tag holding a run's end, as the runs table's `status`: completed, stopped or error."""
CHECKPOINT_TAG = "psedual.checkpoint"
"""The tag holding where the kept checkpoint (`best.pt`) is."""
TESTED = ("best_epoch",)
"""Besides every `test_*` value: which epoch was kept (its validation scores are that epoch's, logged
with the epoch: logging them again would put a second point on the validation curve)."""
TRAIN_EXPERIMENT = "train"
"""The MLflow experiment that `psedual train` runs log to (a sweep's trials: the sweep's experiment name)."""


def check_names(names, where: str) -> None:
    """Refuse unknown tracker names, listing the valid ones; `where` begins the message."""
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{where}: expected a list of tracker names ({', '.join(TRACKERS)})")
    unknown = [n for n in names if n not in TRACKERS]
    if unknown:
        raise ValueError(f"{where}: unknown tracker {', '.join(map(repr, unknown))}; valid: {', '.join(TRACKERS)}")


def need(name: str):
    """The tracker's module, imported; MissingExtra (one line naming what to install) if absent."""
    tracker = TRACKERS[name]
    if tracker.extra is not None:
        return require(tracker.module, tracker.extra, f"logger {name}")
    try:
        return __import__(tracker.module)
    except ImportError:
        raise MissingExtra(f"logger {name} needs the {tracker.module} package: pip install {tracker.module}") from None


def mlflow_uri(root: str) -> str:
    """MLflow's tracking URI: `$MLFLOW_TRACKING_URI` (a server) if set, else the SQLite store in a
    local results root. A remote root (s3://) has no local store: name the variable to set."""
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    root = storage_uri(root)
    if "://" in root:
        raise ValueError(f"logger mlflow with storage {root}: set MLFLOW_TRACKING_URI to a tracking server "
                         "(MLflow's local store needs a local results root)")
    Path(root).mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{root}/{MLFLOW_DB}"


def mlflow_experiment(client, name: str, root: str) -> str:
    """The id of MLflow experiment `name`, created with its artefacts under the results root when
    the client's store is a local one (SQLite, a file store); a server keeps its own artefact root."""
    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    local = client.tracking_uri.split(":", 1)[0] in ("sqlite", "file") or "://" not in client.tracking_uri
    where = (Path(storage_uri(root)) / MLFLOW_ARTIFACTS).resolve().as_uri() if local else None
    return client.create_experiment(name, artifact_location=where)


def tested(row: dict) -> dict[str, float]:
    """The test metrics of a run's kept checkpoint, as trackers take them: every numeric `test_*`
    value and `TESTED` (a runs-table row, or a run's result as a dict)."""
    return {k: v for k, v in ((k, _number(v)) for k, v in row.items() if k.startswith("test_") or k in TESTED)
            if v is not None}


def _number(value: object) -> float | None:
    """A metric's value as MLflow and TensorBoard take it; None for text and missing values."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


class RunTrackers:
    """`psedual train --loggers`: a run's config once and each epoch's row to each tracker, through
    the tracker's own library (MLflow's fluent API, torch's TensorBoard SummaryWriter)."""

    def __init__(self, names: tuple[str, ...], params: dict, out: Path, root: str = DEFAULT_ROOT) -> None:
        check_names(list(names), "--loggers")
        bad = [n for n in names if n not in SINGLE_RUN]
        if bad:
            raise ValueError(f"--loggers: {', '.join(bad)} logs sweeps only (Ray's callback); psedual train takes "
                             f"{', '.join(SINGLE_RUN)}")
        self.mlflow = self.writer = None
        if "mlflow" in names:
            self.mlflow = need("mlflow")
            self.mlflow.set_tracking_uri(mlflow_uri(root))
            experiment = mlflow_experiment(self.mlflow.MlflowClient(mlflow_uri(root)), TRAIN_EXPERIMENT, root)
            self.mlflow.start_run(run_name=Path(out).name, experiment_id=experiment)
            self.mlflow.log_params(params)
        if "tensorboard" in names:
            need("tensorboard")  # torch's SummaryWriter writes through the tensorboard package
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(Path(out) / "tensorboard"))

    def on_epoch(self, row: dict, out: Path) -> None:
        """The trainer's epoch hook: every numeric column of the epoch's row, at step `epoch`."""
        step = int(row["epoch"])
        metrics = {k: v for k, v in ((k, _number(v)) for k, v in row.items() if k != "epoch") if v is not None}
        if self.mlflow is not None:
            self.mlflow.log_metrics(metrics, step=step)
        if self.writer is not None:
            for key, value in metrics.items():
                self.writer.add_scalar(key, value, step)
            self.writer.flush()

    def on_test(self, result: dict, out: Path) -> None:
        """The kept checkpoint's test metrics (at step = its epoch) and the checkpoint itself."""
        metrics, step = tested(result), int(result["best_epoch"])
        best = Path(out) / "best.pt"
        if self.mlflow is not None:
            self.mlflow.log_metrics(metrics, step=step)
            self.mlflow.set_tag(CHECKPOINT_TAG, str(best.resolve()))
            if best.is_file():
                self.mlflow.log_artifact(str(best))
        if self.writer is not None:
            for key, value in metrics.items():
                self.writer.add_scalar(key, value, step)
            self.writer.add_text(CHECKPOINT_TAG, str(best.resolve()), step)
            self.writer.flush()

    def close(self, failed: bool) -> None:
        if self.mlflow is not None:
            self.mlflow.set_tag(STATUS_TAG, "error" if failed else "completed")
            self.mlflow.end_run("FAILED" if failed else "FINISHED")
        if self.writer is not None:
            self.writer.close()
