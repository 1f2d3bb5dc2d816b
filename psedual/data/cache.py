"""Loading a dataset once: processed problems are cached as Parquet.

The cache key hashes the dataset's source files (bytes, and their paths as
given and resolved: problems and skips quote those paths, so a byte-identical
copy of a folder gets its own entry), any user file, and the processing code
itself (the modules in PROCESSING_CODE plus CODE_VERSION), so editing a loader
or a source file never serves stale rows. Strings are checked for valid Unicode
before they are written (`build`), so no record can break a cache write.
Files are written to a temporary name and renamed, so a killed writer never
leaves half a cache entry.

An entry is checked before it is served: `<entry>.sha256` (written last, so it is also the sign
that the entry is complete) holds the SHA256 of both Parquet files' bytes, and the problems
file's metadata the entry's key and notes. An entry whose bytes, key or metadata do not match
(edited, truncated, written by something else) is rebuilt from the sources, with one line on
stderr naming it and why. A cache folder that cannot be made or written (PSEDUAL_CACHE naming a
regular file, a permission) is one error line naming it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow.parquet as pq

from psedual.atomic import atomic_write, write_parquet
from psedual.data.files import DataFileError, read_bytes, resolved
from psedual.data.numbers import quote
from psedual.data.record import PROBLEM_SCHEMA, SKIP_SCHEMA, Problem, Skip, problems_from_table, skips_from_table, to_table
from psedual.data.registry import get_spec
from psedual.data.root import find_data_root

CODE_VERSION = "2"
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
    """$PSEDUAL_CACHE (a leading `~` expanded, as a shell would have: quoted in a .env file it made
    a folder named `~` in the working directory), else ~/.cache/psedual."""
    return Path(os.environ.get("PSEDUAL_CACHE") or Path.home() / ".cache" / "psedual").expanduser()


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
    user = Path(user_path).expanduser() if user_path is not None else None  # `~/mine` from a YAML config
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


def _entry_files(stem: Path) -> tuple[Path, Path, Path]:
    """(problems, skips, digests) of one cache entry."""
    return stem.with_suffix(".problems.parquet"), stem.with_suffix(".skips.parquet"), stem.with_suffix(".sha256")


def _digests(problems: Path, skips: Path) -> str:
    return f"{hashlib.sha256(read_bytes(problems)).hexdigest()} {hashlib.sha256(read_bytes(skips)).hexdigest()}\n"


class _BadEntry(Exception):
    """A cache entry that must not be served: why."""


def _read_cache(stem: Path, name: str, key: str) -> Dataset | None:
    """The entry, if complete and intact; None (after one line on stderr naming it) to rebuild it."""
    problems, skips, digests = _entry_files(stem)
    if not digests.exists():
        return None  # never completed (or written before entries were checked): built afresh
    try:
        try:
            if read_bytes(digests).decode("ascii", "replace") != _digests(problems, skips):
                raise _BadEntry("its files' SHA256 differ from those written with them (edited or truncated)")
            metadata = pq.read_schema(problems).metadata or {}
            if metadata.get(b"key", b"").decode("utf-8", "replace") != key:
                raise _BadEntry("its recorded key is not its name's")
            notes = json.loads(metadata.get(b"notes", b""))
            if not (isinstance(notes, dict) and all(isinstance(k, str) and type(v) is int for k, v in notes.items())):
                raise _BadEntry("its notes are not a table of counts")
            return Dataset(name, problems_from_table(pq.read_table(problems, schema=PROBLEM_SCHEMA)),
                           skips_from_table(pq.read_table(skips, schema=SKIP_SCHEMA)), notes, key, from_cache=True)
        except (DataFileError, OSError, ValueError, TypeError, KeyError) as err:  # pyarrow's errors are these too
            raise _BadEntry(f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}") from None
    except _BadEntry as bad:
        print(f"psedual: cache entry {problems} is not what was written ({bad}): rebuilding it", file=sys.stderr,
              flush=True)
        return None


def _write_cache(stem: Path, dataset: Dataset) -> None:
    problems_file, skips_file, digests = _entry_files(stem)
    metadata = {"notes": json.dumps(dataset.notes), "key": dataset.key}
    try:
        stem.parent.mkdir(parents=True, exist_ok=True)
        # Skips, problems, then their digests: a reader needs all three, the last its sign that all are complete.
        write_parquet(to_table(dataset.skips, SKIP_SCHEMA), skips_file)
        write_parquet(to_table(dataset.problems, PROBLEM_SCHEMA).replace_schema_metadata(metadata), problems_file)
        atomic_write(digests, lambda stream: stream.write(_digests(problems_file, skips_file).encode()))
    except OSError as err:
        raise DataFileError(f"{stem.parent}: cannot write the data cache there ({err.strerror or err}); "
                            "set PSEDUAL_CACHE to a folder you can write") from None
