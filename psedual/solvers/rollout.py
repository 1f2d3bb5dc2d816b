"""Expressions a solver writes token by token under a caller's choice rule.

The reexamining module needs the solver's own expression with a gradient path
back into the decoder. The solver does not know about Gumbel-softmax: it scores
the next token, masks what the grammar forbids, and lets `pick` choose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

NEG = -1e12
"""The score of a forbidden token or a masked position, everywhere: finite, so log_softmax stays
finite (the published GTS code's value)."""

Pick = Callable[[torch.Tensor, torch.Tensor, "int | torch.Tensor"], torch.Tensor]
"""`pick(scores, rows, position)`: maps a step's scores [R, V] (forbidden tokens at NEG) for
the batch's problems `rows` [R] at output position `position` (one for all rows, or each row's
own as a tensor [R]: the masked tree rollout's rows may be at different positions) to rows [R, V]
whose argmax is the token taken. The rows may carry gradient (straight-through) or be soft. Naming the
problems lets a sampler draw each problem's noise independently of the batch around it."""


MASKED_DEVICES = {"cuda"}
"""Device types whose tree rollouts run every row under masks and read the host a few times an
expression, not once per token (`tree_rollout.masked_rollout`). Elsewhere (a CPU, with no device
to wait for) a rollout works on just the rows each step needs. bench/syncs.py adds "cpu" to count
on a CPU what a GPU's rollout reads."""

COMPILED_DEVICES: set[str] = set()
"""Device types whose masked tree rollout runs each step through `torch.compile`
(`tree_rollout.compiled_step`): none by default, until a GPU has timed it beside the eager steps
(bench/train_speed.py `--rollouts compiled`). Only a device type in `MASKED_DEVICES` runs it."""


@dataclass
class Rollout:
    """One expression per problem."""

    choices: torch.Tensor
    """[B, L, V] what `pick` returned at each step; zero rows after the expression ends."""
    tokens: torch.Tensor
    """[B, L] output ids in prefix order, -1 after the expression ends."""
    ids: list[list[int]] | None = None
    """The same ids on the host (without the padding) where the writer has them there, so a
    reader need not copy `tokens` back from the device; None otherwise."""


def may_open_operator(need: torch.Tensor, length: int, max_length: int) -> torch.Tensor:
    """[R] whether an operator may be written at position `length` of a prefix expression
    that still needs `need` operands: it adds one to `need`, and every needed operand
    takes at least one of the positions left after this one."""
    return need + 1 <= max_length - length - 1
