"""The Parquet files a training run writes, with explicit schemas."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from psedual.atomic import write_parquet

EPOCHS_SCHEMA = pa.schema([
    ("epoch", pa.int32()), ("train_loss", pa.float64()), ("lr", pa.float64()),
    ("valid_value_acc", pa.float64()), ("valid_expr_acc", pa.float64()), ("seconds", pa.float64()),
    # PseDual runs only (else null): mean infilling loss, and ε and τ at the epoch's last step
    # (τ null when no expression was sampled)
    ("infill_loss", pa.float64()), ("epsilon", pa.float64()), ("tau", pa.float64()),
])
PREDICTIONS_SCHEMA = pa.schema([
    ("id", pa.string()), ("predicted", pa.list_(pa.string())), ("gold", pa.list_(pa.string())),
    ("value_correct", pa.bool_()), ("expression_correct", pa.bool_()),
    # the published definition: equal after slots are replaced by their numbers' values
    ("expression_correct_values", pa.bool_()),
    # PseDual runs only (else null): each masked slot's filling from the gold expression,
    # as canonical slots (-1: "unused"), predicted and right
    ("infill_predicted", pa.list_(pa.int32())), ("infill_gold", pa.list_(pa.int32())),
    # why a test problem was not decoded and so scored wrong (the solver cannot represent it:
    # more numbers than its slots, more subwords than its encoder's positions); null if decoded
    ("unscored", pa.string()),
])


def write(rows: list[dict], path: Path, schema: pa.Schema | None = None) -> None:
    write_parquet(pa.Table.from_pylist(rows, schema=schema), path)
