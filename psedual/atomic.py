"""Writing a file so that a killed writer never leaves half of it: write a hidden temporary
file beside it, then move it into place. Locally the move is a rename (atomic on POSIX); on an
object store (s3://, gs://) the object appears whole or not at all.

The one writer of the package: checkpoints, the data cache, a run's tables and the result
tables all go through `atomic_write`. It imports neither torch nor Ray, so the result tables
can use it where only pyarrow is installed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from psedual.storage import filesystem

NAME_MAX = 255
"""The longest file name, in bytes, local filesystems take (ext4, xfs, APFS: one component of a path)."""
_TMP_EXTRA = len(".") + len(".") + 32 + len(".tmp")
"""What a temporary name adds to the target's: a leading dot, a dot, a uuid's 32 hex digits, `.tmp`."""


def truncated(name: str, limit: int) -> str:
    """`name` cut to at most `limit` bytes of UTF-8, never inside a character."""
    return name.encode("utf-8")[:limit].decode("utf-8", "ignore")


def atomic_write(target: str | Path, write: Callable[[IO[bytes]], None], fs: pafs.FileSystem | None = None) -> str:
    """Call `write(stream)` on a temporary file beside `target`, then move it to `target`;
    returns the file's path within its filesystem. `target` is a local path or a URI
    (s3://bucket/key, file:///...), or, with `fs`, a path within that filesystem."""
    if fs is None:
        fs, target = filesystem(str(target))
    folder, name = str(target).rsplit("/", 1)
    fs.create_dir(folder, recursive=True)
    # hidden and unique: dataset scans skip it, and two writers of one file never share it; the
    # target's name cut where the two would pass NAME_MAX (a 228-byte experiment's claims file did)
    tmp = f"{folder}/.{truncated(name, NAME_MAX - _TMP_EXTRA)}.{uuid.uuid4().hex}.tmp"
    try:
        with fs.open_output_stream(tmp) as stream:
            write(stream)
        fs.move(tmp, f"{folder}/{name}")
    except BaseException:
        # whatever stopped the write (an error, Ctrl-C), leave no temporary file behind
        if fs.get_file_info(tmp).type != pafs.FileType.NotFound:
            fs.delete_file(tmp)
        raise
    return f"{folder}/{name}"


def write_parquet(table: pa.Table, target: str | Path, fs: pafs.FileSystem | None = None) -> str:
    """`table` as a Parquet file at `target` (see `atomic_write`); returns its path."""
    return atomic_write(target, lambda stream: pq.write_table(table, stream), fs)
