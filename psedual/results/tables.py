"""The three result tables, their schemas (from `psedual.results.schema`), and atomic, idempotent writes.

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

import pyarrow as pa

from psedual.atomic import write_parquet
from psedual.results import schema
from psedual.results.schema import RUNS_SCHEMA
from psedual.storage import TABLES, filesystem

SCHEMAS = {"runs": RUNS_SCHEMA, "epochs": pa.schema([schema.TRIAL_COLUMN, *schema.EPOCHS_SCHEMA]),
           "predictions": pa.schema([schema.TRIAL_COLUMN, *schema.PREDICTIONS_SCHEMA])}
EPOCHS_SCHEMA = SCHEMAS["epochs"]


def write(root: str, table: str, experiment: str, trial: str, rows: list[dict]) -> str:
    """Write one trial's rows of `table` atomically; returns the file's path. A key the table's
    record does not have is a ValueError naming it and the table."""
    if table not in SCHEMAS:
        raise ValueError(f"unknown table {table!r}; valid: {', '.join(TABLES)}")
    fs, base = filesystem(root)
    data = schema.arrow_table(rows, SCHEMAS[table], f"the {table} table")
    return write_parquet(data, f"{base}/{table}/experiment={experiment}/{trial}.parquet", fs)
