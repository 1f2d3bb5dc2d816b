"""The paper's metrics: expression and value accuracy, number-infilling accuracy and
perfect-match ratio.

Expression accuracy comes in two definitions, both kept: strict (token for token over
slot names, `N0` ≠ `N1` even when both hold 0.25) and by values (the published code's:
the expressions are equal after each slot is replaced by its number). Infilling accuracy
and perfect match likewise: over every masked slot (a slot the expression does not use
must be filled "unused"; the paper's Table 4 "Acc", "over all the masked numbers in the
dataset"), or over the slots the gold expression uses. Plain Python over problems and predictions (no torch), so the
trainer and `psedual llm` share them; `analysis/report/summaries.py` applies the same definitions to
the predictions table.

Value accuracy compares a predicted expression's value, over the problem's
numbers, with the source's gold *answer* (within `value.VALUE_TOLERANCE`), not
with the gold expression's value: the few problems whose gold expression
disagrees with their answer (`Problem.answer_agrees`) count as the source says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from psedual.data.expr import SLOT, UNUSED
from psedual.data.record import Problem
from psedual.data.value import try_evaluate, values_equal


@dataclass(frozen=True)
class Accuracy:
    correct: int
    total: int

    @property
    def value(self) -> float:
        return self.correct / self.total if self.total else 0.0

    def __str__(self) -> str:
        return f"{100 * self.value:.2f}% ({self.correct}/{self.total})"


def _pairs(predicted: Sequence, gold: Sequence, what: str) -> zip:
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predictions for {len(gold)} {what}")
    return zip(predicted, gold)


def expression_correct(predicted: Sequence[str], problem: Problem) -> bool:
    """The predicted prefix is token for token the gold prefix."""
    return tuple(predicted) == problem.prefix


def _with_values(prefix: Sequence[str], problem: Problem) -> tuple[str, ...] | None:
    """The prefix with each slot replaced by its number (canonical, so equal values are equal
    strings); None if a slot is out of range."""
    out = []
    for token in prefix:
        slot = SLOT.fullmatch(token)
        if slot is None:
            out.append(token)
        elif int(slot.group(1)) < len(problem.numbers):
            out.append(problem.numbers[int(slot.group(1))])
        else:
            return None
    return tuple(out)


def expression_correct_values(predicted: Sequence[str], problem: Problem) -> bool:
    """The predicted prefix equals the gold prefix after slots are replaced by their numbers'
    values (the published definition: `+ N1 N1` is right for gold `+ N0 N0` when N0 = N1)."""
    mine = _with_values(predicted, problem)
    return mine is not None and mine == _with_values(problem.prefix, problem)


def value_correct(predicted: Sequence[str], problem: Problem) -> bool:
    """The predicted prefix evaluates, over the problem's numbers, to its gold answer."""
    return values_equal(try_evaluate(predicted, problem.values()), problem.answer_value())


def expression_accuracy(predicted: Sequence[Sequence[str]], problems: Sequence[Problem]) -> Accuracy:
    return Accuracy(sum(expression_correct(p, g) for p, g in _pairs(predicted, problems, "problems")), len(problems))


def expression_accuracy_values(predicted: Sequence[Sequence[str]], problems: Sequence[Problem]) -> Accuracy:
    return Accuracy(sum(expression_correct_values(p, g) for p, g in _pairs(predicted, problems, "problems")),
                    len(problems))


def value_accuracy(predicted: Sequence[Sequence[str]], problems: Sequence[Problem]) -> Accuracy:
    return Accuracy(sum(value_correct(p, g) for p, g in _pairs(predicted, problems, "problems")), len(problems))


def _slot_pairs(predicted: Sequence[Sequence[int]], gold: Sequence[Sequence[int]],
                used_only: bool) -> list[list[tuple[int, int]]]:
    """Per problem, the (predicted, right) fillings scored: every slot, or the used ones."""
    out = []
    for i, (p, g) in enumerate(_pairs(predicted, gold, "problems")):
        if len(p) != len(g):
            raise ValueError(f"problem {i}: {len(p)} slot predictions for {len(g)} masked slots")
        out.append([(a, b) for a, b in zip(p, g) if not (used_only and b == UNUSED)])
    return out


def infilling_accuracy(predicted: Sequence[Sequence[int]], gold: Sequence[Sequence[int]],
                       used_only: bool = False) -> Accuracy:
    """Share of masked number slots filled with the right quantity, over all slots of all
    problems (the paper's Table 4), or (`used_only`) over the slots the gold expression uses."""
    pairs = [pair for problem in _slot_pairs(predicted, gold, used_only) for pair in problem]
    return Accuracy(sum(a == b for a, b in pairs), len(pairs))


def perfect_match_ratio(predicted: Sequence[Sequence[int]], gold: Sequence[Sequence[int]],
                        used_only: bool = False) -> Accuracy:
    """Share of problems whose every scored slot (all, or the used ones) is filled right;
    problems with no scored slot have nothing to infill and are not counted."""
    problems = [slots for slots in _slot_pairs(predicted, gold, used_only) if slots]
    return Accuracy(sum(all(a == b for a, b in slots) for slots in problems), len(problems))
