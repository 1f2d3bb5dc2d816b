"""ε (scheduled fusion) and τ (Gumbel-softmax temperature) as functions of training time.

Both are pure functions of a `Clock` (the optimiser step, 0-based over the whole run,
and the run's length), so a resumed run continues them exactly, and a `horizon`
schedule ends where it says on any dataset: its rate comes from the real number of
steps (training-set size, batch size and epochs), not from a constant per step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from psedual.reexamine.config import NEAR_TEACHER_FORCING, PUBLISHED_EPOCHS, PseDualConfig


@dataclass(frozen=True)
class Clock:
    """Where one optimiser step stands in its run."""

    step: int
    """Steps taken before this one, over the whole run (0-based)."""
    steps_per_epoch: int
    """Optimiser steps (batches) per epoch."""
    epochs: int
    """Epochs of the run."""

    def __post_init__(self) -> None:
        if self.steps_per_epoch < 1 or self.epochs < 1 or not 0 <= self.step < self.total:
            raise ValueError(f"bad clock: {self}")

    @property
    def total(self) -> int:
        return self.steps_per_epoch * self.epochs

    @property
    def epoch(self) -> int:
        return self.step // self.steps_per_epoch

    @property
    def last(self) -> Clock:
        """The run's last step."""
        return Clock(self.total - 1, self.steps_per_epoch, self.epochs)


def _horizon(start: float, end: float, t: int, steps: int) -> float:
    """Exponential decay from `start` at t = 0 to exactly `end` at t = steps − 1."""
    if steps <= 1 or t >= steps - 1:
        return end
    return start * (end / start) ** (t / (steps - 1))


def hold_steps(config: PseDualConfig, clock: Clock) -> int:
    """Steps at epsilon0 before a `horizon` or `step` decay starts: `epsilon_hold` of the run's
    steps, rounded down (0 for the `epoch` schedule, which holds by epochs)."""
    if config.fusion != "scheduled" or config.epsilon_schedule == "epoch":
        return 0
    return int(config.epsilon_hold * clock.total)


def hold_epochs(config: PseDualConfig, epochs: int) -> int:
    """Epochs at epsilon0 in the `epoch` schedule of a run of `epochs`: the published run's share
    (`epsilon_hold_epochs` of PUBLISHED_EPOCHS), rounded down as `hold_steps` rounds."""
    return config.epsilon_hold_epochs * epochs // PUBLISHED_EPOCHS


def epoch_decay(config: PseDualConfig, epochs: int) -> float:
    """The `epoch` schedule's factor per epoch after the hold in a run of `epochs`: the one that
    ends its last epoch where the published run ends (`epsilon_epoch_decay` ** (PUBLISHED_EPOCHS −
    `epsilon_hold_epochs`)); `epsilon_epoch_decay` itself at PUBLISHED_EPOCHS."""
    return config.epsilon_epoch_decay ** ((PUBLISHED_EPOCHS - config.epsilon_hold_epochs)
                                          / (epochs - hold_epochs(config, epochs)))


def epsilon(config: PseDualConfig, clock: Clock) -> float:
    """Weight of the gold expression in Q = ε·Q_gold + (1−ε)·Q_pred. H = `hold_steps`: ε stays at
    epsilon0 for the first H steps, then

    scheduled, `horizon`: ε = epsilon0 · (epsilon_final / epsilon0) ** ((t − H) / (T − H − 1)), T the
                          run's steps (exactly epsilon_final at the last step)
    scheduled, `step`:    ε = epsilon0 · epsilon_decay ** (t − H)
    scheduled, `epoch`:   ε = epsilon0 · d ** max(0, epoch − h + 1), h = `hold_epochs`, d = `epoch_decay`
                          (the published 100 epochs: 1.0 for epochs 0-19, 0.99 at epoch 20, 0.99² at
                          21, ..., 0.99^80 at 99; 30 epochs: 1.0 for epochs 0-5, then 0.967 per epoch
                          to the same 0.448 at epoch 29)
    teacher_forcing: 1; predicted: 0.
    """
    if config.fusion == "teacher_forcing":
        return 1.0
    if config.fusion == "predicted":
        return 0.0
    hold = hold_steps(config, clock)
    if config.epsilon_schedule != "epoch" and clock.step < hold:
        return config.epsilon0
    if config.epsilon_schedule == "horizon":
        return _horizon(config.epsilon0, config.epsilon_final, clock.step - hold, clock.total - hold)
    if config.epsilon_schedule == "step":
        return config.epsilon0 * config.epsilon_decay ** (clock.step - hold)
    held = hold_epochs(config, clock.epochs)
    return config.epsilon0 * epoch_decay(config, clock.epochs) ** max(0, clock.epoch - held + 1)


def tau(config: PseDualConfig, clock: Clock) -> float:
    """Gumbel-softmax temperature at step t of the anneal (of the run, or of the epoch with
    `tau_reset: epoch`, which restarts at tau0 each epoch), over T steps:

    `horizon`: τ = tau0 · (tau_final / tau0) ** (t / (T − 1))
    `step`:    τ = max(tau_min, tau0 · exp(−tau_rate · N · ⌊t / N⌋)), N = tau_interval (Jang et al.
               2017; with the defaults τ reaches 0.5 after ln 2 / 3e-5 ≈ 23,100 steps)
    """
    if config.tau_reset == "epoch":
        t, steps = clock.step - clock.epoch * clock.steps_per_epoch, clock.steps_per_epoch
    else:
        t, steps = clock.step, clock.total
    if config.tau_schedule == "horizon":
        return _horizon(config.tau0, config.tau_final, t, steps)
    n = config.tau_interval
    return max(config.tau_min, config.tau0 * math.exp(-config.tau_rate * n * (t // n)))


def samples(config: PseDualConfig) -> bool:
    """Whether the run ever samples an expression (τ is meaningless when it does not)."""
    return config.fusion != "teacher_forcing" and config.control != "no_expression"


def regime(config: PseDualConfig, steps_per_epoch: int, epochs: int) -> str:
    """One line: ε (its hold) and τ from → to over how many steps, and what the infiller reads of a
    quantity, for the start of a run's log."""
    first = Clock(0, steps_per_epoch, epochs)
    last = first.last
    per = f"{steps_per_epoch} per epoch × {epochs} epoch{'' if epochs == 1 else 's'}"
    if config.control == "no_expression":
        return (f"control no_expression: the infiller reads no expression (every key zero, every slot a candidate) "
                f"over {first.total:,} steps ({per}); ε, τ and the "
                f"expression encoder are unused; loss averaged per {config.infill_average}")
    hold = hold_steps(config, first)
    if config.fusion == "scheduled" and config.epsilon_schedule == "epoch":
        hold = hold_epochs(config, epochs) * steps_per_epoch
    start, end = f"ε {epsilon(config, first):.5g}", f"{epsilon(config, last):.5g}"
    if config.fusion == "scheduled" and hold:
        span = (f"{start} for the first {hold:,} steps ({hold / first.total:.0%}), then → {end} by the last of "
                f"{first.total:,} steps")
    elif config.fusion == "scheduled":  # no hold: it decays from the first step
        span = f"{start} → {end} by the last of {first.total:,} steps"
    else:
        span = f"{start} → {end} over {first.total:,} steps"
    eps = (f"{span} ({per}; fusion {config.fusion}"
           f"{', schedule ' + config.epsilon_schedule if config.fusion == 'scheduled' else ''})")
    task = (f"; quantity keys {config.quantity_keys}"
            f"{', control ' + config.control if config.control != 'none' else ''}, loss averaged per "
            f"{config.infill_average}")
    if not samples(config):
        return f"{eps}; no expression is sampled, so τ is unused{task}"
    span = f"each epoch's {steps_per_epoch} steps" if config.tau_reset == "epoch" else "the run"
    end = Clock(steps_per_epoch - 1, steps_per_epoch, epochs) if config.tau_reset == "epoch" else last
    return (f"{eps}; τ {tau(config, first):.5g} → {tau(config, end):.5g} over {span} "
            f"(schedule {config.tau_schedule}, Q_pred {config.qp_gradient}){task}")


def final(config: PseDualConfig, steps_per_epoch: int, epochs: int) -> tuple[float, float | None]:
    """ε and τ at the run's last step (τ None when no expression is ever sampled)."""
    last = Clock(0, steps_per_epoch, epochs).last
    return epsilon(config, last), tau(config, last) if samples(config) else None


WARN_ABOVE = NEAR_TEACHER_FORCING


def warning(config: PseDualConfig, steps_per_epoch: int, epochs: int) -> str | None:
    """Why a scheduled-fusion run is in effect teacher forcing, or None."""
    eps, _ = final(config, steps_per_epoch, epochs)
    if config.fusion != "scheduled" or eps <= WARN_ABOVE:
        return None
    return (f"scheduled fusion ends at ε = {eps:.3f} > {WARN_ABOVE} after {steps_per_epoch * epochs:,} steps: "
            f"the predicted expression gets a weight of at most {1 - eps:.3f}, so this run is close to teacher "
            f"forcing; use --psedual.epsilon_schedule horizon --psedual.epsilon_final E (the same keys in a "
            f"sweep) to say where ε ends")
