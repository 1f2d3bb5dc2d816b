"""What an infiller could read besides the expression's structure: the probes behind issue 41.

A quantity's slot name `N_k` is the infilling answer for slot k, so a task that shows names can
be solved without reading the expression. These functions make the checks that tell: a rule
with no model (`name_rule`), the gold expression scrambled (`scrambled`: operators redrawn,
leaves shuffled; the quantities used stay the same, so the right fillings do), and how often
the leaves already list the quantities in text order (`in_text_order`: a second, weaker
shortcut, "first leaf, first slot"). Pure functions of the records: no torch.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from psedual.data.expr import UNUSED
from psedual.data.record import Problem


def _slot(token: str) -> int | None:
    """k for a quantity token `N_k` (parsed: `N12` is 12), else None."""
    return int(token[1:]) if token[:1] == "N" and token[1:].isdigit() else None


def used(prefix: Sequence[str]) -> set[int]:
    return {k for k in map(_slot, prefix) if k is not None}


def right_fillings(problem: Problem) -> list[int]:
    """Each slot's right filling in canonical form (`reexamine.targets.canonical`): the smallest
    used slot with its value, else UNUSED."""
    values, u = problem.values(), sorted(used(problem.prefix))
    return [next((j for j in u if values[j] == values[i]), UNUSED) for i in range(len(problem.numbers))]


def name_rule(problem: Problem) -> tuple[list[int], list[int]]:
    """(predicted, right) of the rule with no model: slot i gets N_i if the gold uses N_i, else
    unused. It is wrong only where a number stated twice is used under its other slot."""
    right, u = right_fillings(problem), used(problem.prefix)
    return [right[i] if i in u else UNUSED for i in range(len(right))], right


def scrambled(prefix: Sequence[str], operators: Sequence[str], rng: random.Random) -> tuple[str, ...]:
    """The same tree shape with every operator redrawn from `operators` and the leaves (quantities
    and constants) shuffled among the leaf positions: the quantities used, and so the right
    fillings, stay; what the structure said of them does not."""
    ops = set(operators)
    leaves = [t for t in prefix if t not in ops]
    rng.shuffle(leaves)
    it = iter(leaves)
    return tuple(rng.choice(operators) if t in ops else next(it) for t in prefix)


def in_text_order(prefix: Sequence[str]) -> bool:
    """Whether the expression's distinct quantities, in prefix order, are in the order the
    problem states them (N0 before N1 ...)."""
    first: list[int] = []
    for k in map(_slot, prefix):
        if k is not None and k not in first:
            first.append(k)
    return first == sorted(first)
