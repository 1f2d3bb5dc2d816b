"""Expression encoders: node states [B, L, H] of prefix expressions given as one-hot rows.

Tokens enter as one-hot rows (`Rollout.choices`) times an embedding matrix, not as
ids, so a straight-through sample passes gradient back to the solver's decoder.
The tree structure comes from the hard token ids (structure has no gradient).
"""

from __future__ import annotations

import importlib
import warnings
from typing import NamedTuple

import torch
from torch import nn

from psedual.reexamine.config import EXPRESSION_ENCODERS
from psedual.solvers.tensors import put_rows, to_device


def tree_edges(tokens: list[int], n_ops: int) -> list[tuple[int, int]]:
    """(parent, child) positions of a prefix expression; ids below `n_ops` are binary operators.
    An incomplete expression (cut at the length limit) keeps the edges it has."""
    edges, open_ops = [], []  # operators still missing a child: [position, children seen]
    for pos, tok in enumerate(tokens):
        if open_ops:
            edges.append((open_ops[-1][0], pos))
            open_ops[-1][1] += 1
            if open_ops[-1][1] == 2:
                open_ops.pop()
        if tok < n_ops:
            open_ops.append([pos, 0])
    return edges


def swap_operands(tokens: list[int], n_ops: int, commutative: set[int], flip) -> list[int]:
    """The prefix expression `tokens` with the two operands of each operator in `commutative`
    swapped where `flip()` says so (called once per such operator, in prefix order). An
    incomplete expression is returned as it is."""
    def subtree(pos: int) -> tuple[list[int], int]:
        """(the subtree's tokens with its operands swapped, the position after it)."""
        if pos >= len(tokens):
            raise IndexError
        tok = tokens[pos]
        if tok >= n_ops:
            return [tok], pos + 1
        swap = tok in commutative and flip()
        left, pos = subtree(pos + 1)
        right, pos = subtree(pos)
        return [tok, *(right + left if swap else left + right)], pos

    try:
        out, end = subtree(0)
    except IndexError:
        return list(tokens)
    return out + list(tokens[end:])


ROOT, LEFT, RIGHT = 0, 1, 2
"""A node's place under its parent (a root, or a node cut loose, is ROOT)."""


class Trees(NamedTuple):
    """A batch's expression trees over its real nodes only: a padded [B, L] batch numbers its
    node (b, p) b·L + p, these number the real ones 0..N-1, problem by problem, in order."""

    edges: torch.Tensor
    """[2, E] parent-child edges over the real nodes, both directions (each parent -> child pair,
    in prefix order, then the same pairs child -> parent)."""
    nodes: torch.Tensor
    """[N] each real node's index b·L + p in the padded batch."""
    place: torch.Tensor
    """[B·L] each padded position's place under its parent (ROOT, LEFT or RIGHT child: `- a b` and
    `- b a` differ only here); a root, a node cut loose and padding are ROOT."""


def batch_trees(tokens: torch.Tensor, n_ops: int, ids: list[list[int]] | None = None) -> Trees:
    """The trees of the expressions `tokens` [B, L] (-1-padded output ids). `ids`: the same
    expressions on the host, where the caller has them (saves reading `tokens` back from the device)."""
    B, L = tokens.shape
    pairs, roles, nodes = [], [ROOT] * (B * L), []
    for b, row in enumerate(ids if ids is not None else tokens.tolist()):
        row = [t for t in row if t >= 0]
        first, seen = len(nodes), set()
        for p, c in tree_edges(row, n_ops):
            pairs.append((first + p, first + c))
            roles[b * L + c] = RIGHT if p in seen else LEFT  # an operator's first child is its left
            seen.add(p)
        nodes += range(b * L, b * L + len(row))
    e = torch.tensor(pairs, dtype=torch.long).view(-1, 2).t()
    return Trees(to_device(torch.cat([e, e.flip(0)], 1), tokens.device),
                 to_device(torch.tensor(nodes, dtype=torch.long), tokens.device),
                 to_device(torch.tensor(roles, dtype=torch.long), tokens.device))


def with_self_loops(edges: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """[2, E + num_nodes] `edges` (which hold no self loop: a tree's never do) and then a loop on
    each node, as torch-geometric's `add_remaining_self_loops` orders them, made on the edges'
    device without reading it back."""
    loops = torch.arange(num_nodes, device=edges.device).view(1, -1).repeat(2, 1)
    return torch.cat([edges, loops], dim=1)


class GRUExpressionEncoder(nn.Module):
    """A bidirectional GRU over the prefix tokens, directions summed (each token sees the
    whole expression, as a tree node sees its parent and children in the GCN)."""

    def __init__(self, embedding_size: int, hidden_size: int, n_ops: int, dropout: float) -> None:
        super().__init__()
        self.gru = nn.GRU(embedding_size, hidden_size, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(dropout)

    def forward(self, embedded: torch.Tensor, tokens: torch.Tensor, ids: list[list[int]] | None = None) -> torch.Tensor:
        """Node states [B, L, H] of the expressions `tokens` [B, L] (`ids`: the same on the host)."""
        lengths = (tokens >= 0).sum(1).clamp(min=1).cpu() if ids is None else \
            torch.tensor([max(1, len(row)) for row in ids])
        # sorted here as pack_padded_sequence would sort them, but with the permutation sent to
        # the device without blocking (packing's own copies of it, and back, make the host wait)
        lengths, order = torch.sort(lengths, descending=True)
        x = self.drop(embedded).float().index_select(0, to_device(order, embedded.device))
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
        # in fp32 outside autocast: under any CUDA autocast cuDNN's RNN runs in fp16, which
        # bf16 training has no gradient scaler for
        with torch.autocast(embedded.device.type, enabled=False):
            out, _ = self.gru(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=tokens.shape[1])
        out = out.index_select(0, to_device(torch.argsort(order), embedded.device))  # back to the batch's order
        H = self.gru.hidden_size
        return out[..., :H] + out[..., H:]


class GCNExpressionEncoder(nn.Module):
    """Two GCN layers over the expression tree: parent-child edges in both directions, self
    loops and symmetric normalisation (GCNConv's defaults), ReLU and dropout between. Each node's
    input adds an embedding of its place (root, left or right child): GCNConv's messages carry no
    edge order, so without it `- a b` and `- b a` would give the same states.

    The self loops are added here (`with_self_loops`), not by GCNConv: its default
    (`add_remaining_self_loops`) first drops the loops a graph has by indexing the edges with a
    boolean mask, whose value-dependent size makes the host wait for the GPU: once a layer and
    expression, 4 times a PseDual step (issue 59). A tree has no loops to drop, and the edges are the same
    in the same order (the graph's, then one loop per node), so the output is GCNConv's default,
    bit for bit. The symmetric normalisation is computed here too, once a call for both layers (each
    GCNConv would compute the same edge weights again from the same edges), per input dtype as
    GCNConv computes it (under autocast the second layer's input may be another dtype than the first's).

    Only the expressions' real nodes go through the layers: a sample is padded to the batch's
    longest (up to `max_length_factor` × the longest gold + 1), so on Math23K batches of 64 about
    3 positions in 4 were padding, isolated nodes whose states nothing reads (a key weighs a
    position by its one-hot row, zero past the end). Padding's states are zero; without dropout a
    real node's are the same bits as over the padded batch, and the layers' weight gradients the
    same up to a sum's order (tests/test_reexamine.py). Dropout is drawn over the real nodes only
    (drawing it over every position, to keep a seed's masks, cost 4 ms a draw at Math23K's sizes)."""

    def __init__(self, embedding_size: int, hidden_size: int, n_ops: int, dropout: float) -> None:
        super().__init__()
        # imported here, not at the top: torch-geometric's import takes ~1.8 s (it pulls in
        # torch._dynamo and its datasets), which every CLI command and every trial of a base or
        # GRU arm paid without using it
        with warnings.catch_warnings():  # torch-geometric's import uses the deprecated torch.jit.script
            warnings.simplefilter("ignore", DeprecationWarning)
            from torch_geometric.nn import GCNConv
            from torch_geometric.nn.conv.gcn_conv import gcn_norm
        self.gcn_norm = gcn_norm
        self.n_ops = n_ops
        self.place = nn.Embedding(3, embedding_size)
        self.conv1 = GCNConv(embedding_size, hidden_size, add_self_loops=False, normalize=False)
        self.conv2 = GCNConv(hidden_size, hidden_size, add_self_loops=False, normalize=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, embedded: torch.Tensor, tokens: torch.Tensor, ids: list[list[int]] | None = None) -> torch.Tensor:
        """Node states [B, L, H] of the expressions `tokens` [B, L] (`ids`: the same on the host);
        zero at padding."""
        B, L, _ = embedded.shape
        trees = batch_trees(tokens, self.n_ops, ids)
        N = len(trees.nodes)
        edges = with_self_loops(trees.edges, N)
        weights: dict[torch.dtype, torch.Tensor] = {}

        def normalised(dtype: torch.dtype) -> torch.Tensor:
            """The edges' weights as GCNConv's default normalises them for an input of `dtype`."""
            if dtype not in weights:
                weights[dtype] = self.gcn_norm(edges, None, N, False, False, self.conv1.flow, dtype)[1]
            return weights[dtype]

        x = self.drop((embedded.reshape(B * L, -1) + self.place(trees.place)).index_select(0, trees.nodes))
        x = self.drop(torch.relu(self.conv1(x, edges, normalised(x.dtype))))
        out = self.conv2(x, edges, normalised(x.dtype))
        return put_rows(out.new_zeros(B * L, out.shape[-1]), trees.nodes, out).view(B, L, -1)


def expression_encoder_class(name: str) -> type[nn.Module]:
    """The nn.Module registered as `name` in `config.EXPRESSION_ENCODERS`, imported now."""
    module, _, cls = EXPRESSION_ENCODERS[name].implementation.partition(":")
    return getattr(importlib.import_module(module), cls)
