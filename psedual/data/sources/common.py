"""What every source loader shares: collecting problems and counted skips."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from psedual.data.build import MAX_TEXT_CHARS, OVER_LIMIT, RecordError, check_text
from psedual.data.expr import literals
from psedual.data.files import DuplicateKeys
from psedual.data.number_rules import rules_touched
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
T = TypeVar("T")
MAX_ID_CHARS = 200
"""Characters of a source id (real benchmarks: at most 9); a longer one is refused, so no
message or table repeats a megabyte id."""


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
        problem = self.attempt(build, split=split, fold=fold, origin=origin)
        if problem is None:
            return
        self.result.problems.append(problem)
        if literals(problem.prefix):
            self.result.notes[LITERAL_NOT_IN_TEXT] += 1
            if not problem.answer_agrees:
                self.result.notes[LITERAL_AND_DISAGREES] += 1

    def attempt(self, read: Callable[[], T], *, split: str, fold: int, origin: str, what: str = "") -> T | None:
        """`read()`, or None after counting its RecordError (or unforeseen error) as a Skip;
        `what` prefixes the reason (`SVAMP.json ` for a record that is no problem itself)."""
        try:
            return read()
        except RecordError as err:
            self.skip(split, fold, origin, what + err.reason, err.detail)
            self.result.notes.update(err.rules)
        except _UNFORESEEN as err:
            self.skip(split, fold, origin, what + "unexpected error", f"{type(err).__name__}: {err} (a loader bug; "
                      "please report it with this record)")
        return None

    def note_rules(self, text: str, language: str) -> None:
        """Count the number-reading rules a kept problem's text used (`number_rules`)."""
        for rule in rules_touched(text, language):
            self.result.notes[rule] += 1

    def skip(self, split: str, fold: int, origin: str, reason: str, detail: str) -> None:
        # Skips are cached and printed: no lone surrogate (from a path or a record) may reach them.
        origin, reason, detail = (_printable(s) for s in (origin, reason, detail[:_MAX_DETAIL]))
        self.result.skips.append(Skip(self.dataset, split, fold, origin, reason, detail))


def _printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def require(record: object, name: str) -> object:
    """A record's field, or a RecordError saying which is missing or blank."""
    if isinstance(record, DuplicateKeys):  # `{"answer": 7, "answer": 8}`: neither value is taken
        raise RecordError("malformed record", record.detail)
    if not isinstance(record, dict):
        raise RecordError("malformed record", f"expected an object, found {type(record).__name__}")
    if record.get(name) is None:
        raise RecordError("missing field", f"no {name!r} (fields: {quote(sorted(map(str, record)))})")
    value = record[name]
    if isinstance(value, str) and not value.strip():
        raise RecordError("empty field", f"{name!r} is there but blank: {quote(value)}")
    return value


def source_id(value: object, name: str = "id") -> str:
    """A record's id as a string: a string or an integer (`12` and `"12"` are the same id), at
    most MAX_ID_CHARS characters; else a RecordError."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise RecordError("malformed record", f"{name!r} must be a string or an integer, found {quote(value)}")
    text = str(value)
    if len(text) > MAX_ID_CHARS:
        raise RecordError(OVER_LIMIT, f"{name!r} has {len(text):,} characters (limit {MAX_ID_CHARS}): {quote(text, 60)}")
    if not text.strip():
        raise RecordError("empty field", f"{name!r} is there but blank: {quote(text)}")
    return text


def shown_id(value: object) -> str:
    """A record's id as an origin quotes it, before it is checked: cut, never a megabyte."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text):,} characters)"


def require_text(record: object, name: str, limit: int = MAX_TEXT_CHARS) -> str:
    """A record's field that must be a string (numbers are taken as written), within `limit`."""
    value = require(record, name)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise RecordError("malformed record", f"{name!r} must be a string, found {type(value).__name__}")
    return check_text(value, name, limit)
