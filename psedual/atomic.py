"""Writing a file so that a killed writer never leaves half of it: write a temporary
file beside it, then rename (atomic on POSIX)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def atomic_write(path: Path, write: Callable[[str], None]) -> None:
    """Call `write(tmp_name)`, then move the result to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_parquet(table: pa.Table, path: Path) -> None:
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))
