"""Reading source files with errors that name the file, the record and the fault.

A file that cannot be read as a whole (missing, not UTF-8, not JSON) is a
DataFileError naming it, and the load stops. Within a readable file, what one
record holds is passed on as it is for the loaders to judge per record, with
one exception made here: a JSON number too long to be a number (more than
`numbers.MAX_WRITTEN_DIGITS` digits; Python refuses to build ints past 4,300
digits) is kept as its string, which the loaders then refuse with the record's
name ("over a size limit"). And an object that gives one key twice
(`{"answer": 7, "answer": 8}`: json keeps the last value without a word, so the
gold would silently be one of two) is a `DuplicateKeys` in a record file, which
the loaders skip as a malformed record naming the key, and stops the load in an
auxiliary file (`read_json`: Math23K's split ids and cells).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from pathlib import Path

from psedual.data.numbers import MAX_WRITTEN_DIGITS, quote


class DataFileError(ValueError):
    """A source file that cannot be read as a whole: missing, empty, not UTF-8, not JSON."""


class DuplicateKeys:
    """What a record file's JSON object that gives a key twice reads as: never a dict, so no loader
    takes one of its values for the record's (`sources.common.require` makes it a skip)."""

    def __init__(self, pairs: list[tuple[str, object]]) -> None:
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        values = [v for k, v in pairs if k == twice]
        self.detail = (f"the object gives key {quote(twice, 40)} {len(values)} times ({quote(values, 80)}): "
                       "JSON readers keep one silently, so which is meant is unknown")
        """The message a skip or an error shows."""
        self._once = {k: v for k, v in pairs if k != twice}
        """The keys given once, with their values."""

    def get(self, key: str, default: object = None) -> object:
        """A key given once (a Math23K record's id, so that its skip is that id's), else `default`."""
        return self._once.get(key, default)

    def __repr__(self) -> str:
        return f"DuplicateKeys({self.detail})"


class _Duplicated(ValueError):
    """A duplicate key in an auxiliary file: the whole file is refused."""


def _record_object(pairs: list[tuple[str, object]]) -> dict | DuplicateKeys:
    obj = dict(pairs)  # what json makes of an object, checked in C-speed dict building (Math23K: +0.03 s)
    return obj if len(obj) == len(pairs) else DuplicateKeys(pairs)


def _strict_object(pairs: list[tuple[str, object]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Duplicated(DuplicateKeys(pairs).detail)
    return obj


MAX_FILE_BYTES = 256 * 2**20
"""Bytes of one source file (the largest benchmark file, Math23K's, is 8.3 MiB; 30 times that
is far beyond any MWP dataset): a bigger one (a sparse `truncate -s 5G train.jsonl`, a file that
is not the dataset) is refused before it is read, where it was read whole into memory."""


def read_bytes(path: Path) -> bytes:
    """The file's bytes, or a DataFileError naming it and why it cannot be read."""
    if path.exists() and not path.is_dir() and not path.is_file():  # a FIFO would block the read forever
        raise DataFileError(f"{path}: not a regular file (a pipe, a socket or a device)")
    try:
        if path.is_file() and (size := path.stat().st_size) > MAX_FILE_BYTES:
            raise DataFileError(f"{path}: {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit of one source file "
                                "(the largest benchmark file is 8.3 MiB): not read; is it the file you meant?")
        return path.read_bytes()
    except FileNotFoundError:
        raise DataFileError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise DataFileError(f"{path}: is a directory, expected a file") from None
    except OSError as err:  # a symlink loop, a permission, a name too long: one line, not a traceback
        raise DataFileError(f"{path}: cannot be read: {err.strerror or err}") from None


def resolved(path: Path) -> Path:
    """`path.resolve()`, or a DataFileError naming it (Python raises RuntimeError on a symlink loop)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError) as err:
        raise DataFileError(f"{path}: cannot be resolved: {err}") from None


def read_text(path: Path) -> str:
    raw = read_bytes(path)
    if not raw.strip():
        raise DataFileError(f"{path}: empty file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DataFileError(f"{path}: not UTF-8 (byte {err.start}, line {line}: {raw[err.start:err.start + 4]!r})") from None


def _json_error(path: Path, err: json.JSONDecodeError, what: str) -> DataFileError:
    return DataFileError(f"{path}: {what}: {_where(err)} line {err.lineno} column {err.colno}")


def _where(err: json.JSONDecodeError) -> str:
    """json's message with the word `at` once: some already end in it ("Unterminated string starting at")."""
    return err.msg if err.msg.endswith(" at") else f"{err.msg} at"


def _int(text: str) -> int | str:
    return text if len(text) > MAX_WRITTEN_DIGITS else int(text)


def _float(text: str) -> float | str:
    value = float(text)  # 1e400 becomes inf: keep what was written, which the loaders refuse by size
    return value if math.isfinite(value) and len(text) <= MAX_WRITTEN_DIGITS else text


# Numbers as json reads them, except that an over-long one stays a string (see the docstring).
_DECODER = json.JSONDecoder(parse_int=_int, parse_float=_float, object_pairs_hook=_record_object)
_STRICT_DECODER = json.JSONDecoder(parse_int=_int, parse_float=_float, object_pairs_hook=_strict_object)
_TOO_DEEP = "JSON nested too deeply to read (Python's recursion limit)"


def _loads(text: str, decoder: json.JSONDecoder = _DECODER) -> object:
    obj, end = decoder.raw_decode(text, _skip_space(text, 0))
    if _skip_space(text, end) != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return obj


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def read_json(path: Path, records: bool = False) -> object:
    """A whole JSON file; an object in it with a key twice stops the load, unless the file holds
    `records` (then that object is a DuplicateKeys, one record's skip)."""
    text = read_text(path)
    try:
        return _loads(text, _DECODER if records else _STRICT_DECODER)
    except _Duplicated as err:
        raise DataFileError(f"{path}: {err}") from None
    except json.JSONDecodeError as err:
        raise _json_error(path, err, "invalid or truncated JSON") from None
    except RecursionError:
        raise DataFileError(f"{path}: {_TOO_DEEP}") from None


def read_json_list(path: Path) -> list[object]:
    data = read_json(path, records=True)
    if not isinstance(data, list):
        raise DataFileError(f"{path}: expected a JSON list of records, found {type(data).__name__}")
    return data


def read_concatenated_json(path: Path) -> list[object]:
    """Objects written one after another with no enclosing list (Math23K's raw file)."""
    text = read_text(path)
    records: list[object] = []
    pos = 0
    while True:
        pos = _skip_space(text, pos)
        if pos == len(text):
            return records
        try:
            obj, pos = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise _json_error(path, err, f"record {len(records)} (after {len(records)} good records) is not valid JSON") from None
        except RecursionError:
            raise DataFileError(f"{path}: record {len(records)}: {_TOO_DEEP}") from None
        records.append(obj)


def read_jsonl(path: Path) -> Iterator[tuple[int, object]]:
    """(line number, object) for each non-blank line. Lines end at `\n` only (a `\r` before it
    is dropped): JSON strings may hold U+2028, U+0085 and the other characters `str.splitlines`
    would also split on."""
    for lineno, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = _loads(line)
        except json.JSONDecodeError as err:
            raise DataFileError(f"{path}: line {lineno} is not valid JSON: {_where(err)} column {err.colno}") from None
        except RecursionError:
            raise DataFileError(f"{path}: line {lineno}: {_TOO_DEEP}") from None
        yield lineno, obj


def read_csv(path: Path, required: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """(line where the row starts, row) for each data row."""
    text = read_text(path)
    # csv refuses fields over 128 KiB with an error naming no line: let any field through
    # (the loaders refuse an over-long one as that record's skip), for this read only.
    limit = csv.field_size_limit(max(csv.field_size_limit(), len(text) + 1))
    try:
        reader = csv.DictReader(io.StringIO(text))
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise DataFileError(f"{path}: missing columns {missing}; found {reader.fieldnames}")
        rows, start = [], reader.line_num + 1
        try:
            for row in reader:
                rows.append((start, row))
                start = reader.line_num + 1
        except csv.Error as err:
            raise DataFileError(f"{path}: line {start}: not valid CSV: {err}") from None
        return rows
    finally:
        csv.field_size_limit(limit)
