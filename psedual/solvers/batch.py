"""Problems to tensors: padded words, number slots, and the gold expression trees
flattened into node arrays, so a tree decoder can process all nodes of one depth
(or one height) of a whole batch in a single step."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import torch
import torch.nn.functional as F

from psedual.data.expr import OPERATORS
from psedual.data.record import Problem
from psedual.solvers.tensors import padded_ids, to_device
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
    slots: torch.Tensor
    """[n] flat index b * S + k of every real slot, in order: a gather where indexing by
    `num_mask` would make the GPU wait for its count."""
    targets: torch.Tensor | None = None
    """[B, L] gold output ids in prefix order, -1-padded."""
    tree: TreeIndex | None = None
    ids: list[list[int]] | None = None
    """The gold output ids on the host (`targets` without padding), for code that would
    otherwise read `targets` back from the device."""

    def to(self, device: torch.device | str) -> Batch:
        """This batch on `device` (itself on CPU). Host tensors are pinned first so the copies
        run asynchronously; `lengths` stays on CPU, where sequence packing reads it."""
        device = torch.device(device)
        if device.type == "cpu":
            return self
        return replace(self, words=to_device(self.words, device), num_pos=to_device(self.num_pos, device),
                       num_mask=to_device(self.num_mask, device), slots=to_device(self.slots, device),
                       tree=None if self.tree is None else self.tree.to(device),
                       targets=None if self.targets is None else to_device(self.targets, device))


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
    position: torch.Tensor
    """The node's position in its prefix expression."""
    allowed: torch.Tensor
    """[N, V] True for every output id that counts as this node's gold token: a number
    slot whose value occurs several times in the text may be produced by any of them."""
    groups: torch.Tensor
    """Node groups a decoder walks level by level (see `group`), one after another: built on
    the host, so finding them on the device (`nonzero`, a max) makes no sync."""
    spans: dict[str, tuple[int, int]]
    """Each group's [start, end) in `groups`: `leaves`, `roots`, `height{h}` (h >= 1: the
    operators of that height), `depth{d}` (the nodes of that depth), `ops{d}` (where the
    operators are among `depth{d}`'s nodes), `lone{d}` and `right{d}` (where the nodes without and
    with a left sibling are among them) and `order{d}` (their `sides.Sides.order`)."""
    heights: int
    """The tallest tree's height (0 when every expression is one number)."""
    depths: int
    """Depths in use (the deepest node's depth + 1)."""

    def group(self, name: str) -> torch.Tensor:
        start, end = self.spans[name]
        return self.groups[start:end]

    def to(self, device: torch.device) -> TreeIndex:
        return replace(self, **{f.name: to_device(getattr(self, f.name), device) for f in fields(self)
                                if isinstance(getattr(self, f.name), torch.Tensor)})


def gold_tokens(problems: Sequence[Problem]) -> int:
    """Tokens of the problems' gold expressions: the terms a token-level loss averages over."""
    return sum(len(p.prefix) for p in problems)


def preferred_slot_loss(logits: torch.Tensor, tree: TreeIndex) -> torch.Tensor:
    """Cross-entropy of `logits` (one row per gold token, `tree`'s order) towards, at each token,
    the allowed id the model already scores highest: a repeated number may be produced from any
    of its slots, and the one the model prefers is trained (as the published GTS does)."""
    target = logits.detach().masked_fill(~tree.allowed, float("-inf")).argmax(-1)
    return F.cross_entropy(logits, target)


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
    slots = torch.tensor([b * S + k for b, p in enumerate(problems) for k in range(len(p.num_pos))], dtype=torch.long)
    batch = Batch(tuple(problems), w, torch.tensor([len(i) for i in words]), num_pos, num_mask, slots)
    if with_targets:
        ids = [vocab.output_ids(p.prefix, p.id) for p in problems]
        batch.targets = padded_ids(ids)
        batch.tree = _tree_index(problems, ids, vocab)
        batch.ids = ids
    return batch


def _tree_index(problems: Sequence[Problem], ids: list[list[int]], vocab: Vocab) -> TreeIndex:
    cols: dict[str, list[int]] = {k: [] for k in ("example", "token", "depth", "height", "parent", "is_right",
                                                  "left", "right", "left_sibling", "position")}
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
            cols["position"].append(t)
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
    tensors = {k: torch.tensor(v, dtype=torch.long) for k, v in cols.items()}
    return TreeIndex(**tensors, allowed=allowed, **_groups(tensors, len(vocab.operators)))


def _groups(cols: dict[str, torch.Tensor], n_ops: int) -> dict:
    """`TreeIndex`'s groups, spans, heights and depths from its node columns (on the host)."""
    is_op = cols["token"] < n_ops
    heights = int(cols["height"].max()) if len(is_op) else 0
    depths = int(cols["depth"].max()) + 1 if len(is_op) else 0
    named = {"leaves": (~is_op).nonzero().squeeze(1), "roots": (cols["parent"] < 0).nonzero().squeeze(1)}
    for h in range(1, heights + 1):
        named[f"height{h}"] = (cols["height"] == h).nonzero().squeeze(1)
    for d in range(depths):
        at = (cols["depth"] == d).nonzero().squeeze(1)
        named[f"depth{d}"], named[f"ops{d}"] = at, is_op[at].nonzero().squeeze(1)
        right = cols["left_sibling"][at] >= 0
        named[f"lone{d}"], named[f"right{d}"] = (~right).nonzero().squeeze(1), right.nonzero().squeeze(1)
        named[f"order{d}"] = torch.cat([named[f"lone{d}"], named[f"right{d}"]]).argsort()
    spans, start = {}, 0
    for name, index in named.items():
        spans[name] = (start, start + len(index))
        start += len(index)
    return {"groups": torch.cat(list(named.values())), "spans": spans, "heights": heights, "depths": depths}
