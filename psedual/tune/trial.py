"""One Tune trial: train a TrainConfig, reporting validation metrics and a checkpoint per epoch.

In-process (1 worker, `resources.in_process`): the trainer runs inside the trial, on
its GPU (or share of one) where it holds one, else on the CPU. Otherwise the trial is the
driver of a Ray Train `TorchTrainer` (DDP over `num_workers` ranks, over gloo where ranks
share a GPU), whose reports reach Tune through `TuneReportCallback` (the
Ray Train V2 pattern; `Tuner(TorchTrainer)` is gone). Either way a restarted trial
or worker resumes from its last reported checkpoint, which holds `last.pt`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import ray.train
import ray.tune
from ray.train.torch import TorchConfig
# Ray's own torch backend (private: Ray exports only its config); `CheckedTorchConfig` runs the
# device check on every worker before it
from ray.train.torch.config import _TorchBackend

from psedual.results.folder import CHECKPOINT
from psedual.train.device import NoCudaError, placed
from psedual.train.resources import Resources
from psedual.train.trainer import train
from psedual.tune.space import make_config


def _restore(checkpoint, out: Path) -> bool:
    """Copy a reported checkpoint's files into `out`; True if there was one."""
    if checkpoint is None:
        return False
    with checkpoint.as_directory() as d:
        for name in CHECKPOINT:
            if (Path(d) / name).exists():
                shutil.copy2(Path(d) / name, out / name)
    return True


def _report(report, checkpoint_cls, row: dict, out: Path, with_checkpoint: bool) -> None:
    """Report an epoch's metrics, with the run folder as a checkpoint (`checkpoint_cls` is
    ray.tune's Checkpoint in a Tune function, ray.train's in a Train worker)."""
    metrics = {k: v for k, v in row.items() if v is not None}
    if not with_checkpoint:
        report(metrics)
        return
    with tempfile.TemporaryDirectory() as d:
        for name in CHECKPOINT:
            if (out / name).exists():
                _snapshot(out / name, Path(d) / name)
        report(metrics, checkpoint=checkpoint_cls.from_directory(d))


def _snapshot(src: Path, dst: Path) -> None:
    """Hard-link `src` at `dst` (a copy across file systems). A link is a true snapshot here:
    the trainer replaces its files by rename, never rewrites them, and Ray copies the
    checkpoint to storage before `report` returns; it saves one copy of the weights per epoch."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def train_in_process(flat: dict) -> None:
    """Tune function trainable: the trainer inside the trial."""
    config = make_config(flat)
    out = Path(tempfile.mkdtemp(prefix="psedual-trial-"))
    try:
        resumed = _restore(ray.tune.get_checkpoint(), out)
        train(config, out, resume=resumed, progress=False, test=False, device=placed(config.device, ray.get_gpu_ids()),
              on_epoch=lambda row, d: _report(ray.tune.report, ray.tune.Checkpoint, row, d, True))
    finally:
        shutil.rmtree(out, ignore_errors=True)


def train_worker(loop_config: dict) -> None:
    """Ray Train worker: one DDP rank, on the device Ray assigned it (its GPU, or share of one)."""
    from ray.train.torch import get_device

    config = make_config(loop_config["flat"])
    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    out = Path(tempfile.mkdtemp(prefix=f"psedual-rank{rank}-"))

    def on_epoch(row: dict, d: Path) -> None:
        _report(ray.train.report, ray.train.Checkpoint, row, d, rank == 0)

    try:
        resumed = _restore(ray.train.get_checkpoint(), out)
        gpus = ray.get_gpu_ids()
        device = placed(config.device, gpus)  # fails here, naming the node, on a GPU torch cannot see
        train(config, out, resume=resumed, progress=False, test=False, rank=rank, world_size=world,
              on_epoch=on_epoch, device=get_device() if device.type == "cuda" else device)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def check_worker(device: str) -> str:
    """On a Train worker, before its process group: the device it will train on, or NoCudaError
    (one line naming the node) where it holds a GPU its torch cannot use."""
    return str(placed(device, ray.get_gpu_ids()))


class _CheckedTorchBackend(_TorchBackend):
    """Ray's torch backend, after each worker's device check. Ray sets up the process group before
    the training function runs, so a worker given a GPU whose torch has no CUDA (a CPU wheel, a
    driver older than the wheel) would fail there with NCCL's `Distributed package doesn't have
    NCCL built in` or `torch._C has no attribute _cuda_setDevice`, never reaching the trainer's
    check."""

    def on_start(self, worker_group, backend_config: CheckedTorchConfig) -> None:
        worker_group.execute(check_worker, backend_config.device)
        super().on_start(worker_group, backend_config)


@dataclass
class CheckedTorchConfig(TorchConfig):
    """A TorchConfig whose workers check their device first (`_CheckedTorchBackend`)."""

    device: str = "auto"
    """The trial config's device (`TrainConfig.device`): what `check_worker` resolves."""

    @property
    def backend_cls(self):
        return _CheckedTorchBackend


def no_cuda_line(err: BaseException) -> NoCudaError | None:
    """The NoCudaError a failed Train run carries, as one line, or None: raised by a worker's device
    check in the backend's start (a controller error, which Ray does not retry) or by the trainer's
    own check in the training function (a worker group error), each wrapped in Ray's task error."""
    todo, seen = [err], set()
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, NoCudaError):
            return NoCudaError(str(getattr(e, "cause", e)))  # a RayTaskError(NoCudaError): the worker's own
        todo += [getattr(e, "controller_failure", None), *(getattr(e, "worker_failures", None) or {}).values(),
                 getattr(e, "cause", None), e.__cause__]
    return None


def train_with_workers(flat: dict, resources: Resources, storage: str) -> None:
    """Tune function trainable driving a TorchTrainer."""
    from ray.train.torch import TorchTrainer
    from ray.tune.integration.ray_train import TuneReportCallback

    trial = ray.tune.get_context()
    trainer = TorchTrainer(
        train_worker,
        train_loop_config={"flat": flat},
        scaling_config=scaling(resources),
        torch_config=CheckedTorchConfig(backend=resources.backend, device=make_config(flat).device),
        # the Train run (its checkpoints) under the trial's experiment, not at the storage root
        run_config=ray.train.RunConfig(
            name=f"train_{trial.get_trial_id()}",
            storage_path=f"{storage.rstrip('/')}/{trial.get_experiment_name()}",
            callbacks=[TuneReportCallback()],
            # Ray's default controller failure limit is infinite: a trial that cannot be placed
            # would retry forever. Worker failures resume from the last checkpoint.
            failure_config=ray.train.FailureConfig(max_failures=resources.max_failures, controller_failure_limit=2),
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=2),
        ),
    )
    try:
        trainer.fit()
    except ray.train.TrainingFailedError as err:
        line = no_cuda_line(err)
        if line is None:
            raise
        raise line from None  # the trial's error: one line naming the node and the versions


def scaling(resources: Resources) -> ray.train.ScalingConfig:
    """A Train trial's workers: each with its CPUs and its GPU or share of one (Ray places
    fractional shares of one GPU side by side)."""
    gpus = resources.gpus_per_worker
    return ray.train.ScalingConfig(num_workers=resources.num_workers, use_gpu=gpus > 0,
                                   resources_per_worker={"CPU": resources.cpus_per_worker, **({"GPU": gpus} if gpus else {})})


def in_process_resources(resources: Resources) -> dict:
    """What an in-process trial reserves: its CPUs and its GPU or share of one. With a GPU, Ray
    makes it the trial's only visible one: device `auto` trains on it (`device.placed`)."""
    return {"cpu": resources.cpus_per_worker, "gpu": resources.gpus_per_worker}


def trainable(resources: Resources, storage: str):
    """The function Tune runs for each trial, with the resources it reserves."""
    if not resources.uses_train_workers:
        return ray.tune.with_resources(train_in_process, in_process_resources(resources))
    # The driver only waits on its workers: it reserves no CPU, so the workers may take every
    # CPU (2 workers on a 2-CPU machine). Ray refuses an empty request; a little memory is not.
    fn = ray.tune.with_parameters(train_with_workers, resources=resources, storage=storage)
    return ray.tune.with_resources(fn, {"cpu": 0, "memory": DRIVER_MEMORY})


DRIVER_MEMORY = 64 * 2 ** 20
"""Bytes a Train-driving trial reserves (Ray's logical memory: bookkeeping, not a limit)."""
