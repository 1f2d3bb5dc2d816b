"""The paper's metrics: expression and value accuracy, number-infilling accuracy and
perfect-match ratio. Plain Python over problems and predictions (no torch), so the
trainer and the analysis compute them the same way.

Value accuracy compares a predicted expression's value, over the problem's
numbers, with the source's gold *answer* (within `expr.VALUE_TOLERANCE`), not
with the gold expression's value: the few problems whose gold expression
disagrees with their answer (`Problem.answer_agrees`) count as the source says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from psedual.data.expr import try_evaluate, values_equal
from psedual.data.record import Problem


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


def value_correct(predicted: Sequence[str], problem: Problem) -> bool:
    """The predicted prefix evaluates, over the problem's numbers, to its gold answer."""
    return values_equal(try_evaluate(predicted, problem.values()), problem.answer_value())


def expression_accuracy(predicted: Sequence[Sequence[str]], problems: Sequence[Problem]) -> Accuracy:
    return Accuracy(sum(expression_correct(p, g) for p, g in _pairs(predicted, problems, "problems")), len(problems))


def value_accuracy(predicted: Sequence[Sequence[str]], problems: Sequence[Problem]) -> Accuracy:
    return Accuracy(sum(value_correct(p, g) for p, g in _pairs(predicted, problems, "problems")), len(problems))


def infilling_accuracy(predicted: Sequence[Sequence[int]], gold: Sequence[Sequence[int]]) -> Accuracy:
    """Share of masked number slots filled with the right quantity, over all slots of all problems."""
    correct = total = 0
    for i, (p, g) in enumerate(_pairs(predicted, gold, "problems")):
        if len(p) != len(g):
            raise ValueError(f"problem {i}: {len(p)} slot predictions for {len(g)} masked slots")
        correct += sum(a == b for a, b in zip(p, g))
        total += len(g)
    return Accuracy(correct, total)


def perfect_match_ratio(predicted: Sequence[Sequence[int]], gold: Sequence[Sequence[int]]) -> Accuracy:
    """Share of problems whose every masked slot is filled right; problems with no
    numbers have nothing to infill and are not counted."""
    pairs = [(list(p), list(g)) for p, g in _pairs(predicted, gold, "problems") if len(g)]
    for i, (p, g) in enumerate(pairs):
        if len(p) != len(g):
            raise ValueError(f"problem {i}: {len(p)} slot predictions for {len(g)} masked slots")
    return Accuracy(sum(p == g for p, g in pairs), len(pairs))
