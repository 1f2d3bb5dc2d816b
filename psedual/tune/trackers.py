"""A sweep's trackers (`loggers:` in its file): Ray Tune's own logger callbacks, one per name of
the registry (psedual/train/trackers.py's TRACKERS), built on the driver before any trial starts."""

from __future__ import annotations

import os
from pathlib import Path

from psedual.storage import storage_uri
from psedual.train.trackers import TRACKERS, mlflow_uri, need


def _tensorboard(storage: str, name: str):
    from ray.tune.logger import TBXLoggerCallback

    # Ray writes each trial's event files in its trial folder, synced to the storage with it
    print(f"TensorBoard: tensorboard --logdir {storage.rstrip('/')}/{name}", flush=True)
    return TBXLoggerCallback()


def _mlflow(storage: str, name: str):
    from ray.air.integrations.mlflow import MLflowLoggerCallback

    uri = mlflow_uri(storage)
    print(f"MLflow: experiment {name!r} in {uri}", flush=True)
    return MLflowLoggerCallback(tracking_uri=uri, experiment_name=name, tags={"psedual.experiment": name})


def _wandb(storage: str, name: str):
    from ray.air.integrations.wandb import WandbLoggerCallback

    local = "://" not in storage
    extra = {} if os.environ.get("WANDB_API_KEY") else {"mode": "offline"}  # never online without a key
    if local:
        (Path(storage) / "wandb").mkdir(parents=True, exist_ok=True)
        extra["dir"] = str(Path(storage) / "wandb")
    print(f"W&B: project psedual, group {name!r}, {extra.get('mode', 'online')}", flush=True)
    return WandbLoggerCallback(project="psedual", group=name, **extra)


CALLBACKS = {"tensorboard": _tensorboard, "mlflow": _mlflow, "wandb": _wandb}
"""Each tracker's Ray callback (storage URI, experiment name) → callback; the keys are TRACKERS'."""


def tracker_callbacks(names, storage: str, name: str) -> list:
    """The Ray callbacks of a sweep's `loggers`; a missing package is one line naming its extra."""
    for logger in names:
        need(logger)
    return [CALLBACKS[logger](storage_uri(storage), name) for logger in names if logger in TRACKERS]
