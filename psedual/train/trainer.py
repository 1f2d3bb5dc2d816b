"""Train one solver on one dataset view, validate every epoch, test the kept checkpoint once (the
best validation epoch's, or with `selection: last` the last epoch's).

One training step, read top to bottom in this file: `_train` runs the epochs; `_train_epoch`
runs one epoch's batches in its seeded order; `train_step` takes one optimiser step on a batch;
`StepLoss.forward` is its loss (the solver's, plus alpha times the reexamining module's infilling
loss). Beside it: the model and optimiser (`build`; `setup` holds the run's state, its parameter
groups, schedules and resumption), DDP's shares of a batch (`distributed`), autocast
(`device.autocast`) and the ε and τ schedules (`reexamine.schedules`); the test is `test.test_run`.

Determinism: the model is initialised from `seed`; epoch e shuffles with its own generator seeded
by (seed, e); dropout uses torch's global RNG, whose state (and CUDA's) is saved in `last.pt`
every epoch. So a run killed after any epoch and resumed from `last.pt` ends with the same
numbers as one never stopped: bit for bit with `threads=1`; with more threads, torch's CPU kernels
may sum in another order, which moves losses in the 8th digit (two uninterrupted runs differ the
same way).
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from torch import nn

from psedual.data.stats import summary_text
from psedual.reexamine import Reexaminer, schedules
from psedual.reexamine.module import Infill
from psedual.reexamine.schedules import Clock
from psedual.results.best import kept_epoch
from psedual.results.folder import BEST, LAST, RunFolder
from psedual.results.records import Epoch, RunResult, from_values
from psedual.solvers import get_solver, hub
from psedual.solvers.batch import Batch, collate
from psedual.solvers.vocab import Vocab
from psedual.train import checkpoint, setup
from psedual.train.config import TrainConfig
from psedual.train.device import CPU, autocast, environment, resolve
from psedual.train.distributed import all_sum, gather, share, shard
from psedual.train.recipe_table import precision_for
from psedual.train.test import accuracies, evaluate, test_run
from psedual.train.view import sets, view

EpochHook = Callable[[dict, Path], None]


def train(config: TrainConfig, out_dir: str | Path, resume: bool = False, stop_after_epoch: int | None = None,
          progress: bool | None = None, on_epoch: EpochHook | None = None, test: bool = True,
          rank: int = 0, world_size: int = 1, device: torch.device | str | None = None) -> RunResult | None:
    """Run (or resume) training, then (with `test`) evaluate `best.pt` on test once.

    `stop_after_epoch` ends the call early, as a kill would, and returns None; the run
    can then be resumed. `on_epoch(row, out_dir)` is called after each epoch's
    checkpoint is written (Ray reports through it). With `world_size` > 1 (inside an
    initialised torch.distributed group, as Ray Train sets up) each rank trains on its
    share of every batch under DistributedDataParallel (see `distributed`); only rank 0
    writes files. `device` (a Ray Train worker passes the one Ray assigned) overrides
    `config.device`.
    """
    threads = torch.get_num_threads()
    if config.threads:
        torch.set_num_threads(config.threads)
    where = torch.device(device) if device is not None else resolve(config.device)
    try:
        done = _train(config, RunFolder(Path(out_dir)), resume, stop_after_epoch,
                      sys.stderr.isatty() if progress is None else progress, on_epoch, rank, world_size, where)
        return test_run(out_dir, where).result if done and test and rank == 0 else None
    finally:
        torch.set_num_threads(threads)


def _train(config: TrainConfig, folder: RunFolder, resume: bool, stop_after_epoch: int | None, show_bar: bool,
           on_epoch: EpochHook | None, rank: int, world_size: int, device: torch.device) -> bool:
    """Train to the last epoch (True) or to `stop_after_epoch` (False)."""
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)  # NCCL's object gathers run on the current device
    # data and vocabulary (from the training split only)
    splits, data_info = view(config)
    train_set, valid_set, _, vocab = sets(config, splits, data_info)
    if not valid_set and config.selection == "best":
        raise ValueError(f"{config.data.dataset}: no validation problems (data.valid_fraction "
                         f"{config.data.valid_fraction:g}), so no best epoch: pass --selection last")
    if rank == 0:  # what was read, skipped and left out, before any time is spent on it
        print(summary_text(data_info), file=sys.stderr, flush=True)
    # model, optimiser and schedules; then, resuming, their state from last.pt
    run = build(config, folder, train_set, valid_set, vocab, device, rank, world_size)
    setup.resume(run, resume)
    if run.main:
        _start_outputs(run, data_info)
    run.forward = _distribute(run)
    for epoch in range(run.start_epoch, config.epochs):
        began = time.perf_counter()
        losses = _train_epoch(run, epoch, show_bar)
        valid_value, valid_expr = _validate(run)
        seconds = time.perf_counter() - began
        run.train_seconds += seconds
        run.history.append(asdict(Epoch(epoch + 1, losses["train_loss"], losses["lr"], valid_value, valid_expr,
                                        seconds, losses["infill_loss"], losses["epsilon"], losses["tau"])))
        _checkpoint(run, on_epoch)
        if stop_after_epoch is not None and epoch + 1 >= stop_after_epoch and epoch + 1 < config.epochs:
            return False
    return True


def build(config: TrainConfig, folder: RunFolder, train_set: list, valid_set: list, vocab: Vocab,
          device: torch.device, rank: int, world_size: int) -> setup.Run:
    """The model (initialised from `config.seed`), its reexamining module, optimiser and schedule."""
    torch.manual_seed(config.seed)
    model = get_solver(config.solver)(vocab, config.model)
    if config.model.plm == "minilm" and model.pretrained_parameters() \
            and any(p.language != "en" for p in train_set[:100]):
        raise ValueError(f"{config.data.dataset} is not English, and the default pretrained encoder (minilm) is: give "
                         "--model.plm a Chinese BERT/RoBERTa: a hub id (hfl/chinese-roberta-wwm-ext) or a local folder")
    reexaminer = Reexaminer(vocab, config.model, config.psedual) if config.psedual is not None else None
    # on the device before the optimiser is built, which keeps references to the parameters
    step_fn = StepLoss(model, reexaminer, config.psedual.alpha if config.psedual is not None else 0.0).to(device)
    opt = setup.OPTIMIZERS[config.optimizer](setup.parameter_groups(step_fn, config), config.lr,
                                             weight_decay=config.weight_decay)
    per_epoch = config.steps_per_epoch(len(train_set))  # len(batches) of every epoch: the schedules' clock
    return setup.Run(config, folder, device, rank, world_size, train_set, valid_set, vocab, model, reexaminer,
                     step_fn, opt, setup.lr_schedule(opt, config, per_epoch), per_epoch)


def _start_outputs(run: setup.Run, data_info: dict) -> None:
    """Rank 0, before the first epoch: say the PseDual regime; write config.json, data.json, env.json
    (where this process trains: a resumed run records where it resumed), a pretrained encoder's
    encoder.json (its name, folder and hub commit) and a resumed run's epochs table."""
    config = run.config
    if config.psedual is not None:  # say the regime out loud: where ε and τ go, over how many steps
        print(f"PseDual: {schedules.regime(config.psedual, run.per_epoch, config.epochs)}", file=sys.stderr, flush=True)
        warning = schedules.warning(config.psedual, run.per_epoch, config.epochs)
        if warning is not None:
            warnings.warn(warning, UserWarning, stacklevel=4)
    # which encoder, and for a hub id which commit, it read
    encoder = hub.resolve(config.model.plm, download=False).record() if get_solver(config.solver).reads_subwords \
        else None
    precision = precision_for(config.solver, run.device.type, config.precision)
    run.folder.start(config, data_info, replace(environment(run.device), plm_commit=encoder and encoder["commit"],
                                                precision=precision), encoder)
    if run.history:  # a resumed folder may predate per-epoch tables; the test reads this one
        run.folder.write_epochs([from_values(Epoch, row) for row in run.history])


def _distribute(run: setup.Run) -> nn.Module:
    """The step's loss as the ranks run it: itself alone, under DistributedDataParallel with several."""
    if run.world_size == 1:
        return run.step_fn
    from torch.nn.parallel import DistributedDataParallel

    # the search for parameters a step left out is a graph walk per step: only for solvers that
    # may leave some out (tests/test_distributed.py says which; the reexamining module never does)
    return DistributedDataParallel(run.step_fn, device_ids=[run.device] if run.device.type == "cuda" else None,
                                   find_unused_parameters=run.model.may_leave_parameters_unused)


def _train_epoch(run: setup.Run, epoch: int, show_bar: bool) -> dict:
    """One pass over the training set in the epoch's own seeded order: the epoch row's mean
    losses, the lr its steps used, and ε and τ at its last step."""
    config, train_set, world_size = run.config, run.train_set, run.world_size
    run.step_fn.train()
    order = torch.randperm(len(train_set), generator=torch.Generator().manual_seed(config.seed * 1_000_003 + epoch))
    batches = [[train_set[i] for i in order[j:j + config.batch_size].tolist()]
               for j in range(0, len(train_set), config.batch_size)]
    bar = _bar(len(batches), f"epoch {epoch + 1}/{config.epochs}") if show_bar and run.main else None
    # summed on the device in float64 (the same operations as on the host), read once per epoch:
    # reading a step's loss would make the host wait for the GPU every step (only the progress
    # bar, on a terminal, reads it)
    total = total_infill = torch.zeros((), dtype=torch.float64, device=run.device)
    schedule: dict[str, float | None] = {"epsilon": None, "tau": None}
    for i, problems in enumerate(batches):
        # the step count is a function of (epoch, i), so a resumed run continues ε and τ
        clock = Clock(epoch * run.per_epoch + i, run.per_epoch, config.epochs)
        mine, weight = shard(problems, run.rank, world_size)
        shares = None
        if world_size > 1:  # this rank's share of the global batch's mean losses (see `distributed`)
            shares = (share(run.model.loss_terms(mine), run.model.loss_terms(problems), weight, world_size),
                      share(run.reexaminer.loss_terms(mine), run.reexaminer.loss_terms(problems), weight, world_size)
                      if run.reexaminer is not None else 0.0)
        stepped = train_step(run.step_fn, run.opt, collate(mine, run.vocab).to(run.device), clock,
                             clip_grad_norm=config.clip_grad_norm, device=run.device,
                             precision=precision_for(config.solver, run.device.type, config.precision),
                             forward=run.forward, shares=shares)
        if config.lr_schedule == "linear":
            run.sched.step()
        # the global batch's mean loss is the ranks' average (their sum at the epoch's end)
        total = total + stepped.loss.detach().double() / world_size * len(problems)
        if stepped.reexamined is not None:
            total_infill = total_infill + stepped.infill_loss.detach().double() / world_size * len(problems)
            schedule = {"epsilon": stepped.reexamined.epsilon, "tau": stepped.reexamined.tau}
        if bar is not None:
            bar.set_postfix(loss=f"{stepped.loss.item():.3f}")
            bar.update()
    if bar is not None:
        bar.close()
    total, total_infill = torch.stack([total, total_infill]).tolist()
    if world_size > 1:
        total, total_infill = all_sum([total, total_infill], run.device)
    lr = run.opt.param_groups[0]["lr"]
    if config.lr_schedule == "step":
        run.sched.step()
    return {"train_loss": total / len(train_set), "lr": lr,
            "infill_loss": total_infill / len(train_set) if run.reexaminer is not None else None, **schedule}


@dataclass(frozen=True)
class StepOutput:
    """What one step computed."""

    loss: torch.Tensor
    """The loss descended: the solver's, plus alpha times the infilling loss (PseDual runs)."""
    infill_loss: torch.Tensor | None
    """The reexamining module's loss as it entered `loss` (times this rank's share under DDP); None without it."""
    reexamined: Infill | None
    """The reexamining module's output (its ε and τ at this step); None without it."""


def train_step(step: StepLoss, opt: torch.optim.Optimizer, batch: Batch, clock: Clock | None = None, *,
               clip_grad_norm: float = 0.0, device: torch.device = CPU, precision: str = "fp32",
               forward: nn.Module | None = None, shares: tuple[float, float] | None = None) -> StepOutput:
    """One optimiser step on `batch`: the forward pass under `precision`'s autocast, the loss
    (solver + alpha × infilling), then `optimise` over `step`'s parameters. Under DDP, `forward`
    is the DistributedDataParallel wrapper of `step` and `shares` the factors on this rank's
    solver and infilling losses (see `distributed.share`). The trainer, the benches and the tests
    that train all step through this (or, for a loss of their own, `optimise`), so what a step
    does is written once."""
    with autocast(device, precision):
        loss, reexamined = (forward or step)(batch, clock)
    infill_loss = None if reexamined is None else reexamined.loss
    if shares is not None:  # this rank's share of the global batch's mean losses
        loss = loss * shares[0]
        if infill_loss is not None:
            infill_loss = infill_loss * shares[1]
    if infill_loss is not None:
        loss = loss + step.alpha * infill_loss
    optimise(loss, opt, clip_grad_norm, step.parameters())
    return StepOutput(loss, infill_loss, reexamined)


class StepLoss(nn.Module):
    """One training step's loss as a forward pass, so DistributedDataParallel can wrap it."""

    def __init__(self, model, reexaminer: Reexaminer | None, alpha: float) -> None:
        super().__init__()
        self.model, self.reexaminer, self.alpha = model, reexaminer, alpha

    def forward(self, batch: Batch, clock: Clock | None):
        """(the solver's mean loss, the reexamining module's output or None)."""
        enc = self.model.encode(batch)
        loss = self.model.loss(batch, enc)
        return loss, None if self.reexaminer is None else self.reexaminer(self.model, batch, enc, clock)


def optimise(loss: torch.Tensor, opt: torch.optim.Optimizer, clip_grad_norm: float = 0.0, params=()) -> None:
    """Descend `loss`: zero the gradients, backward, clip the global norm of `params`' gradients
    to `clip_grad_norm` (0: no clipping), step the optimiser."""
    opt.zero_grad()
    loss.backward()
    if clip_grad_norm:
        nn.utils.clip_grad_norm_(params, clip_grad_norm)
    opt.step()


def _validate(run: setup.Run) -> tuple[float, float]:
    """Validation value and expression accuracy (decoding split over the ranks); NaN for a run
    without a validation set (`data.valid_fraction` 0), which keeps its last epoch."""
    config = run.config
    if not run.valid_set:
        return float("nan"), float("nan")
    return accuracies(evaluate(run.model, run.valid_set, run.vocab, config.beam_size, config.batch_size, run.device,
                               run.rank, run.world_size), run.valid_set)


def _checkpoint(run: setup.Run, on_epoch: EpochHook | None) -> None:
    """After an epoch: best.pt if it is the best so far, then last.pt and epochs.parquet (rank 0
    writes them), then the `on_epoch` hook."""
    config, folder, row = run.config, run.folder, run.history[-1]
    kept = kept_epoch(run.history, config.selection)
    # every rank's RNG states (dropout draws differ between ranks), gathered for rank 0 to save
    rngs = gather((torch.get_rng_state(), torch.cuda.get_rng_state(run.device) if run.device.type == "cuda" else None),
                  run.world_size)
    if run.main:
        weights = {**checkpoint.model_state(run.model), "config": asdict(config),
                   "reexaminer": run.reexaminer.state_dict() if run.reexaminer is not None else None}
        if kept["epoch"] == row["epoch"]:  # the best so far (with `selection: last`, every epoch)
            checkpoint.save(folder.file(BEST), weights)
        valid = (f"valid value {100 * row['valid_value_acc']:.1f}% expr {100 * row['valid_expr_acc']:.1f}%"
                 if run.valid_set else "no validation set")
        print(f"epoch {row['epoch']}/{config.epochs} loss {row['train_loss']:.4f} {valid} ({row['seconds']:.1f} s)",
              file=sys.stderr, flush=True)
        checkpoint.save(folder.file(LAST), {**weights, "optimizer": run.opt.state_dict(),
                                            "scheduler": run.sched.state_dict(), **checkpoint.rng_fields(rngs),
                                            "history": run.history, "epoch": row["epoch"],
                                            "seconds": run.train_seconds})
        folder.write_epochs([from_values(Epoch, r) for r in run.history])
    if on_epoch is not None:
        on_epoch({**row, "best_epoch": kept["epoch"], "best_valid_value_acc": kept["valid_value_acc"]}, folder.path)


def _bar(total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, leave=False, dynamic_ncols=True)
