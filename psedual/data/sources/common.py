"""What every source loader shares: collecting problems and counted skips."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from psedual.data.build import MAX_TEXT_CHARS, RecordError, check_text
from psedual.data.expr import literals
from psedual.data.numbers import quote
from psedual.data.record import Problem, Skip

# Counted for kept problems (see `build`): a literal of the gold that is not one of the
# text's numbers became a constant; with a gold that disagrees with the answer it is
# likely a typo (`3+7` where the text has 3 and 5) that would be trained on.
LITERAL_NOT_IN_TEXT = "gold uses a number not in the text (kept as a constant)"
LITERAL_AND_DISAGREES = "gold uses a number not in the text and disagrees with the answer"
# A record that breaks the loader in a way no check above foresaw: a skip, never a lost run.
_UNFORESEEN = (ArithmeticError, LookupError, TypeError, ValueError, RecursionError)
_MAX_DETAIL = 500


@dataclass
class LoadResult:
    """A source read in full: kept problems, skipped records, and counted repairs."""

    problems: list[Problem] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    notes: Counter[str] = field(default_factory=Counter)
    """Repairs made to kept records (e.g. a unit stripped from an equation) and flags, by kind."""


class Collector:
    """Builds problems one record at a time; a RecordError becomes a Skip with its reason."""

    def __init__(self, dataset: str) -> None:
        self.dataset = dataset
        self.result = LoadResult()

    def add(self, build: Callable[[], Problem], *, split: str, fold: int, origin: str) -> None:
        try:
            problem = build()
        except RecordError as err:
            self._skip(split, fold, origin, err.reason, err.detail)
            return
        except _UNFORESEEN as err:
            self._skip(split, fold, origin, "unexpected error", f"{type(err).__name__}: {err} (a loader bug; "
                       "please report it with this record)")
            return
        self.result.problems.append(problem)
        if literals(problem.prefix):
            self.result.notes[LITERAL_NOT_IN_TEXT] += 1
            if not problem.answer_agrees:
                self.result.notes[LITERAL_AND_DISAGREES] += 1

    def _skip(self, split: str, fold: int, origin: str, reason: str, detail: str) -> None:
        # Skips are cached and printed: no lone surrogate (from a path or a record) may reach them.
        origin, reason, detail = (_printable(s) for s in (origin, reason, detail[:_MAX_DETAIL]))
        self.result.skips.append(Skip(self.dataset, split, fold, origin, reason, detail))


def _printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def require(record: object, name: str) -> object:
    """A record's field, or a RecordError saying which is missing or blank."""
    if not isinstance(record, dict):
        raise RecordError("malformed record", f"expected an object, found {type(record).__name__}")
    if record.get(name) is None:
        raise RecordError("missing field", f"no {name!r} (fields: {quote(sorted(map(str, record)))})")
    value = record[name]
    if isinstance(value, str) and not value.strip():
        raise RecordError("empty field", f"{name!r} is there but blank: {quote(value)}")
    return value


def require_text(record: object, name: str, limit: int = MAX_TEXT_CHARS) -> str:
    """A record's field that must be a string (numbers are taken as written), within `limit`."""
    value = require(record, name)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise RecordError("malformed record", f"{name!r} must be a string, found {type(value).__name__}")
    return check_text(value, name, limit)
