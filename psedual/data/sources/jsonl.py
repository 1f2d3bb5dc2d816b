"""Bring your own dataset: a folder of JSON Lines files, no code needed.

Layout: `DIR/train.jsonl`, `DIR/test.jsonl`, and optionally `DIR/valid.jsonl`
(without it, validation is carved from train like MAWPS's). One problem per line:

    {"id": "p1", "text": "Maria has 3 boxes of 7 eggs. How many eggs?",
     "equation": "x = 3 * 7", "answer": 21}

- `text` (required): the problem; numbers are found in it as in MAWPS (English)
  or, with `"language": "zh"`, in its space-separated words as in Math23K.
- `equation` (infix, with the numbers' values, `x=` optional) or `prefix` (a
  list or a space-separated string over `N0..Nk`, the text's numbers in order,
  and constant literals): exactly one of the two.
- `answer` (required): a number, or a string such as `"3/4"` or `"50%"`.
- `id` (optional): a string or an integer of at most 200 characters (`common.MAX_ID_CHARS`),
  defaults to `<split>-<line>`; ids must be unique: a repeated id stops the load
  (`DataFileError` naming both lines).

Only those three files are read: anything else in the folder (`dev.jsonl`, `valid.json`, a
folder named `old.jsonl`) is listed in one note (`data stats` shows it), never read, and
not part of the cache key.

Lines end at `\n` only (a JSON string may hold U+2028 or U+0085). A line that is not JSON stops the load (`DataFileError` naming file and line);
any other fault of one record is a counted skip naming `file:line` and why,
including the size limits listed in `build` (10,000 characters of text, 100
numbers, 100-digit numbers, expressions 100 deep).
"""

from __future__ import annotations

from pathlib import Path

from psedual.data.build import RecordError, make_problem, text_tokens
from psedual.data.files import DataFileError, read_jsonl
from psedual.data.numbers import quote
from psedual.data.sources.common import Collector, LoadResult, require, require_text, source_id

NAME = "jsonl"
SPLIT_FILES = {"train": "train.jsonl", "valid": "valid.jsonl", "test": "test.jsonl"}


_LISTED = 10
"""Names the not-read note lists before it says how many more."""


def files(folder: Path | None) -> list[Path]:
    """The source files of a folder: train, test and (if there) valid.jsonl; what keys the cache."""
    if folder is None:
        return []
    return [folder / name for split, name in SPLIT_FILES.items() if split != "valid" or _present(folder / name)]


def _present(path: Path) -> bool:
    """Whether the folder has this name at all: a dangling symbolic link counts, so that reading
    it is one error naming it, not a valid split silently carved from train instead."""
    return path.exists() or path.is_symlink()


def not_read_note(folder: Path) -> str | None:
    """One note naming what else the folder holds (a `dev.jsonl` or `valid.json` the user may
    have meant as a split), or None."""
    try:
        others = sorted(e.name + ("/" if e.is_dir() else "") for e in folder.iterdir()
                        if e.name not in SPLIT_FILES.values() and not e.name.startswith("."))
    except OSError:
        return None
    if not others:
        return None
    shown = ", ".join(others[:_LISTED]) + (f" and {len(others) - _LISTED} more" if len(others) > _LISTED else "")
    return f"not read (only {', '.join(SPLIT_FILES.values())} are): {shown}"


def load(folder: Path) -> LoadResult:
    if not folder.is_dir():
        raise DataFileError(f"{folder}: not a folder (a jsonl dataset is a folder with train.jsonl and test.jsonl)")
    out = Collector(NAME)
    if (note := not_read_note(folder)) is not None:
        out.result.notes[note] += 1
    for split, name in SPLIT_FILES.items():
        path = folder / name
        if split == "valid" and not _present(path):
            continue
        for lineno, rec in read_jsonl(path):
            origin = f"{path}:{lineno}"

            def build(rec=rec, split=split, lineno=lineno, origin=origin):
                language = rec.get("language", "en") if isinstance(rec, dict) else "en"
                if language not in ("en", "zh"):
                    raise RecordError("bad language", f"language {quote(language)}; use 'en' or 'zh'")
                given = rec.get("id") if isinstance(rec, dict) else None
                problem_id = f"{split}-{lineno}" if given is None else source_id(given)
                text = require_text(rec, "text")
                tokens, num_pos, texts = text_tokens(text, language)
                prefix = rec.get("prefix")
                if isinstance(prefix, str):
                    prefix = prefix.split()
                problem = make_problem(dataset=NAME, source_id=problem_id, split=split, fold=-1, language=language,
                                       tokens=tokens, num_pos=num_pos, number_texts=texts, answer=require(rec, "answer"),
                                       origin=origin, equation=rec.get("equation"), prefix=prefix, notes=out.result.notes)
                out.note_rules(text, language)
                return problem

            out.add(build, split=split, fold=-1, origin=origin)
    return out.result
