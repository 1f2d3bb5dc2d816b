"""The one internal problem record every source becomes, and its Arrow schema."""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields
from fractions import Fraction

import pyarrow as pa

from psedual.data.numbers import parse_number

NUM_TOKEN = "[NUM]"
SPLITS = ("train", "valid", "test")


@dataclass(frozen=True, slots=True)
class Problem:
    """One math word problem in the internal form."""

    id: str
    """`<dataset>:<source id>`: stable across runs, files and folds."""
    dataset: str
    """Registry name of the source (`math23k`, `mawps`, ...)."""
    split: str
    """`train`/`valid`/`test` where the source fixes the split; `` where folds decide."""
    fold: int
    """The cross-validation fold whose test set holds this problem; -1 when there are no folds."""
    language: str
    """`en` or `zh`."""
    tokens: tuple[str, ...]
    """The problem's words, with NUM_TOKEN in place of every number."""
    num_pos: tuple[int, ...]
    """Token index of number slot k (slots are numbered in order of appearance)."""
    numbers: tuple[str, ...]
    """Exact value of slot k, canonical (`numbers.canonical`)."""
    number_texts: tuple[str, ...]
    """Slot k as written in the source (`(1/2)`, `50%`, `1,000`)."""
    prefix: tuple[str, ...]
    """Gold expression in prefix form over slots `N0..Nk` and constant literals."""
    answer: str
    """The source's gold answer, canonical and exact."""
    answer_agrees: bool
    """Whether the gold prefix, evaluated over `numbers`, equals `answer` within tolerance."""
    cells: tuple[int, ...]
    """Quantity-cell token indices (Graph2Tree) where the source provides them; else empty."""
    origin: str
    """Where the problem was read from (`file:line`, `file#index` or `file#index (id N)`), for
    error messages."""

    def values(self) -> tuple[Fraction, ...]:
        return tuple(parse_number(n) for n in self.numbers)

    def answer_value(self) -> Fraction:
        return parse_number(self.answer)


@dataclass(frozen=True, slots=True)
class Skip:
    """A source record that was not kept, with why: counted and shown by `data stats`."""

    dataset: str
    split: str
    fold: int
    origin: str
    reason: str
    """A short category (`unparseable equation`, ...) that stats group by."""
    detail: str
    """What exactly was wrong with this record."""


_STR_LIST = pa.list_(pa.string())
_INT_LIST = pa.list_(pa.int32())
_TYPES = {str: pa.string(), int: pa.int32(), bool: pa.bool_()}
_TUPLE_TYPES = {"tokens": _STR_LIST, "num_pos": _INT_LIST, "numbers": _STR_LIST, "number_texts": _STR_LIST,
                "prefix": _STR_LIST, "cells": _INT_LIST}


def _schema(cls: type) -> pa.Schema:
    hints = {"str": str, "int": int, "bool": bool}
    return pa.schema([pa.field(f.name, _TUPLE_TYPES.get(f.name) or _TYPES[hints[f.type]], nullable=False)
                      for f in fields(cls)])


PROBLEM_SCHEMA = _schema(Problem)
SKIP_SCHEMA = _schema(Skip)


def to_table(rows: list[Problem] | list[Skip], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*(astuple(r) for r in rows))) if rows else [[] for _ in schema]
    return pa.Table.from_arrays([pa.array(list(c), type=f.type) for c, f in zip(columns, schema)], schema=schema)


def problems_from_table(table: pa.Table) -> list[Problem]:
    cols = table.to_pydict()
    tuple_cols = set(_TUPLE_TYPES)
    names = [f.name for f in fields(Problem)]
    return [Problem(*(tuple(cols[n][i]) if n in tuple_cols else cols[n][i] for n in names))
            for i in range(table.num_rows)]


def skips_from_table(table: pa.Table) -> list[Skip]:
    return [Skip(**row) for row in table.to_pylist()]
