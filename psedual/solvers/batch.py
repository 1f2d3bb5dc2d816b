"""Problems to tensors: padded words, number slots, and the gold expression trees
flattened into node arrays, so a tree decoder can process all nodes of one depth
(or one height) of a whole batch in a single step."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import torch

from psedual.data.expr import OPERATORS
from psedual.data.record import Problem
from psedual.solvers.vocab import Vocab


@dataclass
class Batch:
    problems: tuple[Problem, ...]
    words: torch.Tensor
    """[B, T] word ids, 0-padded."""
    lengths: torch.Tensor
    """[B] number of words (on CPU, as packing wants)."""
    num_pos: torch.Tensor
    """[B, S] word index of each number slot (0 where padded)."""
    num_mask: torch.Tensor
    """[B, S] True for a real slot."""
    targets: torch.Tensor | None = None
    """[B, L] gold output ids in prefix order, -1-padded."""
    tree: TreeIndex | None = None

    def to(self, device: torch.device | str) -> Batch:
        """This batch on `device` (itself on CPU). Host tensors are pinned first so the copies
        run asynchronously; `lengths` stays on CPU, where sequence packing reads it."""
        device = torch.device(device)
        if device.type == "cpu":
            return self
        tree = None if self.tree is None else TreeIndex(**{f.name: _to(getattr(self.tree, f.name), device)
                                                           for f in fields(TreeIndex)})
        return replace(self, words=_to(self.words, device), num_pos=_to(self.num_pos, device),
                       num_mask=_to(self.num_mask, device), tree=tree,
                       targets=None if self.targets is None else _to(self.targets, device))


def _to(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    if device.type == "cuda" and t.device.type == "cpu":
        t = t.pin_memory()
    return t.to(device, non_blocking=True)


@dataclass
class TreeIndex:
    """The gold trees of a batch as flat node arrays (node n of example `example[n]`)."""

    example: torch.Tensor
    token: torch.Tensor
    depth: torch.Tensor
    height: torch.Tensor
    """0 for leaves; 1 + max child height for operators."""
    parent: torch.Tensor
    """Flat index of the parent, -1 for roots."""
    is_right: torch.Tensor
    left: torch.Tensor
    """Flat index of the left child (operators), else -1."""
    right: torch.Tensor
    left_sibling: torch.Tensor
    """For a right child, the flat index of its left sibling; else -1."""
    allowed: torch.Tensor
    """[N, V] True for every output id that counts as this node's gold token: a number
    slot whose value occurs several times in the text may be produced by any of them."""


def gold_tokens(problems: Sequence[Problem]) -> int:
    """Tokens of the problems' gold expressions: the terms a token-level loss averages over."""
    return sum(len(p.prefix) for p in problems)


def collate(problems: Sequence[Problem], vocab: Vocab, with_targets: bool = True) -> Batch:
    words = [vocab.word_ids(p) for p in problems]
    T = max(map(len, words))
    S = max(1, max(len(p.numbers) for p in problems))
    w = torch.zeros(len(problems), T, dtype=torch.long)
    num_pos = torch.zeros(len(problems), S, dtype=torch.long)
    num_mask = torch.zeros(len(problems), S, dtype=torch.bool)
    for b, (ids, p) in enumerate(zip(words, problems)):
        w[b, : len(ids)] = torch.tensor(ids)
        num_pos[b, : len(p.num_pos)] = torch.tensor(p.num_pos, dtype=torch.long)
        num_mask[b, : len(p.num_pos)] = True
    batch = Batch(tuple(problems), w, torch.tensor([len(i) for i in words]), num_pos, num_mask)
    if with_targets:
        ids = [vocab.output_ids(p.prefix, p.id) for p in problems]
        L = max(map(len, ids))
        batch.targets = torch.full((len(problems), L), -1, dtype=torch.long)
        for b, t in enumerate(ids):
            batch.targets[b, : len(t)] = torch.tensor(t)
        batch.tree = _tree_index(problems, ids, vocab)
    return batch


def _tree_index(problems: Sequence[Problem], ids: list[list[int]], vocab: Vocab) -> TreeIndex:
    cols: dict[str, list[int]] = {k: [] for k in ("example", "token", "depth", "height", "parent", "is_right",
                                                  "left", "right", "left_sibling")}
    allowed_rows: list[list[int]] = []
    slot0 = vocab.num_start + len(vocab.constants)
    for b, (p, seq) in enumerate(zip(problems, ids)):
        base = len(cols["token"])
        values = p.values()
        stack: list[list[int]] = []  # [flat index of an operator, children seen]
        for t, tok in enumerate(p.prefix):
            n = base + t
            parent = stack[-1][0] if stack else -1
            is_right = bool(stack) and stack[-1][1] == 1
            if stack:
                cols["left" if not is_right else "right"][stack[-1][0]] = n
                stack[-1][1] += 1
            cols["example"].append(b)
            cols["token"].append(seq[t])
            cols["depth"].append(len(stack))
            cols["parent"].append(parent)
            cols["is_right"].append(int(is_right))
            cols["left"].append(-1)
            cols["right"].append(-1)
            cols["left_sibling"].append(cols["left"][parent] if is_right else -1)
            cols["height"].append(0)
            if tok in OPERATORS:
                stack.append([n, 0])
            while stack and stack[-1][1] == 2:
                stack.pop()
            if seq[t] >= slot0:
                k = seq[t] - slot0
                allowed_rows.append([slot0 + j for j, v in enumerate(values) if v == values[k]])
            else:
                allowed_rows.append([seq[t]])
        for t in reversed(range(len(p.prefix))):  # children come after parents in prefix order
            n = base + t
            if cols["left"][n] >= 0:
                cols["height"][n] = 1 + max(cols["height"][cols["left"][n]], cols["height"][cols["right"][n]])
    allowed = torch.zeros(len(allowed_rows), len(vocab.output_tokens), dtype=torch.bool)
    for n, row in enumerate(allowed_rows):
        allowed[n, row] = True
    return TreeIndex(**{k: torch.tensor(v, dtype=torch.long) for k, v in cols.items()}, allowed=allowed)
