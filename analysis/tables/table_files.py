"""The Parquet files of one result table under a local root, each checked before Polars reads them,
so that an error names the file or folder it is about.

Polars and pyarrow name neither: a file cut short was `Parquet magic bytes not found in footer`,
two files whose `seed` columns differ in type `ArrowTypeError: Unable to merge: Field seed has
incompatible types`, and a root that is a symbolic link loop read as a folder without tables.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

PATTERN = "experiment=*/*.parquet"
"""A table's files under its folder (`psedual.results.tables`' layout)."""


class TableFileError(ValueError):
    """A file or folder of a result table that cannot be read; the message names it."""


def table_files(root: Path, table: str) -> list[Path]:
    """The table's files under `root` (`experiment=<name>/*.parquet`), sorted. A root, table or
    experiment folder that cannot be entered (a symbolic link loop, a link to nothing, no
    permission) is a TableFileError naming it: listed as empty, it would read as no table, or
    leave an experiment out without a word. A root or table folder that is not there has no files
    (the caller says what it expected)."""
    folder = root / table
    _check_entry(root, "results root", "point --root at the folder that holds the tables")
    _check_entry(folder, f"{table} table folder", "point --root at the folder that holds the tables")
    if folder.is_dir():
        for entry in sorted(folder.iterdir()):
            if entry.name.startswith("experiment="):
                _check_entry(entry, f"{table} table's experiment folder", "remove the link or point it at the "
                             "experiment's files")
    return sorted(folder.glob(PATTERN))


def read_schemas(files: list[Path], table: str) -> dict[Path, pa.Schema]:
    """Each file's schema from its footer, metadata removed; a file that has none (cut short, empty,
    not Parquet, a folder, a link to nothing) is a TableFileError naming it."""
    return {path: _schema(path, table) for path in files}


def _check_entry(path: Path, what: str, fix: str) -> None:
    """Refuse a folder that cannot be entered, naming it, what it is and `fix`; one that is not there
    passes (the caller says what it expected there)."""
    try:
        path.stat()
    except FileNotFoundError:
        if path.is_symlink():  # a link to nothing is no folder that is "not there yet"
            raise TableFileError(f"{path}: the {what} is a link to nothing ({os.readlink(path)}); {fix}") from None
    except OSError as err:
        why = "a symbolic link loop" if err.errno == errno.ELOOP else err.strerror or str(err)
        raise TableFileError(f"{path}: the {what} cannot be entered ({why}); {fix}") from None


def _schema(path: Path, table: str) -> pa.Schema:
    """A file's schema from its footer; a file that has none (cut short, empty, not Parquet, a
    folder, a link to nothing) is a TableFileError naming it."""
    try:
        return pq.read_schema(path).remove_metadata()
    except (pa.ArrowException, OSError) as err:
        said = " ".join(str(err).split())[:200] or type(err).__name__
        # the tables are written whole (a temporary file renamed): one cut short was copied or damaged
        raise TableFileError(f"{path}: not a readable Parquet file of the {table} table ({said}); move it out "
                             "of the root, or collect its trial again") from None


def union_schema(schemas: dict[Path, pa.Schema], folder: Path, table: str) -> pa.Schema | None:
    """The union of the files' schemas (a file's missing columns read as null), or None when they
    all agree. Types that widen are merged (Polars' large_string beside pyarrow's string); a
    column of two types that do not (`seed` int64 in one file, string in another) is a
    TableFileError naming the column, both types and a file of each."""
    distinct = list(dict.fromkeys(schemas.values()))
    if len(distinct) < 2:
        return None
    try:
        return pa.unify_schemas(sorted(distinct, key=lambda sc: -len(sc.names)), promote_options="permissive")
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        pass
    first: dict[str, tuple[pa.Field, Path]] = {}
    for path, schema in schemas.items():
        for field in schema:
            if field.name not in first:
                first[field.name] = (field, path)
                continue
            seen, where = first[field.name]
            try:
                pa.unify_schemas([pa.schema([seen]), pa.schema([field])], promote_options="permissive")
            except (pa.ArrowTypeError, pa.ArrowInvalid):
                raise TableFileError(f"{folder}: column {field.name!r} is {seen.type} in {where} but "
                                     f"{field.type} in {path}: the files of the {table} table must agree on "
                                     f"it (write one again, or move it out of the root)") from None
    raise TableFileError(f"{folder}: the files of the {table} table do not merge into one schema")
