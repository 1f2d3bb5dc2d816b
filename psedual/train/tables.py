"""The Parquet files a training run writes, with explicit schemas."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from psedual.atomic import atomic_write

EPOCHS_SCHEMA = pa.schema([
    ("epoch", pa.int32()), ("train_loss", pa.float64()), ("lr", pa.float64()),
    ("valid_value_acc", pa.float64()), ("valid_expr_acc", pa.float64()), ("seconds", pa.float64()),
])
PREDICTIONS_SCHEMA = pa.schema([
    ("id", pa.string()), ("predicted", pa.list_(pa.string())), ("gold", pa.list_(pa.string())),
    ("value_correct", pa.bool_()), ("expression_correct", pa.bool_()),
])


def write(rows: list[dict], path: Path, schema: pa.Schema | None = None) -> None:
    table = pa.Table.from_pylist(rows, schema=schema)
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))
