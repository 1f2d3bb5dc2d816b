"""Which rows of a goal-driven tree decoder's step have a finished left sibling subtree, known on the host.

A goal is gated one of two ways (`GTS.predict`): alone (a root or a left child), or with its left
sibling's subtree (a right child), by layers of different sizes. Told which rows are which, each pair of
gate layers runs on its own rows only; told by a tensor on the device instead, both run on every row
and one is kept, which reads nothing back to the host (the masked rollout's way). The teacher-forced
pass, the rows rollout and beam search know each row's side on the host already.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from psedual.solvers.tensors import to_device


class Sides(NamedTuple):
    """A step's rows split by whether they have a left sibling subtree."""

    lone: torch.Tensor
    """[R1] the rows without one (roots and left children)."""
    with_left: torch.Tensor
    """[R2] the rows with one (right children)."""
    order: torch.Tensor
    """[R1 + R2] row r's place among the lone rows' outputs followed by the with-left rows'."""


def sides_of(has_left: list[bool], device: torch.device) -> Sides:
    """`Sides` of rows whose left subtrees the host holds (`has_left[r]`), on `device`."""
    lone = [r for r, h in enumerate(has_left) if not h]
    with_left = [r for r, h in enumerate(has_left) if h]
    order = [0] * len(has_left)
    for place, r in enumerate(lone + with_left):
        order[r] = place
    flat = to_device(torch.tensor(lone + with_left + order, dtype=torch.long), device)  # one copy, not three
    return Sides(flat[:len(lone)], flat[len(lone):len(has_left)], flat[len(has_left):])
