"""Reading source files with errors that name the file, the record and the fault."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path


class DataFileError(ValueError):
    """A source file that cannot be read as a whole: missing, empty, not UTF-8, not JSON."""


def read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataFileError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise DataFileError(f"{path}: is a directory, expected a file") from None
    if not raw.strip():
        raise DataFileError(f"{path}: empty file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DataFileError(f"{path}: not UTF-8 (byte {err.start}, line {line}: {raw[err.start:err.start + 4]!r})") from None


def _json_error(path: Path, err: json.JSONDecodeError, what: str) -> DataFileError:
    return DataFileError(f"{path}: {what}: {err.msg} at line {err.lineno} column {err.colno}")


def read_json(path: Path) -> object:
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise _json_error(path, err, "invalid or truncated JSON") from None


def read_json_list(path: Path) -> list[object]:
    data = read_json(path)
    if not isinstance(data, list):
        raise DataFileError(f"{path}: expected a JSON list of records, found {type(data).__name__}")
    return data


def read_concatenated_json(path: Path) -> list[object]:
    """Objects written one after another with no enclosing list (Math23K's raw file)."""
    text = read_text(path)
    decoder = json.JSONDecoder()
    records: list[object] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return records
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise _json_error(path, err, f"record {len(records)} (after {len(records)} good records) is not valid JSON") from None
        records.append(obj)


def read_jsonl(path: Path) -> Iterator[tuple[int, object]]:
    """(line number, object) for each non-blank line."""
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFileError(f"{path}: line {lineno} is not valid JSON: {err.msg} at column {err.colno}") from None


def read_csv(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(read_text(path)))
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        raise DataFileError(f"{path}: missing columns {missing}; found {reader.fieldnames}")
    return list(reader)
