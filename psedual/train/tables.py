"""A run folder's Parquet files, written with their records' schemas (`psedual.train.records`)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from psedual.atomic import write_parquet
from psedual.train.records import arrow_table


def write(rows: list[dict], path: Path, schema: pa.Schema) -> None:
    """Write `rows` to `path` as `schema`; a key the schema does not know is refused, naming the file."""
    write_parquet(arrow_table(rows, schema, str(path)), path)
