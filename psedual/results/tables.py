"""The three result tables, their explicit schemas, and atomic, idempotent writes.

Layout under a storage root (a local folder or any pyarrow filesystem URI):

    <root>/runs/experiment=<name>/<trial>.parquet         one row per trial
    <root>/epochs/experiment=<name>/<trial>.parquet       one row per trial and epoch
    <root>/predictions/experiment=<name>/<trial>.parquet  one row per trial and test example

One file per trial, written under a temporary name and moved into place: a killed
writer leaves no half file, and writing a trial again (after `--resume`) replaces
its file, so rows are never duplicated. The `experiment` column comes from the
folder name (hive partitioning), as Polars and pyarrow datasets read it.
"""

from __future__ import annotations

import types
from typing import Literal, Union, get_args, get_origin

import pyarrow as pa

from psedual.atomic import write_parquet
from psedual.train import tables as run_tables
from psedual.train.config import TrainConfig
from psedual.storage import TABLES, filesystem

_SCALARS: dict[type, pa.DataType] = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string()}


def arrow_type(hint: object, name: str = "") -> pa.DataType:
    """The Arrow type of a config field's resolved type: bool, int, float, str; a Literal of
    one of them; `X | None` (a nullable X); `tuple[X, ...]` or `list[X]` (a list of X). Any
    other type is a TypeError naming the field: a column is never given a guessed type."""
    origin, args = get_origin(hint), get_args(hint)
    if hint in _SCALARS:
        return _SCALARS[hint]
    if origin is Literal and len({type(a) for a in args}) == 1 and type(args[0]) in _SCALARS:
        return _SCALARS[type(args[0])]
    if origin in (Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        if len(kept) == 1:
            return arrow_type(kept[0], name)
    if (origin is list and len(args) == 1) or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return pa.list_(arrow_type(args[0], name))
    raise TypeError(f"config field {name or '?'}: no Arrow type for {hint!r}; give psedual/results/tables.py a "
                    f"mapping for it")


def _config_fields() -> list[pa.Field]:
    return [pa.field(k, arrow_type(t, k)) for k, t in TrainConfig.field_hints().items()]


RUNS_SCHEMA = pa.schema([
    ("trial", pa.string()), ("variant", pa.string()), ("status", pa.string()), ("error", pa.string()),
    ("code_version", pa.string()), *_config_fields(),
    ("epochs_done", pa.int64()), ("best_epoch", pa.int64()), ("valid_value_acc", pa.float64()),
    ("valid_expr_acc", pa.float64()), ("test_value_acc", pa.float64()), ("test_expr_acc", pa.float64()),
    ("test_expr_acc_values", pa.float64()), ("test_infill_acc", pa.float64()), ("test_perfect_match", pa.float64()),
    ("test_infill_acc_used", pa.float64()), ("test_perfect_match_used", pa.float64()),
    ("final_epsilon", pa.float64()), ("final_tau", pa.float64()), ("n_train", pa.int64()),
    ("n_valid", pa.int64()), ("n_test", pa.int64()), ("n_test_infilled", pa.int64()),
    # the data the run saw (null in tables written before they were recorded): the cache key of
    # its source files, and the hashes of its training and test ids and golds (`psedual.data.identity`)
    ("data_key", pa.string()), ("data_train_hash", pa.string()), ("data_test_hash", pa.string()),
    ("train_seconds", pa.float64()), ("test_seconds", pa.float64()),
    # `psedual llm` runs only (else null)
    ("llm.model", pa.string()), ("llm.prompt_version", pa.string()), ("llm.rounds", pa.int64()),
    ("llm.samples", pa.int64()), ("llm.temperature", pa.float64()), ("llm.failures", pa.int64()),
    ("llm.changed", pa.int64()), ("llm.calls", pa.int64()), ("llm.prompt_tokens", pa.int64()),
    ("llm.completion_tokens", pa.int64()),
])
EPOCHS_SCHEMA = pa.schema([("trial", pa.string()), *run_tables.EPOCHS_SCHEMA])
PREDICTIONS_SCHEMA = pa.schema([("trial", pa.string()), *run_tables.PREDICTIONS_SCHEMA])
SCHEMAS = {"runs": RUNS_SCHEMA, "epochs": EPOCHS_SCHEMA, "predictions": PREDICTIONS_SCHEMA}


def write(root: str, table: str, experiment: str, trial: str, rows: list[dict]) -> str:
    """Write one trial's rows of `table` atomically; returns the file's path."""
    if table not in SCHEMAS:
        raise ValueError(f"unknown table {table!r}; valid: {', '.join(TABLES)}")
    fs, base = filesystem(root)
    schema = SCHEMAS[table]
    data = pa.Table.from_pylist([{k: r.get(k) for k in schema.names} for r in rows], schema=schema)
    return write_parquet(data, f"{base}/{table}/experiment={experiment}/{trial}.parquet", fs)
