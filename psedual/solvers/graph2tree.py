"""Graph2Tree (Zhang et al., ACL 2020): GTS whose encoder states pass through a graph
encoder before the tree decoder reads them.

Graphs over a problem's words (each with self loops, row-normalised), one GCN
(2 layers) per graph, their outputs concatenated, layer-normed and added back
to the encoder states, then a position-wise feed-forward layer with a residual:
1. quantity cell graph: each number word linked both ways to the words of its
   quantity cell within 3 positions. Cells are Math23K's `group_num` (remapped
   to our tokens, `Problem.cells`); datasets without cells use the window the
   Math23K cells mostly are: the word before, the number, and the word after.
2. quantity comparison, greater: number word i -> j when value_i > value_j.
3. quantity comparison, lower: number word i -> j when value_i <= value_j (i != j).
4. quantity graph: every number word linked to every other (the published code's
   fourth, attribute-between graph is approximated by this).
Everything after the graph encoder is GTS unchanged. The problem vector is read from the
word encoder before the graphs, as published (`problem_vector`: see `gts` and
`encoder.published_read`; the published Graph2Tree's mawps/src/models.py:190 is GTS's line).
"""

from __future__ import annotations

from functools import lru_cache

import torch
from torch import nn

from psedual.data.record import Problem
from psedual.solvers.batch import Batch
from psedual.solvers.config import SolverConfig
from psedual.solvers.gts import GTS, Encoded
from psedual.solvers.vocab import Vocab

N_GRAPHS = 4


def cells_of(problem) -> list[int]:
    if problem.cells:
        return list(problem.cells)
    n = len(problem.tokens)
    return sorted({i for p in problem.num_pos for i in (p - 1, p, p + 1) if 0 <= i < n})


@lru_cache(maxsize=None)
def graph_edges(problem: Problem) -> torch.Tensor:
    """[3, E] (graph, row, column) of every edge of the problem's graphs, self loops included:
    built once per problem (the loops are per number pair), then reused every epoch."""
    edges: set[tuple[int, int, int]] = set()
    values = problem.values()
    cells = cells_of(problem)
    for i, pi in enumerate(problem.num_pos):
        for c in cells:
            if abs(c - pi) < 4:
                edges |= {(0, pi, c), (0, c, pi)}
        for j, pj in enumerate(problem.num_pos):
            if i != j:
                edges |= {(1 if values[i] > values[j] else 2, pi, pj), (3, pi, pj)}
    edges |= {(g, k, k) for g in range(N_GRAPHS) for k in range(len(problem.tokens))}
    return torch.tensor(sorted(edges), dtype=torch.long).view(-1, 3).t()


def _batch_edges(batch: Batch) -> torch.Tensor:
    """[4, E] (example, graph, row, column) of every edge of a batch's problems."""
    edges = [graph_edges(p) for p in batch.problems]
    example = torch.repeat_interleave(torch.arange(len(edges)), torch.tensor([e.shape[1] for e in edges]))
    return torch.cat([example.unsqueeze(0), torch.cat(edges, 1)])


def build_graphs(batch: Batch) -> torch.Tensor:
    """[B, N_GRAPHS, T, T] row-normalised adjacency matrices with self loops: the dense form of
    what `graph_operators` applies (for inspection and tests; the encoder never builds it)."""
    B, T = batch.words.shape
    example, graph, row, col = _batch_edges(batch)
    adj = torch.zeros(B, N_GRAPHS, T, T)
    adj[example, graph, row, col] = 1.0
    return adj / adj.sum(-1, keepdim=True).clamp(min=1.0)


Operator = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
"""One graph's row-normalised adjacency over a batch's real words: (target, source, weight) per
edge, so that `A @ h` is `h[source] * weight` summed into `target` (see `propagate`)."""


def graph_operators(batch: Batch, rows: torch.Tensor) -> list[Operator]:
    """Each graph's operator over the batch's real words, numbered as `rows` (their flat
    b * T + t positions) orders them. The graphs are sparse (a self loop per word plus a few
    edges per number), so this replaces a dense [B, T, T] product per graph and layer."""
    B, T = batch.words.shape
    example, graph, row, col = _batch_edges(batch)
    compact = torch.full((B * T,), -1, dtype=torch.long)
    compact[rows.cpu()] = torch.arange(len(rows))
    target, source = compact[example * T + row], compact[example * T + col]
    key = graph * len(rows) + target  # (graph, word): its degree, self loop included
    weight = 1.0 / torch.bincount(key, minlength=N_GRAPHS * len(rows)).float()[key]
    device = rows.device
    return [(target[graph == g].to(device), source[graph == g].to(device), weight[graph == g].to(device))
            for g in range(N_GRAPHS)]


def propagate(h: torch.Tensor, op: Operator) -> torch.Tensor:
    """`A @ h` for h [N, D] over the batch's real words."""
    target, source, weight = op
    return h.new_zeros(h.shape).index_add_(0, target, h.index_select(0, source) * weight.unsqueeze(1).to(h.dtype))


class GCN(nn.Module):
    def __init__(self, dim: int, hidden: int, out: int, dropout: float) -> None:
        super().__init__()
        self.w1, self.w2 = nn.Linear(dim, hidden), nn.Linear(hidden, out)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, op: Operator) -> torch.Tensor:
        x = torch.relu(propagate(self.w1(x), op))
        return propagate(self.w2(self.drop(x)), op)


class Graph2Tree(GTS):
    name = "graph2tree"

    def __init__(self, vocab: Vocab, config: SolverConfig = SolverConfig()) -> None:
        super().__init__(vocab, config)
        H = config.hidden_size
        if H % N_GRAPHS:
            raise ValueError(f"graph2tree needs hidden_size divisible by {N_GRAPHS}, got {H}")
        self.gcns = nn.ModuleList(GCN(H, H, H // N_GRAPHS, config.dropout) for _ in range(N_GRAPHS))
        self.norm = nn.LayerNorm(H)
        self.ff = nn.Sequential(nn.Linear(H, H), nn.ReLU(), nn.Dropout(config.dropout), nn.Linear(H, H))

    def encode(self, batch: Batch) -> Encoded:
        outputs, problem = self.encode_words(batch)
        B, T, H = outputs.shape
        # real words only: a batch's padding is often half its positions, and has no edges
        rows = (batch.words != 0).view(-1).nonzero().squeeze(1)
        words = outputs.reshape(B * T, H).index_select(0, rows)
        graphs = torch.cat([gcn(words, op) for gcn, op in zip(self.gcns, graph_operators(batch, rows))], -1)
        x = self.norm(graphs) + words
        x = self.ff(x) + x
        return self.with_candidates(batch, x.new_zeros(B * T, H).index_copy(0, rows, x).view(B, T, H), problem)
