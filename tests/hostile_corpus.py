"""A corpus of hostile inputs for every loader, and the outcome `psedual data stats` gives each.

Every case starts from a small copy of the real benchmark files (a few records of each, so
the rest of a file is known good) or a small jsonl folder, and changes one thing: an
auxiliary file's type or range, a record's type, an id, a path that is no file, a number
written another way. Its expected outcome is one of:
- `error`: exit 2 and one line on stderr that names the file (`fragment`);
- `skip`: the load goes on, and the stats count a skipped record whose origin or reason
  holds `fragment`;
- `load`: every record is kept (`fragment` is in the stats).
`test_hostile_corpus.py` asserts these. Run as a script, it prints each case's outcome
under whatever `psedual` is first on the path, so old and new code can be compared:

    PYTHONPATH=<checkout> python tests/hostile_corpus.py
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

GOOD = 3  # records of each real file kept around the hostile change
LONG_ID = "x" * 100_000
HANG_SECONDS = 20


@dataclass(frozen=True)
class Case:
    kind: str
    """The group of inputs (`split_ids.json`, `BYO folder`, ...)."""
    name: str
    dataset: str
    expect: str
    """`error`, `skip` or `load`."""
    fragment: str
    """In the error line (the file's name), a skip's origin or reason, or the stats."""
    change: Callable[[Path], None]
    """Changes the fresh small copy (a data root, or a jsonl folder for `jsonl`)."""


# --- the small copies ---------------------------------------------------------------------------


def _write_json(path: Path, obj: object, **kwargs) -> None:
    path.write_text(json.dumps(obj, ensure_ascii=False, **kwargs), encoding="utf-8")


def _read_json(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


def _math23k(shared: Path, root: Path) -> None:
    (root / "math23k").mkdir(parents=True)
    with open(shared / "math23k/Math_23K.json", encoding="utf-8") as f:
        lines = [next(f) for _ in range(GOOD * 7)]
    (root / "math23k/Math_23K.json").write_text("".join(lines), encoding="utf-8")
    ids = [str(json.loads("".join(lines[i:i + 7]))["id"]) for i in range(0, len(lines), 7)]
    _write_json(root / "math23k/split_ids.json", {"train": ids[:-1], "valid": [], "test": ids[-1:]})
    cells = [g for g in _read_json(shared / "math23k/group_num.json") if g["id"] in ids]
    _write_json(root / "math23k/group_num.json", cells)


def _svamp(shared: Path, root: Path) -> None:
    (root / "svamp").mkdir(parents=True)
    for name in ("train_mawps_asdiv-a.csv", "test_svamp.csv"):
        with open(shared / "svamp" / name, encoding="utf-8", newline="") as f:
            lines = [next(f) for _ in range(GOOD + 1)]
        (root / "svamp" / name).write_text("".join(lines), encoding="utf-8", newline="")
    _write_json(root / "svamp/SVAMP.json", _read_json(shared / "svamp/SVAMP.json")[:GOOD])


def _mawps(shared: Path, root: Path) -> None:
    for name in [f"five_fold/fold_{k}.json" for k in range(5)] + [f"single_split/{s}.json" for s in
                                                                  ("train", "valid", "test")]:
        (root / "mawps" / name).parent.mkdir(parents=True, exist_ok=True)
        _write_json(root / "mawps" / name, _read_json(shared / "mawps" / name)[:GOOD], indent=1)


def _mathqa(shared: Path, root: Path) -> None:
    (root / "mathqa").mkdir(parents=True)
    for name in ("valid.json", "test.json"):
        _write_json(root / "mathqa" / name, _read_json(shared / "mathqa" / name)[:GOOD], indent=1)


def _row(i: int, **change) -> dict:
    return {"id": f"p{i}", "text": f"Ann has {i + 2} apples and buys {i + 3} more .", "equation": f"x={i + 2}+{i + 3}",
            "answer": 2 * i + 5, **change}


def _jsonl(_: Path, folder: Path) -> None:
    folder.mkdir(parents=True)
    _lines(folder / "train.jsonl", [_row(i) for i in range(GOOD)])
    _lines(folder / "test.jsonl", [_row(i, id=f"t{i}") for i in range(GOOD)])


def _lines(path: Path, rows: list) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


SMALL = {"math23k": _math23k, "svamp": _svamp, "mawps": _mawps, "mawps-single": _mawps, "mathqa": _mathqa,
         "jsonl": _jsonl}


# --- changes --------------------------------------------------------------------------------------


def _edit_json(rel: str, edit: Callable[[object], object]) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        path = root / rel
        _write_json(path, edit(_read_json(path)))
    return change


def _raw(rel: str, text: str | bytes) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        (root / rel).write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return change


def _set(obj: dict, key: str, value: object) -> dict:
    return {**obj, key: value}


def _split(edit: Callable[[dict], dict]) -> Callable[[Path], None]:
    return _edit_json("math23k/split_ids.json", edit)


def _cells(edit: Callable[[list], object]) -> Callable[[Path], None]:
    return _edit_json("math23k/group_num.json", edit)


def _first_cell(value: object) -> Callable[[Path], None]:
    return _cells(lambda g: [{**g[0], "group_num": [value, *g[0]["group_num"][1:]]}, *g[1:]])


def _math23k_raw(rel: str, raw: str) -> Callable[[Path], None]:
    """A group_num.json whose first cell is written as `raw` (Infinity, NaN: not JSON's own)."""
    def change(root: Path) -> None:
        path = root / rel
        cells = _read_json(path)
        cells[0]["group_num"][0] = "@@RAW@@"
        path.write_text(json.dumps(cells).replace('"@@RAW@@"', raw), encoding="utf-8")
    return change


def _m23_records(edit: Callable[[list], list]) -> Callable[[Path], None]:
    """Math_23K.json rewritten as concatenated objects after `edit` of its record list."""
    def change(root: Path) -> None:
        path = root / "math23k/Math_23K.json"
        text, records, decoder, pos = path.read_text(encoding="utf-8"), [], json.JSONDecoder(), 0
        while pos < len(text.strip()):
            obj, pos = decoder.raw_decode(text, pos)
            records.append(obj)
            while pos < len(text) and text[pos].isspace():
                pos += 1
        path.write_text("".join(json.dumps(r, ensure_ascii=False, indent=4) + "\n" for r in edit(records)),
                        encoding="utf-8")
    return change


def _m23_field(field: str, value: object) -> Callable[[Path], None]:
    return _m23_records(lambda rs: [_set(rs[0], field, value), *rs[1:]])


def _m23_extra(record: object) -> Callable[[Path], None]:
    return _m23_records(lambda rs: [*rs, record])


def _list_edit(rel: str, index: int, edit: Callable[[object], object]) -> Callable[[Path], None]:
    return _edit_json(rel, lambda rs: [edit(r) if i == index else r for i, r in enumerate(rs)])


def _svamp_rec(edit: Callable[[object], object]) -> Callable[[Path], None]:
    return _list_edit("svamp/SVAMP.json", 1, edit)


def _mawps_rec(edit: Callable[[object], object]) -> Callable[[Path], None]:
    return _list_edit("mawps/five_fold/fold_2.json", 1, edit)


def _mathqa_rec(edit: Callable[[object], object]) -> Callable[[Path], None]:
    return _list_edit("mathqa/valid.json", 1, edit)


def _csv_cell(column: str, value: str | Callable[[str], str]) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        import csv
        path = root / "svamp/test_svamp.csv"
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            fields, rows = reader.fieldnames, list(reader)
        rows[1][column] = value(rows[1][column]) if callable(value) else value
        with path.open("w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fields)
            writer.writeheader()
            writer.writerows(rows)
    return change


def _jsonl_rows(rows: list, name: str = "train.jsonl") -> Callable[[Path], None]:
    return lambda folder: _lines(folder / name, rows)


def _jsonl_row(**change) -> Callable[[Path], None]:
    return _jsonl_rows([_row(0), _row(1, **change), _row(2)])


def _jsonl_line(line: str) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        path = folder / "train.jsonl"
        path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    return change


def _not_a_file(rel: str, how: str) -> Callable[[Path], None]:
    """Replace `rel` by a folder, a symlink loop, a dangling symlink or a FIFO."""
    def change(root: Path) -> None:
        path = root / rel
        path.unlink()
        if how == "folder":
            path.mkdir()
        elif how == "loop":
            path.symlink_to(path.name)
        elif how == "dangling":
            path.symlink_to("nowhere.json")
        else:
            os.mkfifo(path)
    return change


def _dangling(rel: str) -> Callable[[Path], None]:
    """A dangling symlink where an optional file (a jsonl folder's valid.jsonl) may be."""
    return lambda root: (root / rel).symlink_to("nowhere.jsonl")


def _twice(rel: str, key: str) -> Callable[[Path], None]:
    """The first object in `rel` that gives `key` gives it twice (`"ans": 0, "ans": "20"`): json
    would keep the last value without a word."""
    def change(root: Path) -> None:
        path = root / rel
        text = path.read_text(encoding="utf-8")
        path.write_text(re.sub(rf'"{key}"\s*:', f'"{key}": 0, "{key}":', text, count=1), encoding="utf-8")
    return change


def _remove(rel: str) -> Callable[[Path], None]:
    return lambda root: (root / rel).unlink()


def _whole_folder(how: str) -> Callable[[Path], None]:
    """The jsonl user path itself: a file, missing, or a symlink loop."""
    def change(folder: Path) -> None:
        shutil.rmtree(folder)
        if how == "file":
            folder.write_text("{}\n")
        elif how == "loop":
            folder.symlink_to(folder.name)
    return change


# --- the corpus -----------------------------------------------------------------------------------

SPLIT_IDS, GROUP_NUM, M23 = "split_ids.json", "group_num.json", "Math_23K.json"
S = "SVAMP.json"

CASES: list[Case] = [
    # Math23K's split ids: validated by type and range before use
    Case(SPLIT_IDS, "a list where an id belongs", "math23k", "error", SPLIT_IDS,
         _split(lambda d: _set(d, "train", [d["train"][:1], *d["train"][1:]]))),
    Case(SPLIT_IDS, "a split that is a number", "math23k", "error", SPLIT_IDS, _split(lambda d: _set(d, "valid", 5))),
    Case(SPLIT_IDS, "a split that is a string", "math23k", "error", SPLIT_IDS,
         _split(lambda d: _set(d, "valid", "1 2 3"))),
    Case(SPLIT_IDS, "a list, not an object", "math23k", "error", SPLIT_IDS, _split(lambda d: d["train"])),
    Case(SPLIT_IDS, "no 'valid' key", "math23k", "error", SPLIT_IDS,
         _split(lambda d: {k: v for k, v in d.items() if k != "valid"})),
    Case(SPLIT_IDS, "an extra key", "math23k", "error", SPLIT_IDS, _split(lambda d: _set(d, "dev", []))),
    Case(SPLIT_IDS, "an integer id equal to a string id", "math23k", "error", SPLIT_IDS,
         _split(lambda d: _set(d, "valid", [int(d["train"][0])]))),
    Case(SPLIT_IDS, "an id twice in one split", "math23k", "error", SPLIT_IDS,
         _split(lambda d: _set(d, "train", d["train"] + d["train"][:1]))),
    Case(SPLIT_IDS, "a boolean id", "math23k", "error", SPLIT_IDS, _split(lambda d: _set(d, "valid", [True]))),
    Case(SPLIT_IDS, "a fractional id", "math23k", "error", SPLIT_IDS, _split(lambda d: _set(d, "valid", [1.5]))),
    Case(SPLIT_IDS, "a null id", "math23k", "error", SPLIT_IDS, _split(lambda d: _set(d, "valid", [None]))),
    Case(SPLIT_IDS, "a 100,000-character id", "math23k", "error", SPLIT_IDS,
         _split(lambda d: _set(d, "valid", [LONG_ID]))),
    Case(SPLIT_IDS, "an id not in Math_23K.json", "math23k", "error", SPLIT_IDS,
         _split(lambda d: _set(d, "valid", ["999999"]))),
    Case(SPLIT_IDS, "empty file", "math23k", "error", SPLIT_IDS, _raw("math23k/split_ids.json", "")),
    Case(SPLIT_IDS, "truncated JSON", "math23k", "error", SPLIT_IDS, _raw("math23k/split_ids.json", '{"train": ["1')),
    Case(SPLIT_IDS, "not UTF-8", "math23k", "error", SPLIT_IDS, _raw("math23k/split_ids.json", b'{"train": ["\xff"]}')),
    Case(SPLIT_IDS, "a folder", "math23k", "error", SPLIT_IDS, _not_a_file("math23k/split_ids.json", "folder")),
    Case(SPLIT_IDS, "a symlink loop", "math23k", "error", SPLIT_IDS, _not_a_file("math23k/split_ids.json", "loop")),
    Case(SPLIT_IDS, "a dangling symlink", "math23k", "error", SPLIT_IDS,
         _not_a_file("math23k/split_ids.json", "dangling")),
    Case(SPLIT_IDS, "a FIFO", "math23k", "error", SPLIT_IDS, _not_a_file("math23k/split_ids.json", "fifo")),
    Case(SPLIT_IDS, "missing", "math23k", "error", SPLIT_IDS, _remove("math23k/split_ids.json")),
    Case(SPLIT_IDS, "a split's key twice", "math23k", "error", SPLIT_IDS, _twice("math23k/split_ids.json", "train")),
    # Math23K's quantity cells
    Case(GROUP_NUM, "an Infinity cell", "math23k", "error", GROUP_NUM,
         _math23k_raw("math23k/group_num.json", "Infinity")),
    Case(GROUP_NUM, "a NaN cell", "math23k", "error", GROUP_NUM, _math23k_raw("math23k/group_num.json", "NaN")),
    Case(GROUP_NUM, "a 400-digit cell", "math23k", "error", GROUP_NUM,
         _math23k_raw("math23k/group_num.json", "9" * 400)),
    Case(GROUP_NUM, "a negative cell", "math23k", "error", GROUP_NUM, _first_cell(-1)),
    Case(GROUP_NUM, "a fractional cell", "math23k", "error", GROUP_NUM, _first_cell(2.5)),
    Case(GROUP_NUM, "a string cell", "math23k", "error", GROUP_NUM, _first_cell("3")),
    Case(GROUP_NUM, "a boolean cell", "math23k", "error", GROUP_NUM, _first_cell(True)),
    Case(GROUP_NUM, "a cell of 10**30", "math23k", "error", GROUP_NUM, _first_cell(10 ** 30)),
    Case(GROUP_NUM, "group_num a number", "math23k", "error", GROUP_NUM,
         _cells(lambda g: [_set(g[0], "group_num", 7), *g[1:]])),
    Case(GROUP_NUM, "an entry that is a list", "math23k", "error", GROUP_NUM, _cells(lambda g: [[1, 2], *g[1:]])),
    Case(GROUP_NUM, "an entry without id", "math23k", "error", GROUP_NUM,
         _cells(lambda g: [{"group_num": [1]}, *g[1:]])),
    Case(GROUP_NUM, "an entry's id an object", "math23k", "error", GROUP_NUM,
         _cells(lambda g: [_set(g[0], "id", {"a": 1}), *g[1:]])),
    Case(GROUP_NUM, "two entries for one id", "math23k", "error", GROUP_NUM, _cells(lambda g: [*g, g[0]])),
    Case(GROUP_NUM, "an object, not a list", "math23k", "error", GROUP_NUM, _cells(lambda g: {"cells": g})),
    Case(GROUP_NUM, "an entry's group_num twice", "math23k", "error", GROUP_NUM,
         _twice("math23k/group_num.json", "group_num")),
    Case(GROUP_NUM, "a cell past the text's end", "math23k", "load", "quantity-cell indices past the text's end",
         _first_cell(5000)),
    # Math23K's records
    Case(M23, "a record that is a list", "math23k", "skip", "malformed record", _m23_extra([1, 2])),
    Case(M23, "a record that is a number", "math23k", "skip", "malformed record", _m23_extra(7)),
    Case(M23, "a record that is a string", "math23k", "skip", "malformed record", _m23_extra("text")),
    Case(M23, "an id that is a list", "math23k", "skip", "malformed record", _m23_extra({"id": [1]})),
    Case(M23, "a 100,000-character id", "math23k", "skip", "over a size limit",
         _m23_extra({"id": LONG_ID, "segmented_text": "3 + 4", "equation": "x=3+4", "ans": "7"})),
    Case(M23, "a 100,000-character id, twice", "math23k", "skip", "over a size limit",
         _m23_records(lambda rs: [*rs, *[{"id": LONG_ID, "segmented_text": "3 + 4", "equation": "x=3+4",
                                          "ans": "7"}] * 2])),
    Case(M23, "an answer given twice", "math23k", "skip", "key 'ans' 2 times", _twice("math23k/Math_23K.json", "ans")),
    Case(M23, "the mask [NUM] written in a text", "math23k", "skip", "invalid text",
         _m23_records(lambda rs: [_set(rs[0], "segmented_text", "[NUM] " + rs[0]["segmented_text"]), *rs[1:]])),
    Case(M23, "an equation that is a list", "math23k", "skip", "malformed record", _m23_field("equation", ["x=1"])),
    Case(M23, "1/0 in the equation", "math23k", "skip", "invalid equation value", _m23_field("equation", "x=1/0")),
    Case(M23, "a text that is a list", "math23k", "skip", "malformed record", _m23_field("segmented_text", ["a"])),
    Case(M23, "an answer '1,250'", "math23k", "load", "kept", _m23_field("ans", "1,250")),
    Case(M23, "1,000 in the text", "math23k", "load", "a thousands separator",
         _m23_records(lambda rs: [_set(rs[0], "segmented_text", rs[0]["segmented_text"] + " 共 1,000 元"),
                                  *rs[1:]])),
    Case(M23, "3e5 in the text", "math23k", "load", "scientific notation",
         _m23_records(lambda rs: [_set(rs[0], "segmented_text", rs[0]["segmented_text"] + " 约 3e5 米"), *rs[1:]])),
    # SVAMP.json, read only to name the test rows
    Case(S, "a record that is a list", "svamp", "skip", "SVAMP.json malformed record", _svamp_rec(lambda r: [r])),
    Case(S, "a record that is a string", "svamp", "skip", "SVAMP.json malformed record", _svamp_rec(lambda r: "x")),
    Case(S, "1/0 in the body", "svamp", "skip", "SVAMP.json unreadable number",
         _svamp_rec(lambda r: _set(r, "Body", "He ate 1/0 pies."))),
    Case(S, "a 400-digit number in the body", "svamp", "skip", "SVAMP.json over a size limit",
         _svamp_rec(lambda r: _set(r, "Body", "He ate " + "9" * 400 + " pies."))),
    Case(S, "no ID", "svamp", "skip", "SVAMP.json missing field",
         _svamp_rec(lambda r: {k: v for k, v in r.items() if k != "ID"})),
    Case(S, "an ID that is a list", "svamp", "skip", "SVAMP.json malformed record",
         _svamp_rec(lambda r: _set(r, "ID", ["chal-1"]))),
    Case(S, "a 100,000-character ID", "svamp", "skip", "SVAMP.json over a size limit",
         _svamp_rec(lambda r: _set(r, "ID", LONG_ID))),
    Case(S, "a body that is a number", "svamp", "skip", "SVAMP.json malformed record",
         _svamp_rec(lambda r: _set(r, "Body", 5))),
    Case(S, "a body given twice", "svamp", "skip", "SVAMP.json malformed record", _twice("svamp/SVAMP.json", "Body")),
    Case(S, "an object, not a list", "svamp", "error", S, _edit_json("svamp/SVAMP.json", lambda rs: {"r": rs})),
    Case("SVAMP CSV", "1/0 in Numbers", "svamp", "skip", "unreadable number", _csv_cell("Numbers", "1/0 3")),
    Case("SVAMP CSV", "a slot N00 in the equation", "svamp", "skip", "not canonical",
         _csv_cell("Equation", "+ N00 number1")),
    Case("SVAMP CSV", "the mask [NUM] written in a question", "svamp", "skip", "invalid text",
         _csv_cell("Question", lambda q: "[NUM] " + q)),
    Case("SVAMP CSV", "no Numbers column", "svamp", "error", "test_svamp.csv",
         _raw("svamp/test_svamp.csv", "Question,Equation,Answer\nq,x,1\n")),
    Case("SVAMP CSV", "a folder", "svamp", "error", "test_svamp.csv", _not_a_file("svamp/test_svamp.csv", "folder")),
    # MAWPS
    Case("MAWPS", "a record that is a list", "mawps", "skip", "malformed record", _mawps_rec(lambda r: [r])),
    Case("MAWPS", "an iIndex that is a list", "mawps", "skip", "malformed record",
         _mawps_rec(lambda r: _set(r, "iIndex", [1]))),
    Case("MAWPS", "a 100,000-character iIndex", "mawps", "skip", "over a size limit",
         _mawps_rec(lambda r: _set(r, "iIndex", LONG_ID))),
    Case("MAWPS", "a boolean iIndex", "mawps", "skip", "malformed record",
         _mawps_rec(lambda r: _set(r, "iIndex", True))),
    Case("MAWPS", "lEquations an object", "mawps", "skip", "unparseable equation",
         _mawps_rec(lambda r: _set(r, "lEquations", {"x": 1}))),
    Case("MAWPS", "an answer given twice", "mawps", "skip", "key 'answer' 2 times",
         _twice("mawps/five_fold/fold_2.json", "answer")),
    Case("MAWPS", "lEquations given twice (single split)", "mawps-single", "skip", "key 'lEquations' 2 times",
         _twice("mawps/single_split/test.json", "lEquations")),
    Case("MAWPS", "an object, not a list", "mawps", "error", "fold_2.json",
         _edit_json("mawps/five_fold/fold_2.json", lambda rs: {"r": rs})),
    Case("MAWPS", "a mixed number 2 1/2", "mawps", "load", "a mixed number",
         _mawps_rec(lambda r: _set(r, "sQuestion", r["sQuestion"] + " Add 2 1/2 cups."))),
    Case("MAWPS", "a number glued to a unit, 5kg", "mawps", "load", "glued to a unit",
         _mawps_rec(lambda r: _set(r, "sQuestion", r["sQuestion"] + " It weighs 5kg."))),
    Case("MAWPS", "the same file as a folder", "mawps", "error", "fold_2.json",
         _not_a_file("mawps/five_fold/fold_2.json", "folder")),
    Case("MAWPS", "a single-split file as a symlink loop", "mawps-single", "error", "valid.json",
         _not_a_file("mawps/single_split/valid.json", "loop")),
    # MathQA
    Case("MathQA", "a record that is a number", "mathqa", "skip", "malformed record", _mathqa_rec(lambda r: 3)),
    Case("MathQA", "1.5E3*2 with 1.5 in the text", "mathqa", "load", "kept",
         _mathqa_rec(lambda r: {"original_text": "a box holds 1.5 kg .", "equation": "x=1.5E3*2", "ans": "3000"})),
    Case("MathQA", "an answer '1,250'", "mathqa", "load", "kept",
         _mathqa_rec(lambda r: {"original_text": "a box holds 1,000 and 250 .", "equation": "x=1000+250",
                                "ans": "1,250"})),
    Case("MathQA", "2e-3 in the text", "mathqa", "load", "scientific notation",
         _mathqa_rec(lambda r: {"original_text": "a grain weighs 2e-3 kg ; 5 grains ?", "equation": "x=0.002*5",
                                "ans": "0.01"})),
    Case("MathQA", "an equation given twice", "mathqa", "skip", "key 'equation' 2 times",
         _twice("mathqa/valid.json", "equation")),
    Case("MathQA", "the test file as a FIFO", "mathqa", "error", "test.json", _not_a_file("mathqa/test.json", "fifo")),
    # A user's own folder of JSON Lines
    Case("BYO folder", "train.jsonl a folder", "jsonl", "error", "train.jsonl", _not_a_file("train.jsonl", "folder")),
    Case("BYO folder", "train.jsonl a symlink loop", "jsonl", "error", "train.jsonl",
         _not_a_file("train.jsonl", "loop")),
    Case("BYO folder", "train.jsonl a dangling symlink", "jsonl", "error", "train.jsonl",
         _not_a_file("train.jsonl", "dangling")),
    Case("BYO folder", "train.jsonl a FIFO", "jsonl", "error", "train.jsonl", _not_a_file("train.jsonl", "fifo")),
    Case("BYO folder", "no test.jsonl", "jsonl", "error", "test.jsonl", _remove("test.jsonl")),
    Case("BYO folder", "train.jsonl a sparse file past the size limit", "jsonl", "error", "bytes, over the",
         lambda f: os.truncate(f / "train.jsonl", 300 * 2**20)),
    Case("BYO folder", "valid.jsonl a dangling symlink", "jsonl", "error", "valid.jsonl", _dangling("valid.jsonl")),
    Case("BYO folder", "valid.jsonl a symlink loop", "jsonl", "error", "valid.jsonl",
         lambda f: (f / "valid.jsonl").symlink_to("valid.jsonl")),
    Case("BYO folder", "the folder is a file", "jsonl", "error", "mine", _whole_folder("file")),
    Case("BYO folder", "the folder is missing", "jsonl", "error", "mine", _whole_folder("missing")),
    Case("BYO folder", "the folder is a symlink loop", "jsonl", "error", "mine", _whole_folder("loop")),
    Case("BYO folder", "an unterminated string", "jsonl", "error",
         "line 4 is not valid JSON: Unterminated string starting at column", _jsonl_line('{"id": "q", "text": "abc')),
    Case("BYO folder", "a duplicated id", "jsonl", "error", "train.jsonl:1", _jsonl_row(id="p0")),
    Case("BYO folder", "a duplicated 100,000-character id", "jsonl", "skip", "over a size limit",
         _jsonl_rows([_row(0), _row(1, id=LONG_ID), _row(2, id=LONG_ID)])),
    Case("JSON Lines", "raw U+2028 inside a string", "jsonl", "load", "kept",
         _jsonl_row(text="Ann has 3 apples\u2028and buys 4 more .", equation="x=3+4", answer=7)),
    Case("JSON Lines", "raw U+0085 inside a string", "jsonl", "load", "kept",
         _jsonl_row(text="Ann has 3 apples\u0085and buys 4 more .", equation="x=3+4", answer=7)),
    Case("JSON Lines", "CRLF line ends", "jsonl", "load", "kept",
         lambda f: (f / "train.jsonl").write_bytes((f / "train.jsonl").read_bytes().replace(b"\n", b"\r\n"))),
    Case("JSON Lines", "a byte-order mark", "jsonl", "load", "kept",
         lambda f: (f / "train.jsonl").write_bytes(b"\xef\xbb\xbf" + (f / "train.jsonl").read_bytes())),
    Case("JSON Lines", "an answer given twice", "jsonl", "skip", "key 'answer' 2 times",
         _jsonl_line('{"id": "q", "text": "Ann has 3 and 4 .", "equation": "x=3+4", "answer": 7, "answer": 8}')),
    Case("JSON Lines", "an id given twice", "jsonl", "skip", "key 'id' 2 times",
         _jsonl_line('{"id": "q", "id": "p0", "text": "Ann has 3 and 4 .", "equation": "x=3+4", "answer": 7}')),
    Case("JSON Lines", "an equation given twice, in test", "jsonl", "skip", "key 'equation' 2 times",
         lambda f: (f / "test.jsonl").write_text((f / "test.jsonl").read_text() + '{"id": "t9", "text": "Ann has 3 '
                                                 'and 4 .", "equation": "x=3*4", "equation": "x=3+4", "answer": 7}\n')),
    Case("JSON Lines", "the mask [NUM] written in a Chinese text", "jsonl", "skip", "invalid text",
         _jsonl_row(language="zh", text="有 [NUM] 个 苹果 , 3 个 梨", equation="x=3+1", answer=4)),
    Case("JSON Lines", "an id that is a list", "jsonl", "skip", "malformed record", _jsonl_row(id=["p1"])),
    Case("JSON Lines", "an id that is an object", "jsonl", "skip", "malformed record", _jsonl_row(id={"a": 1})),
    Case("JSON Lines", "a 100,000-character language", "jsonl", "skip", "bad language",
         _jsonl_row(language=LONG_ID)),
    Case("JSON Lines", "prefix slots N00 N01", "jsonl", "skip", "not canonical",
         _jsonl_row(equation=None, prefix="+ N00 N01")),
    Case("JSON Lines", "prefix slots in Arabic-Indic digits", "jsonl", "skip", "not canonical",
         _jsonl_row(equation=None, prefix="+ N\u0660 N\u0661")),
    Case("JSON Lines", "an infix slot N01", "jsonl", "skip", "not canonical", _jsonl_row(equation="x=N01+2")),
    Case("JSON Lines", "a test record with 40 numbers", "jsonl", "load", "kept",
         _jsonl_rows([_row(0, id="t9", text="Ann has " + " and ".join(map(str, range(1, 41))) + " apples .",
                           equation="x=1+2", answer=3)], "test.jsonl")),
    Case("JSON Lines", "an answer '1,250'", "jsonl", "load", "kept",
         _jsonl_row(text="Ann has 1,000 and 250 .", equation="x=1000+250", answer="1,250")),
    Case("JSON Lines", "1.5E3*2 with 1.5 in the text", "jsonl", "load", "kept",
         _jsonl_row(text="A box holds 1.5 kg .", equation="x=1.5E3*2", answer=3000)),
    Case("JSON Lines", "1,000 in Chinese text", "jsonl", "load", "a thousands separator",
         _jsonl_row(language="zh", text="共 有 1,000 元 , 用 了 250 元", equation="x=1000-250", answer=750)),
    Case("JSON Lines", "3,5 in Chinese text", "jsonl", "load", "groups no thousands",
         _jsonl_row(language="zh", text="数 3,5 的 和", equation="x=3+5", answer=8)),
    Case("JSON Lines", "2 1/2 in English text", "jsonl", "load", "a mixed number",
         _jsonl_row(text="Ann has 2 1/2 pies and 2 more .", equation="x=2.5+2", answer=4.5)),
    Case("JSON Lines", "2e-3 and 3e5 in English text", "jsonl", "load", "scientific notation",
         _jsonl_row(text="A grain weighs 2e-3 kg ; 3e5 grains ?", equation="x=0.002*300000", answer=600)),
    Case("JSON Lines", "5kg and 10cm in English text", "jsonl", "load", "glued to a unit",
         _jsonl_row(text="A 5kg box is 10cm wide .", equation="x=5*10", answer=50)),
]


def build(case: Case, shared: Path, dest: Path) -> tuple[str | None, str | None]:
    """The case's small copy under `dest`, changed: (data root, user path) for `data stats`."""
    target = dest / ("mine" if case.dataset == "jsonl" else "data")
    SMALL[case.dataset](shared, target)
    case.change(target)
    return (None, str(target)) if case.dataset == "jsonl" else (str(target), None)


def _alarm(signum, frame):
    raise TimeoutError(f"no answer in {HANG_SECONDS} s")


def outcome(case: Case, data_root: str | None, user_path: str | None) -> tuple[str, str]:
    """(`error` | `skip` | `load` | `traceback` | `hang`, what `psedual data stats` said)."""
    from psedual.cli import main

    argv = ["data", "stats", case.dataset, "--no_cache"]
    argv += ["--data_root", data_root] if data_root else ["--user_path", user_path]
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_SECONDS)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except TimeoutError as e:
        return "hang", str(e)
    except Exception as e:  # what a user would see as a traceback: any error the CLI does not catch
        return "traceback", f"{type(e).__name__}: {str(e)[:300]}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    if code == 2:
        return "error", err.getvalue()
    text = out.getvalue()
    skipped = "skipped by reason: none" not in text
    return ("skip" if skipped else "load"), text


def main() -> None:
    import tempfile

    from psedual.data.root import find_data_root

    shared = find_data_root()
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k, case in enumerate(CASES):
            dest = Path(tmp) / str(k)
            got, said = outcome(case, *build(case, shared, dest))
            counts[got] = counts.get(got, 0) + 1
            first = said.strip().splitlines()[0] if said.strip() else ""
            if got in ("skip", "load"):
                first = next((line.strip() for line in said.splitlines() if case.fragment in line), first)
            print(f"{case.kind} | {case.name} | expected {case.expect} | got {got} | {first[:160]}")
    print(f"{len(CASES)} cases: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))


if __name__ == "__main__":
    sys.exit(main())
