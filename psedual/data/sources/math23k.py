"""Math23K (Chinese): the raw 7-line-object file and the standard 21,162/1,000/1,000 split.

Numbers are found in `segmented_text` words with the Chinese number pattern
(`numbers.py`); a word such as `10cm` becomes `[NUM] cm`. Graph2Tree's quantity
cells (`group_num.json`, indices into `segmented_text` words) are remapped to
the split tokens; indices past the text's end (windows around the last
quantity) are dropped and counted. One equation (id 10431, `x=80千米/小时`) carries a unit; units
written after a number are stripped from equations and counted as a repair.
"""

from __future__ import annotations

import re
from pathlib import Path

from psedual.data.build import MAX_TEXT_CHARS, RecordError, make_problem, split_tokens
from psedual.data.files import DataFileError, DuplicateKeys, read_concatenated_json, read_json
from psedual.data.numbers import quote
from psedual.data.record import SPLITS
from psedual.data.sources.common import Collector, LoadResult, require, require_text, shown_id
from psedual.data.sources.common import source_id as source_id_of

NAME = "math23k"
FILES = ("math23k/Math_23K.json", "math23k/split_ids.json", "math23k/group_num.json")
# A text of MAX_TEXT_CHARS characters has fewer words than this: a larger index points at nothing.
MAX_CELL = MAX_TEXT_CHARS
_UNIT = re.compile(r"(?<=\d)[\u4e00-\u9fff]+(?:/[\u4e00-\u9fff]+)?")


def load(root: Path) -> LoadResult:
    path = root / FILES[0]
    records = read_concatenated_json(path)
    split_of = _read_split_ids(root / FILES[1])
    cells_of = _read_group_num(root / FILES[2])
    found = set()
    out = Collector(NAME)
    for i, rec in enumerate(records):
        # A record with a key twice still names its id (if given once): its skip is that id's.
        raw_id = rec.get("id") if isinstance(rec, (dict, DuplicateKeys)) else None
        origin = f"{path}#{i} (id {shown_id(raw_id) if raw_id is not None else '?'})"
        try:
            source_id = source_id_of(raw_id)
        except RecordError:
            source_id = ""  # refused again inside build, as this record's counted skip
        split = split_of.get(source_id, "")
        found.add(source_id)

        def build(rec=rec, source_id=source_id, split=split):
            source_id_of(require(rec, "id"))
            if not split:
                raise RecordError("not in split_ids", f"id {source_id!r} is in no split of split_ids.json")
            equation = require_text(rec, "equation")
            stripped = _UNIT.sub("", equation)
            text = require_text(rec, "segmented_text")
            words = text.split()
            tokens, num_pos, texts, starts = split_tokens(words, "zh")
            # Graph2Tree's windows around the last quantity can run past the text's end.
            all_cells = cells_of.get(source_id, [])
            cells = [c for c in all_cells if c < len(starts)]
            problem = make_problem(dataset=NAME, source_id=source_id, split=split, fold=-1, language="zh",
                                   tokens=tokens, num_pos=num_pos, number_texts=texts, answer=require(rec, "ans"),
                                   origin=origin, equation=stripped, cells=[starts[c] for c in cells], notes=out.result.notes)
            if stripped != equation:
                out.result.notes["unit stripped from equation"] += 1
            if len(cells) != len(all_cells):
                out.result.notes["quantity-cell indices past the text's end dropped"] += 1
            out.note_rules(text, "zh")
            return problem

        out.add(build, split=split, fold=-1, origin=origin)
    missing = set(split_of) - found
    if missing:
        raise DataFileError(f"{root / FILES[1]}: {len(missing)} ids are not in {path}, e.g. "
                            f"{quote(sorted(missing)[:5])}")
    return out.result


def _read_split_ids(path: Path) -> dict[str, str]:
    """id -> split. Ids are strings or integers (`12` and `"12"` are the same id, so one written
    both ways in two splits is refused, not moved)."""
    data = read_json(path)
    if not isinstance(data, dict) or set(data) != set(SPLITS):
        found = quote(sorted(map(str, data))[:5]) if isinstance(data, dict) else f"a {type(data).__name__}"
        raise DataFileError(f"{path}: expected an object with keys {list(SPLITS)}, found {found}")
    split_of: dict[str, str] = {}
    for split, ids in data.items():
        if not isinstance(ids, list):
            raise DataFileError(f"{path}: {split!r} must be a list of ids, found {type(ids).__name__}")
        for k, value in enumerate(ids):
            try:
                source_id = source_id_of(value)
            except RecordError as err:
                raise DataFileError(f"{path}: {split}[{k}]: {err.detail}") from None
            if source_id in split_of:
                raise DataFileError(f"{path}: {split}[{k}]: id {quote(source_id)} is already in "
                                    f"{split_of[source_id]}")
            split_of[source_id] = split
    return split_of


def _read_group_num(path: Path) -> dict[str, list[int]]:
    """id -> quantity-cell word indices: non-negative integers (a negative one would index
    from the end), one entry per id."""
    data = read_json(path)
    if not isinstance(data, list):
        raise DataFileError(f"{path}: expected a list of {{id, group_num}} objects, found {type(data).__name__}")
    cells_of: dict[str, list[int]] = {}
    for k, entry in enumerate(data):
        if not isinstance(entry, dict) or "id" not in entry or not isinstance(entry.get("group_num"), list):
            raise DataFileError(f"{path}#{k}: expected an object with 'id' and a list 'group_num', "
                                f"found {quote(entry, 120)}")
        try:
            source_id = source_id_of(entry["id"])
        except RecordError as err:
            raise DataFileError(f"{path}#{k}: {err.detail}") from None
        cells = entry["group_num"]
        # `type(c) is int`: True is an int to isinstance; checked in C for 23,162 entries
        if len(cells) > MAX_CELL or not all(type(c) is int for c in cells) or \
                (cells and not 0 <= min(cells) <= max(cells) < MAX_CELL):
            bad = next((c for c in cells if type(c) is not int or not 0 <= c < MAX_CELL), None)
            what = f"cell {quote(bad, 60)}" if bad is not None else f"{len(cells):,} cells"
            raise DataFileError(f"{path}#{k} (id {shown_id(source_id)}): group_num must hold word indices "
                                f"0..{MAX_CELL - 1}, found {what}")
        if source_id in cells_of:
            raise DataFileError(f"{path}#{k}: id {quote(source_id)} has a second group_num entry")
        cells_of[source_id] = cells
    return cells_of
