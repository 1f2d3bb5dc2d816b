"""The word encoder the recurrent solvers share: embeddings -> bidirectional GRU."""

from __future__ import annotations

import torch
from torch import nn

from psedual.solvers.batch import Batch
from psedual.solvers.config import SolverConfig


class WordEncoder(nn.Module):
    def __init__(self, n_words: int, config: SolverConfig) -> None:
        super().__init__()
        self.drop = nn.Dropout(config.dropout)
        self.embed = nn.Embedding(n_words, config.embedding_size, padding_idx=0)
        self.gru = nn.GRU(config.embedding_size, config.hidden_size, config.layers, batch_first=True,
                          bidirectional=True, dropout=config.dropout if config.layers > 1 else 0.0)

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """States [B, T, H] with the two directions summed, and the final state [B, H] of
        both directions summed (the published GTS reads the last time step instead, which is
        padding for all but the longest problem of a batch)."""
        x = self.drop(self.embed(batch.words))
        packed = nn.utils.rnn.pack_padded_sequence(x, batch.lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, h_n = self.gru(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=batch.words.shape[1])
        H = self.gru.hidden_size
        return out[..., :H] + out[..., H:], h_n[-2] + h_n[-1]
