"""Where sweeps and result tables live: a local folder or a pyarrow filesystem URI.

Kept apart from `psedual.tune` so the result tables (and `analysis/`) resolve a storage root
without importing Ray."""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs

DEFAULT_ROOT = "results"
"""The storage root every command uses unless told otherwise (a folder under the working directory)."""
TABLES = ("runs", "epochs", "predictions")
"""The result tables under a root, each partitioned by experiment (`<root>/<table>/experiment=<name>`)."""


def storage_uri(storage: str) -> str:
    """An absolute local path, or a pyarrow filesystem URI (s3://, gs://, ...) as given. A local
    path that cannot be resolved (a symbolic link loop) is a ValueError naming it."""
    if "://" in storage:
        return storage
    try:
        return str(Path(storage).expanduser().resolve())
    except (RuntimeError, OSError) as err:  # a link loop: RuntimeError before Python 3.13, OSError (ELOOP) after
        raise ValueError(f"{storage}: the results root cannot be resolved ({err}); give a folder, or a URI "
                         "such as s3://bucket/prefix") from None


def filesystem(root: str) -> tuple[pafs.FileSystem, str]:
    """(filesystem, path) of a storage root: a local folder or a URI such as s3://bucket/prefix."""
    return pafs.FileSystem.from_uri(storage_uri(root))


STUDY_FILE = "optuna.journal"
"""An Optuna sweep's study, in Optuna's JournalStorage file format, named as its experiment and kept
in the experiment's folder: `<root>/<experiment>/optuna.journal` (psedual/tune/study.py)."""


def study_uri(root: str, experiment: str) -> str:
    """Where an experiment's Optuna study is kept in its storage (a local path or a URI)."""
    return f"{storage_uri(root).rstrip('/')}/{experiment}/{STUDY_FILE}"
