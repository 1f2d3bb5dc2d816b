"""Lazy Polars scans of the result tables, and selection of runs by their config.

Layout (written by `psedual.results.tables`; `experiment` comes from the folder name):

    <root>/runs/experiment=<name>/<trial>.parquet          one row per trial, flattened config
    <root>/epochs/experiment=<name>/<trial>.parquet        one row per trial and epoch
    <root>/predictions/experiment=<name>/<trial>.parquet   one row per trial and test example

A trial is named by (experiment, trial): trial ids are unique only within an experiment.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa

from analysis.tables.table_files import read_schemas, table_files, union_schema
from psedual.storage import TABLES

KEY = ("experiment", "trial")
# short names users type for the flattened config columns
ALIASES = {
    "dataset": "data.dataset", "fold": "data.fold", "train_size": "data.train_size",
    "encoder": "psedual.expression_encoder", "fusion": "psedual.fusion",
}


def _is_local(root: str) -> bool:
    return "://" not in root or root.startswith("file://")


def scan(root: str, table: str, experiments: list[str] | None = None) -> pl.LazyFrame:
    """Every row of `table` under `root` (a folder or a URI Polars can read), optionally only
    those of the named experiments. The `experiment` column is the folder's name after
    `experiment=`, whatever it holds: Polars' hive parsing would read a name such as `solver=gts`
    as a second partition and fail on every table of the root."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; valid: {', '.join(TABLES)}")
    folder = f"{root.rstrip('/')}/{table}"
    options: dict = {}
    if _is_local(root):
        local = Path(folder.removeprefix("file://"))
        files = table_files(Path(root.removeprefix("file://")), table)  # a folder it cannot enter is named
        found = sorted({p.parent.name.removeprefix("experiment=") for p in files})
        if not found:
            raise FileNotFoundError(f"{local}: no {table} table here (expected experiment=<name>/*.parquet); "
                                    f"run `psedual tune` or pass --root")
        missing = sorted(set(experiments or []) - set(found))
        if missing:
            raise FileNotFoundError(f"{local}: no experiment {', '.join(missing)}; present: {', '.join(found)}")
        wanted = set(experiments or found)
        # the files themselves, not a glob: a name may hold glob characters
        sources: list[str] | str = [str(p) for p in files if p.parent.name.removeprefix("experiment=") in wanted]
        # each file's footer read (one cut short is named), of the experiments read only
        options = _evolving_schema(read_schemas([Path(p) for p in sources], table), local, table)
    else:
        sources = [f"{folder}/experiment={e}/*.parquet" for e in experiments] if experiments \
            else f"{folder}/experiment=*/*.parquet"
    lf = pl.scan_parquet(sources, hive_partitioning=False, include_file_paths=_PATH, **options)
    return lf.with_columns(experiment=pl.col(_PATH).str.extract(r"experiment=([^/]*)/[^/]*$")).drop(_PATH)


_PATH = "__file"
"""The column a scan reads each row's file path into, to take the experiment from its folder."""


def _evolving_schema(schemas: dict[Path, pa.Schema], folder: Path, table: str) -> dict:
    """Tables written by different versions hold different columns (a config field added later):
    read them under the union of their schemas, a file's missing columns as null (local folders;
    a remote store is read under its first file's schema). Permissive: a table written by Polars
    (large_string) beside one written by pyarrow (string); two types that do not widen into one
    are refused, naming the column and a file of each (`table_files.union_schema`)."""
    union = union_schema(schemas, folder, table)
    if union is None:
        return {}
    # Polars casts each file to the union only where told to: a seed written as int64 by one
    # writer and as double by another is one column of numbers, not a SchemaError naming no file
    widen = pl.ScanCastOptions(integer_cast=["upcast", "allow-float"], float_cast="upcast")
    return {"schema": pl.from_arrow(union.empty_table()).schema, "missing_columns": "insert", "cast_options": widen}


def column(name: str, columns: list[str]) -> str:
    """The table column a user's key names (an alias such as `fold`, or the column itself)."""
    resolved = ALIASES.get(name, name)
    if resolved not in columns:
        raise ValueError(f"unknown column {name!r}; valid: {', '.join(sorted([*ALIASES, *columns]))}")
    return resolved


def parse_where(items: list[str]) -> dict[str, str]:
    """`["solver=gts", "fold=0"]` -> {"solver": "gts", "fold": "0"}."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--where {item!r}: expected KEY=VALUE, e.g. solver=gts")
        out[key.strip()] = value.strip()
    return out


def select(lf: pl.LazyFrame, where: dict[str, object]) -> pl.LazyFrame:
    """Rows whose config matches every KEY=VALUE (values are cast to the column's type;
    `null` matches a missing value, e.g. the full training set's `train_size` or the base
    solver's `fusion`). `A|B` matches either: `fusion=null|scheduled` keeps the base solver
    and the scheduled-fusion runs of a three-arm sweep."""
    schema = lf.collect_schema()
    for key, value in where.items():
        name = column(key, schema.names())
        values = [None] if value is None else str(value).split("|")
        match = pl.lit(False)
        for v in values:
            if v is None or v == "null":
                match = match | pl.col(name).is_null()
                continue
            match = match | (pl.col(name) == typed(v, schema[name], f"{key}={v!r}")).fill_null(False)
        lf = lf.filter(match)
    return lf


def typed(value: str, dtype: pl.DataType, said: str):
    """A value typed on the command line as a column of `dtype` holds it (`0.001` for `lr`, `true`
    for a flag); a ValueError starting with `said` if it is none."""
    if dtype == pl.Boolean and value.lower() in ("true", "false"):
        return value.lower() == "true"
    try:
        return pl.Series([value]).cast(dtype, strict=True)[0]
    except pl.exceptions.PolarsError as err:
        raise ValueError(f"{said}: not a {dtype} value") from err


def for_trials(lf: pl.LazyFrame, trials: pl.DataFrame) -> pl.LazyFrame:
    """Rows of a per-trial table (epochs, predictions) for the (experiment, trial) pairs given."""
    return lf.join(trials.select(KEY).lazy(), on=list(KEY), how="semi")
