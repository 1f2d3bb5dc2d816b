"""A sweep's trackers (`loggers:` in its file): Ray Tune's own logger callbacks, one per name of
the registry (psedual/train/trackers.py's TRACKERS), built on the driver before any trial starts,
and what they get after the sweep: each trial's test metrics and kept checkpoint (`log_tested`).

Ray's MLflow callback is given every config field as a param (not only the sweep's keys), keeps
one run per trial across `--resume` (a rerun trial logs into the run it started) and
tags each run with its end (`psedual.status`: a trial an ASHA rung stopped ends FINISHED in
MLflow's terms, as a completed one does); its experiment keeps its artefacts under the results root.
"""

from __future__ import annotations

import os
from pathlib import Path

from ray.air.integrations.mlflow import MLflowLoggerCallback

from psedual.storage import storage_uri
from psedual.train.trackers import (CHECKPOINT_TAG, STATUS_TAG, TRACKERS, mlflow_experiment, mlflow_uri, need,
                                    tested)
from psedual.tune.space import expand, make_config


def check(names) -> None:
    """Each tracker's package, before Ray starts: a missing one is one line naming what to install."""
    for logger in names:
        need(logger)


def _tensorboard(storage: str, name: str):
    from ray.tune.logger import TBXLoggerCallback

    # Ray writes each trial's event files in its trial folder, synced to the storage with it
    print(f"TensorBoard: tensorboard --logdir {storage.rstrip('/')}/{name}", flush=True)
    return TBXLoggerCallback()


def end_of(planned: int, reached: int, failed: bool) -> str:
    """A trial's end as the runs table's `status` says it."""
    return "error" if failed else "completed" if reached >= planned else "stopped"


class TrialMLflow(MLflowLoggerCallback):
    """Ray's MLflow callback: a trial's whole config as params, its end as the `psedual.status` tag."""

    def __init__(self, *args, root: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.root = root
        self.reached: dict[str, int] = {}

    def setup(self, *args, **kwargs) -> None:
        # the experiment first, its artefacts under the results root; Ray's setup then finds it
        import mlflow

        mlflow_experiment(mlflow.MlflowClient(self.tracking_uri), self.experiment_name, self.root)
        super().setup(*args, **kwargs)

    def log_trial_start(self, trial) -> None:
        if trial not in self._trial_runs:
            earlier = self._earlier_run(str(trial))
            if earlier is not None:  # Ray's callback logs into it instead of starting another
                import mlflow

                mlflow.MlflowClient(self.tracking_uri).update_run(earlier, status="RUNNING")  # again, until it ends
                self._trial_runs[trial] = earlier
        config = make_config(expand(dict(trial.config)))
        # Ray logs `trial.config` when a run starts: the sweep's own keys, not the defaults under them
        # (logging both would change a param's value, `1e-3` to `0.001`, which MLflow refuses)
        trial_config, trial.config = trial.config, {**config.flat(), "variant": config.variant}
        try:
            super().log_trial_start(trial)
        finally:
            trial.config = trial_config

    def _earlier_run(self, name: str) -> str | None:
        """The run a trial of this name started before (a resumed sweep: a killed driver's, left
        RUNNING, or an errored trial's that Tune reruns), newest first; None for a new trial. Ray's
        callback keeps its runs by trial in memory only: a resumed driver would start a second run
        for the trial, and the tested metrics (`log_tested`, by run name) would go to one of the two."""
        import mlflow

        found = mlflow.MlflowClient(self.tracking_uri).search_runs(
            [self.mlflow_util.experiment_id], filter_string=f"attributes.run_name = '{name}'",
            order_by=["attributes.start_time DESC"], max_results=1)
        return found[0].info.run_id if found else None

    def log_trial_result(self, iteration: int, trial, result: dict) -> None:
        if "epoch" in result:
            self.reached[trial.trial_id] = int(result["epoch"])
        super().log_trial_result(iteration, trial, result)

    def log_trial_end(self, trial, failed: bool = False) -> None:
        planned = make_config(expand(dict(trial.config))).epochs
        end = end_of(planned, self.reached.get(trial.trial_id, 0), failed)
        import mlflow

        mlflow.MlflowClient(self.tracking_uri).set_tag(self._trial_runs[trial], STATUS_TAG, end)
        super().log_trial_end(trial, failed)


def _mlflow(storage: str, name: str):
    uri = mlflow_uri(storage)
    print(f"MLflow: experiment {name!r} in {uri}", flush=True)
    return TrialMLflow(tracking_uri=uri, experiment_name=name, tags={"psedual.experiment": name}, root=storage)


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
    check(names)
    return [CALLBACKS[logger](storage_uri(storage), name) for logger in names if logger in TRACKERS]


def log_tested(names, storage: str, name: str, runs, outcomes) -> None:
    """After the tests: each trial's test metrics (at step = its kept epoch), its checkpoint
    (`best.pt` as an artefact where the storage is local; its path as the `psedual.checkpoint` tag)
    and its end (the runs table's status), into the sweep's MLflow runs and TensorBoard folders.
    `runs`: the runs table's rows (polars); `outcomes`: the sweep's `TrialOutcome`s."""
    storage = storage_uri(storage)
    if not names or not runs.height:
        return
    checkpoints = {o.trial: o.checkpoint for o in outcomes}
    folders = {row["trial"]: f"{row['variant']}-s{row['seed']}-{row['trial']}" for row in runs.iter_rows(named=True)}
    if "mlflow" in names:
        _mlflow_tested(storage, name, runs, checkpoints, folders)
    if "tensorboard" in names and "://" not in storage:
        from torch.utils.tensorboard import SummaryWriter

        for row in runs.iter_rows(named=True):
            folder = Path(storage) / name / folders[row["trial"]]
            if not folder.is_dir() or row.get("best_epoch") is None:
                continue
            with SummaryWriter(str(folder), filename_suffix=".tested") as writer:
                for key, value in tested(row).items():
                    writer.add_scalar(key, value, int(row["best_epoch"]))
                writer.add_text(STATUS_TAG, row["status"], int(row["best_epoch"]))


def _mlflow_tested(storage: str, name: str, runs, checkpoints: dict, folders: dict) -> None:
    import mlflow

    client = mlflow.MlflowClient(mlflow_uri(storage))
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        return
    # newest first (search_runs' order): where an earlier version started a trial's run twice, its last
    found = {}
    for r in client.search_runs([experiment.experiment_id]):
        found.setdefault(r.info.run_name, r.info.run_id)
    for row in runs.iter_rows(named=True):
        run_id = found.get(folders[row["trial"]])
        if run_id is None:
            continue
        client.set_tag(run_id, STATUS_TAG, row["status"])
        if row.get("best_epoch") is None:  # a trial that never reported left nothing to test
            continue
        step = int(row["best_epoch"])
        for key, value in tested(row).items():
            client.log_metric(run_id, key, value, step=step)
        checkpoint = checkpoints.get(row["trial"])
        if checkpoint is None:
            continue
        best = f"{checkpoint.path.rstrip('/')}/best.pt"
        local = "://" not in storage and Path(best).is_file()
        client.set_tag(run_id, CHECKPOINT_TAG, best if local else f"{storage.split('://')[0]}://{best}")
        if local:
            client.log_artifact(run_id, best)
