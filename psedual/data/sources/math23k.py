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

from psedual.data.build import RecordError, make_problem, split_tokens
from psedual.data.files import DataFileError, read_concatenated_json, read_json
from psedual.data.record import SPLITS
from psedual.data.sources.common import Collector, LoadResult, require, require_text

NAME = "math23k"
FILES = ("math23k/Math_23K.json", "math23k/split_ids.json", "math23k/group_num.json")
_UNIT = re.compile(r"(?<=\d)[\u4e00-\u9fff]+(?:/[\u4e00-\u9fff]+)?")


def load(root: Path) -> LoadResult:
    path = root / FILES[0]
    records = read_concatenated_json(path)
    split_of = _read_split_ids(root / FILES[1])
    cells_of = _read_group_num(root / FILES[2])
    found = set()
    out = Collector(NAME)
    for i, rec in enumerate(records):
        source_id = str(rec.get("id", "")) if isinstance(rec, dict) else ""
        origin = f"{path}#{i} (id {source_id or '?'})"
        split = split_of.get(source_id, "")
        found.add(source_id)

        def build(rec=rec, source_id=source_id, split=split):
            if not split:
                raise RecordError("not in split_ids", f"id {source_id!r} is in no split of split_ids.json")
            equation = require_text(rec, "equation")
            stripped = _UNIT.sub("", equation)
            words = require_text(rec, "segmented_text").split()
            tokens, num_pos, texts, starts = split_tokens(words, "zh")
            # Graph2Tree's windows around the last quantity can run past the text's end.
            all_cells = cells_of.get(source_id, [])
            cells = [c for c in all_cells if c < len(starts)]
            problem = make_problem(dataset=NAME, source_id=source_id, split=split, fold=-1, language="zh",
                                   tokens=tokens, num_pos=num_pos, number_texts=texts, answer=require(rec, "ans"),
                                   origin=origin, equation=stripped, cells=[starts[c] for c in cells])
            if stripped != equation:
                out.result.notes["unit stripped from equation"] += 1
            if len(cells) != len(all_cells):
                out.result.notes["quantity-cell indices past the text's end dropped"] += 1
            return problem

        out.add(build, split=split, fold=-1, origin=origin)
    missing = set(split_of) - found
    if missing:
        raise DataFileError(f"{root / FILES[1]}: {len(missing)} ids are not in {path}, e.g. {sorted(missing)[:5]}")
    return out.result


def _read_split_ids(path: Path) -> dict[str, str]:
    data = read_json(path)
    if not isinstance(data, dict) or set(data) != set(SPLITS):
        raise DataFileError(f"{path}: expected an object with keys {list(SPLITS)}")
    split_of: dict[str, str] = {}
    for split, ids in data.items():
        for source_id in ids:
            if source_id in split_of:
                raise DataFileError(f"{path}: id {source_id!r} is in both {split_of[source_id]} and {split}")
            split_of[str(source_id)] = split
    return split_of


def _read_group_num(path: Path) -> dict[str, list[int]]:
    data = read_json(path)
    if not isinstance(data, list):
        raise DataFileError(f"{path}: expected a list of {{id, group_num}} objects")
    try:
        return {str(g["id"]): [int(c) for c in g["group_num"]] for g in data}
    except (KeyError, TypeError, ValueError) as err:
        raise DataFileError(f"{path}: malformed entry ({err!r})") from None
