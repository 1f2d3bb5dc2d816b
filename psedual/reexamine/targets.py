"""What each masked number slot should be filled with, given an expression.

Every number of the problem is masked and queried, not only those the expression
uses (the published code queries only the gold expression's quantities). A slot
points at the expression quantity N_k holding its number, where any k whose
value equals the slot's counts (a number stated twice may be written as either
slot). A slot whose number the expression does not use is trained towards a
learned "unused" key: telling used from unused numbers is part of reexamining.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from psedual.data.record import Problem
from psedual.solvers.tensors import to_device
from psedual.data.expr import UNUSED  # canonical answer of a slot whose number the expression does not use


def used_slots(tokens: Sequence[int], slot0: int) -> set[int]:
    """Slot indices an expression uses (`N12` is slot 12: ids are parsed, not strings)."""
    return {t - slot0 for t in tokens if t >= slot0}


def canonical(k: int, used: set[int], values: Sequence) -> int:
    """The smallest used slot with slot k's value, or UNUSED."""
    same = [j for j in sorted(used) if values[j] == values[k]]
    return same[0] if same else UNUSED


def allowed_targets(problems: Sequence[Problem], gold: torch.Tensor | Sequence[Sequence[int]], slot0: int, S: int,
                    device: torch.device | None = None) -> torch.Tensor:
    """[B, S, S + 1] True where column k (a slot, or S for "unused") is a right answer for
    slot i under the gold expressions `gold`: [B, L] -1-padded output ids, or their rows on the
    host (`Batch.ids`: nothing is read back from the device). On `device`, else `gold`'s."""
    rows = gold.tolist() if isinstance(gold, torch.Tensor) else gold
    allowed = torch.zeros(len(problems), S, S + 1, dtype=torch.bool)
    for b, (p, row) in enumerate(zip(problems, rows)):
        used, values = used_slots([t for t in row if t >= 0], slot0), p.values()
        for i in range(len(p.numbers)):
            same = [j for j in used if values[j] == values[i]]
            allowed[b, i, same or [S]] = True
    return to_device(allowed, device if device is not None else gold.device)


def canonical_answers(problems: Sequence[Problem], gold: torch.Tensor, picked: torch.Tensor,
                      slot0: int) -> tuple[list[list[int]], list[list[int]]]:
    """Per problem, the predicted and the right fillings as canonical slots (UNUSED for
    "unused"), comparable with `metrics.infilling_accuracy`. `picked` [B, S] holds column
    indices of the pointer (S meaning "unused")."""
    S = picked.shape[1]
    predicted, right = [], []
    for p, row, cols in zip(problems, gold.tolist(), picked.tolist()):
        used, values = used_slots([t for t in row if t >= 0], slot0), p.values()
        n = len(p.numbers)
        predicted.append([UNUSED if c == S else canonical(c, used, values) for c in cols[:n]])
        right.append([canonical(i, used, values) for i in range(n)])
    return predicted, right
