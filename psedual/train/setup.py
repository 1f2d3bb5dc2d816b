"""A training run's state from setup to its last epoch (`Run`; `trainer.build` makes it), its
optimiser's parameter groups and learning-rate schedule, and, for a resumed run, the same state
read back from `last.pt` (`resume`), so that it goes on exactly where it stopped."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch
from torch import nn

from psedual.reexamine import Reexaminer
from psedual.results.folder import LAST, RunFolder
from psedual.solvers.vocab import Vocab
from psedual.train import checkpoint
from psedual.train.config import TrainConfig
from psedual.train.run_folder import check_run_folder

OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}
"""`TrainConfig.optimizer` -> its class (both take the parameter groups, lr and weight_decay)."""


@dataclass
class Run:
    """What a training run holds from setup to its last epoch."""

    config: TrainConfig
    """The run's config."""
    folder: RunFolder
    """Its output folder."""
    device: torch.device
    """Where it computes."""
    rank: int
    """This process's DDP rank (0 when alone); only rank 0 writes files."""
    world_size: int
    """DDP ranks (1 when alone)."""
    train_set: list
    """Training problems."""
    valid_set: list
    """Validation problems."""
    vocab: Vocab
    """The vocabulary, from the training split only."""
    model: nn.Module
    """The solver."""
    reexaminer: Reexaminer | None
    """The reexamining module; None trains the solver alone."""
    step_fn: nn.Module
    """The step's loss over model and reexaminer (`trainer.StepLoss`: what the optimiser holds the
    parameters of)."""
    opt: torch.optim.Optimizer
    """`config.optimizer` over `parameter_groups`."""
    sched: object
    """The learning-rate schedule (`lr_schedule`)."""
    per_epoch: int
    """Optimiser steps per epoch: the schedules' clock."""
    forward: nn.Module | None = None
    """`step_fn`, or its DistributedDataParallel wrapper with `world_size` > 1."""
    history: list[dict] = field(default_factory=list)
    """One row per finished epoch (the epochs table)."""
    start_epoch: int = 0
    """Epochs already done (a resumed run's)."""
    train_seconds: float = 0.0
    """Seconds spent in the epochs done."""

    @property
    def main(self) -> bool:
        return self.rank == 0


def parameter_groups(step_fn: nn.Module, config: TrainConfig) -> list[dict]:
    """One group, or two where a pretrained encoder is trained: its parameters at plm_lr and
    plm_weight_decay, the rest at lr and weight_decay (the optimiser's defaults)."""
    pretrained = {id(p) for p in step_fn.model.pretrained_parameters()}
    rest = [p for p in step_fn.parameters() if id(p) not in pretrained]
    if not pretrained:
        return [{"params": rest}]
    return [{"params": rest},
            {"params": [p for p in step_fn.parameters() if id(p) in pretrained], "lr": config.plm_lr,
             "weight_decay": config.plm_weight_decay}]


def lr_schedule(opt, config: TrainConfig, per_epoch: int):
    if config.lr_schedule == "step":  # stepped once per epoch
        return torch.optim.lr_scheduler.StepLR(opt, step_size=config.lr_step, gamma=config.lr_gamma)
    from transformers import get_linear_schedule_with_warmup  # stepped once per optimiser step

    total = per_epoch * config.epochs
    return get_linear_schedule_with_warmup(opt, round(config.warmup_fraction * total), total)


def resume(run: Run, resuming: bool) -> None:
    """With `resuming`, load `last.pt` (if any) into `run`: weights, optimiser, schedule, RNG
    states, history. Without, refuse a folder that already holds a run."""
    last, config = run.folder.file(LAST), run.config
    if not (resuming and last.exists()):
        if last.exists() and run.main:
            raise checkpoint.CheckpointError(f"{last} exists: pass resume=True (--resume) or use a new output folder")
        if run.main:  # starting from scratch: the folder must not hold another config's run
            check_run_folder(run.folder, config)
        return
    state = checkpoint.load(last)
    # compared as configs, so a checkpoint saved before a field existed (at its default) still fits;
    # the device is not the run's identity (a run may resume on another machine)
    try:
        saved = TrainConfig.from_dict(state["config"])
    except (KeyError, TypeError, ValueError, AttributeError) as err:  # the right keys, foreign contents
        raise checkpoint.CheckpointError(f"{last}: its config is not a PseDual training config "
                                         f"({type(err).__name__}: {err})") from None
    if replace(saved, device=config.device) != config:
        raise checkpoint.CheckpointError(f"{last}: saved for a different config; start a new output folder")
    checkpoint.check(state, last, config.solver, run.vocab)
    run.model.load_state_dict(state["model"])  # into these modules: the optimiser holds their parameters
    if run.reexaminer is not None:
        run.reexaminer.load_state_dict(state["reexaminer"])
    run.opt.load_state_dict(state["optimizer"])
    run.sched.load_state_dict(state["scheduler"])
    cpu_rng, cuda_rng = checkpoint.rank_rng(state, run.rank, run.world_size)  # each rank drew its own dropout
    torch.set_rng_state(cpu_rng)
    if run.device.type == "cuda" and cuda_rng is not None:  # dropout on CUDA draws from it
        torch.cuda.set_rng_state(cuda_rng, run.device)
    run.history, run.start_epoch, run.train_seconds = state["history"], state["epoch"], state["seconds"]
