"""Loading a dataset once: processed problems are cached as Parquet.

The cache key hashes the dataset's source files (bytes, and their paths as
given and resolved: problems and skips quote those paths, so a byte-identical
copy of a folder gets its own entry), any user file, and the processing code
itself (the modules in PROCESSING_CODE plus CODE_VERSION), so editing a loader
or a source file never serves stale rows. Strings are checked for valid Unicode
before they are written (`build`), so no record can break a cache write.
Files are written to a temporary name and renamed, so a killed writer never
leaves half a cache entry.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow.parquet as pq

from psedual.atomic import write_parquet
from psedual.data.files import DataFileError, read_bytes, resolved
from psedual.data.numbers import quote
from psedual.data.record import PROBLEM_SCHEMA, SKIP_SCHEMA, Problem, Skip, problems_from_table, skips_from_table, to_table
from psedual.data.registry import get_spec
from psedual.data.root import find_data_root

CODE_VERSION = "1"
_PACKAGE_DIR = Path(__file__).resolve().parent
# What turns source files into rows; the views (splits, stats, config) are not cached.
PROCESSING_CODE = ("numbers.py", "number_rules.py", "expr.py", "value.py", "build.py", "record.py", "files.py",
                   "registry.py", "cache.py", "sources")


@dataclass
class Dataset:
    """A dataset read in full: every kept problem, every skipped record, and the repairs made."""

    name: str
    problems: list[Problem]
    skips: list[Skip]
    notes: dict[str, int] = field(default_factory=dict)
    key: str = ""
    """The cache key this content was stored under."""
    from_cache: bool = False
    root: str = ""
    """The data root read, resolved ('' for a jsonl folder, which is `user_path`)."""
    user_path: str = ""
    """The user's file or folder, resolved ('' if none)."""


def cache_dir() -> Path:
    return Path(os.environ.get("PSEDUAL_CACHE") or Path.home() / ".cache" / "psedual")


def _source_files(name: str, root: Path, user_path: Path | None) -> list[Path]:
    spec = get_spec(name)
    return [root / f for f in spec.files] + spec.user_files(root, user_path)


def cache_key(name: str, root: Path, user_path: Path | None) -> str:
    h = hashlib.sha256(f"{name}\0{CODE_VERSION}\0".encode())
    code = [p for p in sorted(_PACKAGE_DIR.rglob("*.py")) if p.relative_to(_PACKAGE_DIR).parts[0] in PROCESSING_CODE]
    for src in code:
        h.update(src.relative_to(_PACKAGE_DIR).as_posix().encode() + b"\0" + src.read_bytes())
    for path in _source_files(name, root, user_path):
        # the file's own reader words the fault (not found, a folder, a symlink loop) in one line
        digest = hashlib.sha256(read_bytes(path)).hexdigest()
        # Both spellings: origins quote the path as given, and the same spelling may be another folder.
        h.update(f"{path}\0{resolved(path)}\0{digest}\0".encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:20]


def load_dataset(name: str, data_root: str | os.PathLike | None = None, user_path: str | os.PathLike | None = None,
                 use_cache: bool = True) -> Dataset:
    spec = get_spec(name)
    if spec.needs_user_path and user_path is None:
        raise ValueError(f"the {name} dataset needs a user path: {spec.user_path}")
    root = Path(".") if spec.needs_user_path else find_data_root(data_root)
    user = Path(user_path) if user_path is not None else None
    key = cache_key(name, root, user)
    stem = cache_dir() / f"{name}-{key}"
    where = {"root": "" if spec.needs_user_path else str(resolved(root)),
             "user_path": str(resolved(user)) if user is not None else ""}
    if use_cache and (hit := _read_cache(stem, name, key)) is not None:
        return replace(hit, **where)
    result = spec.read(root, user)
    _check_unique_ids(result.problems)
    dataset = Dataset(name, result.problems, result.skips, dict(sorted(result.notes.items())), key, **where)
    if use_cache:
        _write_cache(stem, dataset)
    return dataset


def _check_unique_ids(problems: list[Problem]) -> None:
    seen: dict[str, str] = {}
    for p in problems:
        if p.id in seen:
            raise DataFileError(f"duplicate problem id {quote(p.id)}: {seen[p.id]} and {p.origin}")
        seen[p.id] = p.origin


def _read_cache(stem: Path, name: str, key: str) -> Dataset | None:
    problems, skips = stem.with_suffix(".problems.parquet"), stem.with_suffix(".skips.parquet")
    if not (problems.exists() and skips.exists()):
        return None
    table = pq.read_table(problems, schema=PROBLEM_SCHEMA)
    metadata = pq.read_schema(problems).metadata or {}
    notes = json.loads(metadata.get(b"notes", b"{}"))
    return Dataset(name, problems_from_table(table), skips_from_table(pq.read_table(skips, schema=SKIP_SCHEMA)),
                   notes, key, from_cache=True)


def _write_cache(stem: Path, dataset: Dataset) -> None:
    stem.parent.mkdir(parents=True, exist_ok=True)
    problems = to_table(dataset.problems, PROBLEM_SCHEMA).replace_schema_metadata({"notes": json.dumps(dataset.notes)})
    # Skips first: a reader needs both files, and the problems file is its sign that both are complete.
    write_parquet(to_table(dataset.skips, SKIP_SCHEMA), stem.with_suffix(".skips.parquet"))
    write_parquet(problems, stem.with_suffix(".problems.parquet"))
