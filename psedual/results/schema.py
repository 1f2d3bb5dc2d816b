"""The Arrow schemas of the table rows, derived from their typed records (`psedual.results.records`),
the row types that hold them (`psedual.results.row`) and the config's flat keys.

A run folder's `metrics.parquet` is one row of `METRICS_SCHEMA`; the result tables
(`psedual.results.tables`) hold the same rows, each with its trial. Every column's type comes
from its field's annotation (`arrow_type`): a row's shape is said in the records and nowhere
else. Rows are written through `arrow_table`, which refuses a key its record does not have.
"""

from __future__ import annotations

import types
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Annotated, Literal, Union, get_args, get_origin, get_type_hints

import pyarrow as pa
import pyarrow.parquet as pq

from psedual.results.records import Epoch, LLMPrediction, Prediction, is_column
from psedual.results.row import MetricsRow, RunsRow
from psedual.train.config import TrainConfig

_SCALARS: dict[type, pa.DataType] = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string()}


def arrow_type(hint: object, name: str = "") -> pa.DataType:
    """The Arrow type of a field's resolved type: bool, int, float, str; `Annotated[X, arrow
    type]` (that type); a Literal of one of them; `X | None` (a nullable X); `tuple[X, ...]` or
    `list[X]` (a list of X). Any other type is a TypeError naming the field: a column is never
    given a guessed type."""
    origin, args = get_origin(hint), get_args(hint)
    if hint in _SCALARS:
        return _SCALARS[hint]
    if origin is Annotated and isinstance(hint.__metadata__[0], pa.DataType):
        return hint.__metadata__[0]
    if origin is Literal and len({type(a) for a in args}) == 1 and type(args[0]) in _SCALARS:
        return _SCALARS[type(args[0])]
    if origin in (Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        if len(kept) == 1:
            return arrow_type(kept[0], name)
    if (origin is list and len(args) == 1) or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return pa.list_(arrow_type(args[0], name))
    raise TypeError(f"config field {name or '?'}: no Arrow type for {hint!r}; give psedual/results/schema.py a "
                    f"mapping for it")


def columns(record: type, prefix: str = "") -> list[pa.Field]:
    """The columns of a record's fields, in order, each named `prefix + name`; a field whose
    metadata says `column=False` is none."""
    assert is_dataclass(record), record
    hints = get_type_hints(record, include_extras=True)
    return [pa.field(prefix + f.name, arrow_type(hints[f.name], prefix + f.name)) for f in fields(record)
            if is_column(f)]


def config_columns() -> list[pa.Field]:
    """The columns of `TrainConfig.flat()`'s keys, typed by the config's annotations."""
    return [pa.field(k, arrow_type(t, k)) for k, t in TrainConfig.field_hints().items()]


def arrow_table(rows: list[dict], schema: pa.Schema, table: str) -> pa.Table:
    """`rows` as an Arrow table of `schema`, a key the row does not have as null. A key the
    schema does not know is a ValueError naming it and `table`: nothing is dropped unsaid."""
    known = set(schema.names)
    unknown = sorted({k for r in rows for k in r} - known)
    if unknown:
        raise ValueError(f"{table}: unknown column(s) {', '.join(unknown)}; its record (psedual/results/records.py) "
                         f"has no such field")
    return pa.Table.from_pylist([{k: r.get(k) for k in schema.names} for r in rows], schema=schema)


def read(path: Path, schema: pa.Schema) -> list[dict]:
    """The rows of a run folder's file, as `schema`'s columns: columns an older version wrote
    and the record no longer has (`out_dir`) are not read, and ones it did not yet write are null."""
    have = set(pq.read_schema(path).names)
    data = pq.read_table(path, columns=[n for n in schema.names if n in have]).to_pylist()
    return [{n: r.get(n) for n in schema.names} for r in data]


def row_columns(row: type) -> list[pa.Field]:
    """The columns of a row type (`psedual.results.row`), in its fields' order: each record's, with
    its prefix, the config's, and a nested row's."""
    out: list[pa.Field] = []
    for f in fields(row):
        if "row" in f.metadata:
            out += row_columns(f.metadata["row"])
        elif "record" in f.metadata:
            out += columns(f.metadata["record"], f.metadata["prefix"])
        else:
            out += config_columns()
    return out


TRIAL_COLUMN = pa.field("trial", pa.string())
EPOCHS_SCHEMA = pa.schema(columns(Epoch))
PREDICTIONS_SCHEMA = pa.schema(columns(Prediction))
LLM_PREDICTIONS_SCHEMA = pa.schema(columns(LLMPrediction))
METRICS_SCHEMA = pa.schema(row_columns(MetricsRow))
"""A run folder's `metrics.parquet`: one row, a trained run's or an LLM run's."""
RUNS_SCHEMA = pa.schema(row_columns(RunsRow))
"""The runs table: a `Trial`, then its metrics row."""
