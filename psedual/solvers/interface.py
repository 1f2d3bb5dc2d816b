"""What every solver offers the trainer and the reexamining module.

A Protocol, not a base class: a solver is any nn.Module with these methods. The
encoded batch is the solver's own business (`encode` returns it, the other
methods take it back), so one encoder pass serves the solver's loss, the
reexamining module's view of the masked problem, and its sampled expression.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import torch

from psedual.data.record import Problem
from psedual.solvers.batch import Batch
from psedual.solvers.config import SolverConfig
from psedual.solvers.rollout import Pick, Rollout
from psedual.solvers.vocab import Vocab


@runtime_checkable
class Solver(Protocol):
    name: str
    """Its name in `SOLVERS` (checkpoints store it)."""
    vocab: Vocab
    """The vocabulary it was built with (checkpoints store it)."""
    config: SolverConfig
    """The sizes it was built with: a checkpoint stores them and rebuilds the solver as
    `cls(vocab, SolverConfig(**saved))` (`train.checkpoint`)."""
    may_leave_parameters_unused: bool
    """Whether a training step may leave a trainable parameter without a gradient (data
    parallelism must then search the graph for them every step)."""
    reads_subwords: bool
    """Whether its encoder is a pretrained one reading subwords: a run then leaves out, at load
    time, the training problems longer than the encoder's positions (`plm.subword_check`)."""

    def __init__(self, vocab: Vocab, config: SolverConfig) -> None:
        """A fresh solver; the trainer seeds torch first, so the same seed gives the same weights."""

    def pretrained_parameters(self) -> list[torch.nn.Parameter]:
        """The parameters of its pretrained encoder, which train at `plm_lr` (empty: none)."""

    def encode(self, batch: Batch) -> Any:
        """Encoder pass over the batch (numbers are already the [NUM] mask in the input)."""

    def slot_states(self, enc: Any, batch: Batch) -> torch.Tensor:
        """[B, S, H] the encoder's state at each number slot (S = batch.num_mask's width)."""

    def loss(self, batch: Batch, enc: Any = None) -> torch.Tensor:
        """Mean cross-entropy of the gold expressions under teacher forcing."""

    def loss_terms(self, problems: Sequence[Problem]) -> int:
        """How many terms `loss` averages over for these problems (the token-level solvers: their
        gold tokens), so a DDP rank can weight its share of a global batch exactly."""

    def rollout(self, batch: Batch, enc: Any, pick: Pick, max_length: int) -> Rollout:
        """Write one well-formed prefix expression per problem, choosing each token with
        `pick`, in the model's current mode and with gradient (for the reexamining module)."""

    def decode(self, batch: Batch, beam_size: int = 1, max_length: int = 64,
               greedy: bool = False) -> list[tuple[str, ...]]:
        """Prefix expressions, one per problem, by beam search (or argmax with `greedy`)."""

