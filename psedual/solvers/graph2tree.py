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
Everything after the graph encoder is GTS unchanged.
"""

from __future__ import annotations

import torch
from torch import nn

from psedual.solvers.batch import Batch
from psedual.solvers.gts import GTS, Encoded, GTSConfig
from psedual.solvers.vocab import Vocab

N_GRAPHS = 4


def cells_of(problem) -> list[int]:
    if problem.cells:
        return list(problem.cells)
    n = len(problem.tokens)
    return sorted({i for p in problem.num_pos for i in (p - 1, p, p + 1) if 0 <= i < n})


def build_graphs(batch: Batch) -> torch.Tensor:
    """[B, N_GRAPHS, T, T] row-normalised adjacency matrices with self loops."""
    B, T = batch.words.shape
    adj = torch.zeros(B, N_GRAPHS, T, T)
    for b, p in enumerate(batch.problems):
        values = p.values()
        for i, pi in enumerate(p.num_pos):
            for c in cells_of(p):
                if abs(c - pi) < 4:
                    adj[b, 0, pi, c] = adj[b, 0, c, pi] = 1.0
            for j, pj in enumerate(p.num_pos):
                if i != j:
                    adj[b, 1 if values[i] > values[j] else 2, pi, pj] = 1.0
                    adj[b, 3, pi, pj] = 1.0
        n = len(p.tokens)
        adj[b, :, range(n), range(n)] = 1.0
    return adj / adj.sum(-1, keepdim=True).clamp(min=1.0)


class GCN(nn.Module):
    def __init__(self, dim: int, hidden: int, out: int, dropout: float) -> None:
        super().__init__()
        self.w1, self.w2 = nn.Linear(dim, hidden), nn.Linear(hidden, out)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        x = self.drop(torch.relu(adj @ self.w1(x)))
        return adj @ self.w2(x)


class Graph2Tree(GTS):
    name = "graph2tree"

    def __init__(self, vocab: Vocab, config: GTSConfig = GTSConfig()) -> None:
        super().__init__(vocab, config)
        H = config.hidden_size
        if H % N_GRAPHS:
            raise ValueError(f"graph2tree needs hidden_size divisible by {N_GRAPHS}, got {H}")
        self.gcns = nn.ModuleList(GCN(H, H, H // N_GRAPHS, config.dropout) for _ in range(N_GRAPHS))
        self.norm = nn.LayerNorm(H)
        self.ff = nn.Sequential(nn.Linear(H, H), nn.ReLU(), nn.Dropout(config.dropout), nn.Linear(H, H))

    def encode(self, batch: Batch) -> Encoded:
        outputs, problem = self.encode_words(batch)
        adj = build_graphs(batch).to(outputs.device)
        graphs = torch.cat([gcn(outputs, adj[:, g]) for g, gcn in enumerate(self.gcns)], -1)
        x = self.norm(graphs) + outputs
        x = (self.ff(x) + x) * (batch.words != 0).unsqueeze(-1)
        return self.with_candidates(batch, x, problem)
