"""An LLM's reply → our prefix form over the problem's number slots, with our expression
parser (never `eval`); and its slot refilling → which number it put in each slot."""

from __future__ import annotations

import re
from dataclasses import dataclass

from psedual.data.expr import ExpressionError, Node, parse_infix, to_prefix
from psedual.data.numbers import NumberError, parse_number
from psedual.data.record import NUM_TOKEN, Problem

_EXPRESSION = re.compile(r"^\s*\**\s*expression\s*\**\s*:\s*\**\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_SLOT = re.compile(r"^\s*\[?N(\d+)\]?\s*:\s*(.+?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Parsed:
    prefix: tuple[str, ...] | None
    """Prefix tokens over the problem's slots, or None when the reply does not give one."""
    failure: str | None
    """Why not: `no expression line`, `unparseable: ...`, `numbers not in the problem: ...`."""


def problem_text(p: Problem) -> str:
    """The problem as it was written, numbers included."""
    numbers = iter(p.number_texts)
    return " ".join(next(numbers) if t == NUM_TOKEN else t for t in p.tokens)


def masked_text(p: Problem) -> str:
    """The problem with its k-th number shown as the slot [Nk]."""
    slots = iter(range(len(p.num_pos)))
    return " ".join(f"[N{next(slots)}]" if t == NUM_TOKEN else t for t in p.tokens)


def parse_solution(text: str, p: Problem) -> Parsed:
    """The reply's `Expression:` line as a prefix over N0, N1, ...: each number is the first slot
    holding its value; a number the problem does not state makes the reply a failure."""
    m = _EXPRESSION.search(text or "")
    if m is None:
        return Parsed(None, "no expression line")
    expression = m.group(1).split("=")[0].strip().strip("`$")
    try:
        tree = parse_infix(expression, atoms=p.number_texts)
    except ExpressionError as err:
        return Parsed(None, f"unparseable: {err}")
    values = p.values()
    foreign: list[str] = []

    def to_slots(node: Node) -> Node:
        if not node.is_leaf:
            return Node(node.token, to_slots(node.left), to_slots(node.right))
        try:
            value = parse_number(node.token.replace(",", ""))
        except NumberError:
            foreign.append(node.token)
            return node
        k = next((k for k, v in enumerate(values) if v == value), None)
        if k is None:
            foreign.append(node.token)
            return node
        return Node(f"N{k}")

    prefix = tuple(to_prefix(to_slots(tree)))
    if foreign:
        return Parsed(None, f"numbers not in the problem: {', '.join(foreign)}")
    return Parsed(prefix, None)


def parse_refill(text: str, n_slots: int) -> dict[int, str]:
    """Slot → the number (text) the reply put there, or "none"; slots it skipped are absent."""
    out: dict[int, str] = {}
    for m in _SLOT.finditer(text or ""):
        k = int(m.group(1))
        if k < n_slots:
            out[k] = m.group(2).strip().strip(".").lower()
    return out
