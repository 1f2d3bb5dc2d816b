"""SVAMP in its paper's setting: train on MAWPS + ASDiv-A (3,138), test on SVAMP (1,000).

Both CSVs mask numbers as `number0`, `number1`, ... with the values in
`Numbers` and the equation in prefix over the masks. Each mask occurrence is a
slot, numbered in order of appearance; `numberK` in the equation refers to the
first occurrence of mask K. Test rows get SVAMP's own ids (`chal-1`, ...) by
matching their text and numbers to `SVAMP.json`. The two files disagree on 58
problems (a typo, or numbers in another order); the CSV is what the SVAMP
paper tested on, so it is kept, and the mismatches are counted. A row is
matched to SVAMP.json only once it has become a problem, so a malformed row
(too few `Numbers`, an unreadable one) is a counted skip naming its line. An ID is given to
one row at most, the row matching it exactly first: another row that would take it (a copy, or
an added variant over other numbers) keeps `test-<row>`, counted, never a duplicate id that
would stop the load.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

from psedual.data.build import MAX_NUMBERS, OVER_LIMIT, RecordError, check_text, english_words, make_problem
from psedual.data.expr import MAX_EXPRESSION_CHARS
from psedual.data.files import read_csv, read_json_list
from psedual.data.numbers import NumberError, SizeLimitError, parse_number, quote
from psedual.data.record import NUM_TOKEN
from psedual.data.sources.common import Collector, LoadResult, require, require_text, source_id

NAME = "svamp"
FILES = ("svamp/train_mawps_asdiv-a.csv", "svamp/test_svamp.csv", "svamp/SVAMP.json")
_MASK = re.compile(r"number(\d+)")
_COLUMNS = ("Question", "Numbers", "Equation", "Answer")


TAKEN = "test rows matching an SVAMP.json ID another row has (CSV kept, id test-<row>)"


def load(root: Path) -> LoadResult:
    out = Collector(NAME)
    ids = _svamp_ids(root / FILES[2], out)
    rows = {name: read_csv(root / name, _COLUMNS) for name in FILES[:2]}
    # An ID goes to the row whose text and numbers match it exactly before any row matching its
    # text only, and to one row at most: an extra variant row (same text, other numbers) keeps
    # its own test-<row> id instead of stopping the load with a duplicate id.
    exact = {ids[key] for _, row in rows[FILES[1]] if (key := _safe_key(row)) in ids}
    taken: set[str] = set()
    for name, split in ((FILES[0], "train"), (FILES[1], "test")):
        path = root / name
        for i, (line, row) in enumerate(rows[name]):
            origin = f"{path}:{line}"

            def build(row=row, split=split, origin=origin, i=i):
                problem = _problem(row, f"{split}-{i}", split, origin, out.result.notes)
                # Only now: the row's masks and Numbers are known to be consistent and readable.
                svamp_id = _test_id(row, ids, exact, out) if split == "test" else None
                if svamp_id is None:
                    return problem
                if svamp_id in taken:
                    out.result.notes[TAKEN] += 1
                    return problem
                taken.add(svamp_id)
                return replace(problem, id=f"{NAME}:{svamp_id}")

            out.add(build, split=split, fold=-1, origin=origin)
    return out.result


def _numbers(row: dict[str, str]) -> list[str]:
    """The row's `Numbers`, every one readable (even those no mask refers to)."""
    values = require_text(row, "Numbers").split()
    if len(values) > MAX_NUMBERS:
        raise RecordError(OVER_LIMIT, f"{len(values):,} Numbers (limit {MAX_NUMBERS})")
    for v in values:
        try:
            parse_number(v)
        except SizeLimitError as err:
            raise RecordError(OVER_LIMIT, f"Numbers: {err}") from err
        except NumberError as err:
            raise RecordError("unreadable number", f"Numbers {quote(row['Numbers'])}: {err}") from err
    return values


def _problem(row: dict[str, str], source_id: str, split: str, origin: str, notes: Counter[str]):
    values = _numbers(row)
    tokens: list[str] = []
    num_pos: list[int] = []
    texts: list[str] = []
    first_slot: dict[int, int] = {}
    for word in require_text(row, "Question").split():
        m = _MASK.fullmatch(word)
        if m is None:
            tokens.append(word)
            continue
        k = int(m.group(1))
        if k >= len(values):
            raise RecordError("unknown number mask", f"{word} but only {len(values)} Numbers: {quote(row['Numbers'])}")
        first_slot.setdefault(k, len(num_pos))
        num_pos.append(len(tokens))
        texts.append(values[k])
        tokens.append(NUM_TOKEN)
    prefix = []
    for token in require_text(row, "Equation", MAX_EXPRESSION_CHARS).split():
        m = _MASK.fullmatch(token)
        if m is not None and int(m.group(1)) not in first_slot:
            raise RecordError("unknown number mask", f"equation uses {quote(token)}, which the question lacks")
        prefix.append(f"N{first_slot[int(m.group(1))]}" if m else token)
    return make_problem(dataset=NAME, source_id=source_id, split=split, fold=-1, language="en", tokens=tokens,
                        num_pos=num_pos, number_texts=texts, answer=require_text(row, "Answer"), origin=origin,
                        prefix=prefix, notes=notes)


def _safe_key(row: dict[str, str]) -> tuple[str, tuple] | None:
    """`_row_key`, or None for a malformed row (its own build turns it into a counted skip)."""
    try:
        return _row_key(row)
    except (ValueError, LookupError, AttributeError, TypeError):
        return None


def _test_id(row: dict[str, str], ids: dict, exact: set[str], out: Collector) -> str | None:
    key = _row_key(row)
    if key in ids:
        return ids[key]
    same_text = [v for k, v in ids.items() if k[0] == key[0]]
    if len(same_text) == 1 and same_text[0] not in exact:  # an ID another row matches exactly is that row's
        out.result.notes["test rows whose numbers differ from SVAMP.json (CSV kept)"] += 1
        return same_text[0]
    out.result.notes["test rows whose text differs from SVAMP.json (CSV kept, id test-<row>)"] += 1
    return None


def _key(words: list[str], numbers: list[str]) -> tuple[str, tuple]:
    """Text without numbers, case or spacing, plus the number values: equal for the
    same problem whether it is written raw (SVAMP.json) or masked (the CSV)."""
    text = "".join(w.lower() for w in words if not _MASK.fullmatch(w) and not w[0].isdigit())
    return re.sub(r"\W", "", text), tuple(parse_number(n) for n in numbers)


def _row_key(row: dict[str, str]) -> tuple[str, tuple]:
    words = row["Question"].split()
    values = row["Numbers"].split()
    return _key(words, [values[int(m.group(1))] for w in words if (m := _MASK.fullmatch(w))])


def _svamp_ids(path: Path, out: Collector) -> dict[tuple[str, tuple], str]:
    """Text-and-numbers key -> SVAMP.json's `ID`. A record that cannot give a key (not an
    object, an unreadable number, a bad `ID`) is a counted skip of the test split naming
    `SVAMP.json#index`; the CSV row it would have named keeps its `test-<row>` id."""
    ids = {}
    for i, rec in enumerate(read_json_list(path)):
        entry = out.attempt(lambda rec=rec: _id_entry(rec), split="test", fold=-1, origin=f"{path}#{i}",
                            what="SVAMP.json ")
        if entry is not None:
            ids[entry[0]] = entry[1]
    return ids


def _id_entry(rec: object) -> tuple[tuple[str, tuple], str]:
    """(key, ID) of one SVAMP.json record, or a RecordError saying what is wrong with it."""
    svamp_id = source_id(require(rec, "ID"), "ID")
    body, question = (rec.get(f, "") for f in ("Body", "Question"))
    if not isinstance(body, str) or not isinstance(question, str):
        raise RecordError("malformed record", f"'Body' and 'Question' must be strings, found "
                          f"{type(body).__name__} and {type(question).__name__}")
    words = english_words(check_text(f"{body} {question}", "Body and Question"))
    try:
        return _key(words, [w for w in words if w[0].isdigit()]), svamp_id
    except SizeLimitError as err:
        raise RecordError(OVER_LIMIT, str(err)) from err
    except NumberError as err:
        raise RecordError("unreadable number", str(err)) from err
