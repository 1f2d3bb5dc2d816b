"""The word encoder the recurrent solvers share: embeddings -> bidirectional GRU.

The GRU's parameters live in an `nn.GRU` (so checkpoints keep its names), but the
recurrence runs here, because the packed-sequence path of `nn.GRU` on CPU is slow
where it does not need to be (measured by `bench/profile_step.py`):
- both directions step together, one batched matmul per time step instead of two;
- the reverse direction reads each problem's words back to front within its own
  length, so both directions shrink the batch at the same steps (problems are sorted
  by length, longest first, and step t runs the problems longer than t);
- the input half of every gate is one matmul over all words of the batch per layer;
- the outputs are gathered back to the padded layout with one index, not the
  per-length slice copies of `pad_packed_sequence`, whose backward clones the whole
  output once per distinct length.
The equations are `nn.GRU`'s (gate order r, z, n; r applied to `W_hn h + b_hn`);
tests check the outputs and gradients equal it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from psedual.solvers.batch import Batch
from psedual.solvers.config import ProblemVector, SolverConfig
from psedual.solvers.tensors import to_device


@dataclass
class Layout:
    """Where each word of a padded [B, T] batch goes when both directions run packed.

    Packed row k holds sorted problem `i` at step `t` (rows grouped by step); the
    forward direction reads word t there, the reverse direction word `length - 1 - t`."""

    steps: list[int]
    """Problems still running at each step (non-increasing)."""
    forward: torch.Tensor
    """[N] flat padded index (b * T + t) the forward direction reads at each packed row."""
    reverse: torch.Tensor
    """[N] flat padded index the reverse direction reads at each packed row."""
    mirror: torch.Tensor
    """[N] the packed row at which the other direction reads the same word (an involution)."""
    last: torch.Tensor
    """[B] packed row of each problem's final step."""
    unpack: torch.Tensor
    """[B * T] packed row of each padded position, N (a zero row) beyond the problem's length."""

    @staticmethod
    def of(lengths: torch.Tensor, T: int, device: torch.device) -> Layout:
        lengths, order = torch.sort(lengths.cpu(), descending=True, stable=True)
        span = torch.arange(int(lengths[0]))
        per_step = (lengths.unsqueeze(0) > span.unsqueeze(1)).sum(1)
        start = torch.cat([per_step.new_zeros(1), per_step.cumsum(0)[:-1]])
        i = torch.cat([torch.arange(int(n)) for n in per_step])  # sorted problem of each packed row
        t = torch.repeat_interleave(span, per_step)  # step of each packed row
        b, back = order[i], lengths[i] - 1 - t
        last = torch.empty_like(order)
        last[order] = start[lengths - 1] + torch.arange(len(lengths))
        unpack = torch.full((len(lengths) * T,), len(i), dtype=torch.long)
        unpack[b * T + t] = torch.arange(len(i))
        rows = (b * T + t, b * T + back, start[back] + i, last, unpack)
        # one copy to the device, not one blocking copy per index
        moved = to_device(torch.cat(rows), device).split([len(r) for r in rows])
        return Layout(per_step.tolist(), *moved)


def bidirectional_gru(gru: nn.GRU, x: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`gru` (bidirectional, batch-first) over `x` [B, T, E] with each problem's own length:
    the last layer's states [B, T, H] with the two directions summed (zeros beyond a length),
    and the two directions' final states [2, B, H] (forward, then reverse)."""
    B, T, _ = x.shape
    H = gru.hidden_size
    at = Layout.of(lengths, T, x.device)
    words = x.reshape(B * T, -1)
    inputs = torch.stack([words.index_select(0, at.forward), words.index_select(0, at.reverse)])  # [2, N, E]: forward, reverse
    for layer in range(gru.num_layers):
        names = [f"{kind}_l{layer}{side}" for side in ("", "_reverse")
                 for kind in ("weight_ih", "bias_ih", "weight_hh", "bias_hh")]
        w_ih, b_ih, w_hh, b_hh = (torch.stack([getattr(gru, names[k]), getattr(gru, names[k + 4])]) for k in range(4))
        gates_in = torch.baddbmm(b_ih.unsqueeze(1), inputs, w_ih.transpose(1, 2))  # [2, N, 3H]
        w_hh, b_hh = w_hh.transpose(1, 2), b_hh.unsqueeze(1)
        h = x.new_zeros(2, at.steps[0], H)
        states = []
        # split, not slice: a slice's backward allocates the whole [2, N, 3H] once per step
        for n, g in zip(at.steps, gates_in.split(at.steps, 1)):
            h = h[:, :n]
            gh = torch.baddbmm(b_hh, h, w_hh)
            rz = torch.sigmoid(g[..., : 2 * H] + gh[..., : 2 * H])
            candidate = torch.tanh(g[..., 2 * H:] + rz[..., :H] * gh[..., 2 * H:])
            h = candidate + rz[..., H:] * (h - candidate)
            states.append(h)
        out = torch.cat(states, 1)  # [2, N, H]
        if layer + 1 < gru.num_layers:
            both = F.dropout(torch.cat([out[0], out[1].index_select(0, at.mirror)], -1), gru.dropout, gru.training)
            inputs = torch.stack([both, both.index_select(0, at.mirror)])
    summed = out[0] + out[1].index_select(0, at.mirror)
    padded = torch.cat([summed, summed.new_zeros(1, H)]).index_select(0, at.unpack).view(B, T, H)
    return padded, out.index_select(1, at.last)


class WordEncoder(nn.Module):
    def __init__(self, n_words: int, config: SolverConfig, problem_vector: ProblemVector = "final_state") -> None:
        """`problem_vector`: how `forward` reads the problem vector (`SolverConfig.problem_vector`);
        the solvers that honour the setting pass it, other users of the encoder keep `final_state`."""
        super().__init__()
        self.problem_vector = problem_vector
        self.drop = nn.Dropout(config.dropout)
        self.embed = nn.Embedding(n_words, config.embedding_size, padding_idx=0)
        self.gru = nn.GRU(config.embedding_size, config.hidden_size, config.layers, batch_first=True,
                          bidirectional=True, dropout=config.dropout if config.layers > 1 else 0.0)

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """States [B, T, H] with the two directions summed, and the problem vector [B, H]: the
        final state of both directions summed; with `published` in training, the forward half
        is zero for every problem shorter than the batch's longest (see `published_read`)."""
        states, (forward, reverse) = bidirectional_gru(self.gru, self.drop(self.embed(batch.words)), batch.lengths)
        if self.problem_vector == "published" and self.training:
            forward = published_read(forward, batch.lengths)
        return states, forward + reverse


def published_read(forward: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The forward half of the published encoders' problem vector in training, from the forward
    direction's final states [B, H]: `pade_outputs[-1, :, :H]` (GTS src/models.py:186) reads the
    last time step of the padded batch, the true final state of the longest problems and the
    padding's zeros for all others. (Its reverse half, `pade_outputs[0, :, H:]`, is the true final
    state of every problem.) At test the published code decodes batches of one, where the last
    step is the problem's own: there the read is the final state, and this is not called. Under DDP
    the batch is each rank's share (the published code has one process), so its longest is the share's."""
    longest = (lengths == lengths.max()).to(forward.device).unsqueeze(1)
    return torch.where(longest, forward, torch.zeros_like(forward))
