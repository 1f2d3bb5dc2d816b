"""What every solver offers the trainer (and, later, the reexamining module).

A Protocol, not a base class: a solver is any nn.Module with these methods.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from psedual.solvers.batch import Batch
from psedual.solvers.vocab import Vocab


@runtime_checkable
class Solver(Protocol):
    name: str
    vocab: Vocab

    def loss(self, batch: Batch) -> torch.Tensor:
        """Mean cross-entropy of the gold expressions under teacher forcing."""

    def decode(self, batch: Batch, beam_size: int = 1, max_length: int = 64,
               greedy: bool = False) -> list[tuple[str, ...]]:
        """Prefix expressions, one per problem, by beam search (or argmax with `greedy`)."""
