"""ε (scheduled fusion) and τ (Gumbel-softmax temperature) as functions of training time.

Both are pure functions of the optimiser step t (0-based, counted over the whole
run) and the epoch e (0-based), so a resumed run continues them exactly.
"""

from __future__ import annotations

import math

from psedual.reexamine.config import PseDualConfig


def epsilon(config: PseDualConfig, step: int, epoch: int) -> float:
    """Weight of the gold expression in Q = ε·Q_gold + (1−ε)·Q_pred.

    scheduled, `step`:  ε = epsilon0 · epsilon_decay ** step
    scheduled, `epoch`: ε = epsilon0 · epsilon_epoch_decay ** max(0, epoch − epsilon_hold_epochs + 1)
                        (published: 1.0 for epochs 0-19, 0.99 at epoch 20, 0.99² at 21, ...)
    teacher_forcing: 1; predicted: 0.
    """
    if config.fusion == "teacher_forcing":
        return 1.0
    if config.fusion == "predicted":
        return 0.0
    if config.epsilon_schedule == "step":
        return config.epsilon0 * config.epsilon_decay ** step
    return config.epsilon0 * config.epsilon_epoch_decay ** max(0, epoch - config.epsilon_hold_epochs + 1)


def tau(config: PseDualConfig, step: int) -> float:
    """Gumbel-softmax temperature, annealed in blocks of N = tau_interval steps (Jang et al. 2017):

        τ = max(tau_min, tau0 · exp(−tau_rate · N · ⌊step / N⌋))

    With the defaults (1.0, 0.5, 3e-5, 100) τ reaches 0.5 after ln 2 / 3e-5 ≈ 23,100 steps.
    """
    n = config.tau_interval
    return max(config.tau_min, config.tau0 * math.exp(-config.tau_rate * n * (step // n)))
