"""What every source loader shares: collecting problems and counted skips."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from psedual.data.build import RecordError
from psedual.data.record import Problem, Skip


@dataclass
class LoadResult:
    """A source read in full: kept problems, skipped records, and counted repairs."""

    problems: list[Problem] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    notes: Counter[str] = field(default_factory=Counter)
    """Repairs made to kept records (e.g. a unit stripped from an equation), by kind."""


class Collector:
    """Builds problems one record at a time; a RecordError becomes a Skip with its reason."""

    def __init__(self, dataset: str) -> None:
        self.dataset = dataset
        self.result = LoadResult()

    def add(self, build: Callable[[], Problem], *, split: str, fold: int, origin: str) -> None:
        try:
            self.result.problems.append(build())
        except RecordError as err:
            self.result.skips.append(Skip(self.dataset, split, fold, origin, err.reason, err.detail))


def require(record: object, name: str) -> object:
    """A record's field, or a RecordError saying which is missing."""
    if not isinstance(record, dict):
        raise RecordError("malformed record", f"expected an object, found {type(record).__name__}")
    value = record.get(name)
    if value is None or value == "":
        raise RecordError("missing field", f"no {name!r} (fields: {sorted(record)})")
    return value
