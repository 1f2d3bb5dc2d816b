"""One training step: the loss as a forward pass, backward, gradient clipping, the optimiser's step.

The trainer, the benches and the tests that train all step through `train_step` (or, for a loss
of their own, `optimise`), so what a step does is written once.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from psedual.reexamine import Reexaminer
from psedual.reexamine.module import Infill
from psedual.reexamine.schedules import Clock
from psedual.solvers.batch import Batch
from psedual.train.device import autocast

CPU = torch.device("cpu")


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


@dataclass(frozen=True)
class StepOutput:
    """What one step computed."""

    loss: torch.Tensor
    """The loss descended: the solver's, plus alpha times the infilling loss (PseDual runs)."""
    infill_loss: torch.Tensor | None
    """The reexamining module's loss as it entered `loss` (times this rank's share under DDP); None without it."""
    reexamined: Infill | None
    """The reexamining module's output (its ε and τ at this step); None without it."""


def optimise(loss: torch.Tensor, opt: torch.optim.Optimizer, clip_grad_norm: float = 0.0, params=()) -> None:
    """Descend `loss`: zero the gradients, backward, clip the global norm of `params`' gradients
    to `clip_grad_norm` (0: no clipping), step the optimiser."""
    opt.zero_grad()
    loss.backward()
    if clip_grad_norm:
        nn.utils.clip_grad_norm_(params, clip_grad_norm)
    opt.step()


def train_step(step: StepLoss, opt: torch.optim.Optimizer, batch: Batch, clock: Clock | None = None, *,
               clip_grad_norm: float = 0.0, device: torch.device = CPU, precision: str = "fp32",
               forward: nn.Module | None = None, shares: tuple[float, float] | None = None) -> StepOutput:
    """One optimiser step on `batch`: the forward pass under `precision`'s autocast, the loss
    (solver + alpha × infilling), then `optimise` over `step`'s parameters. Under DDP, `forward`
    is the DistributedDataParallel wrapper of `step` and `shares` the factors on this rank's
    solver and infilling losses (see `distributed.share`)."""
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
