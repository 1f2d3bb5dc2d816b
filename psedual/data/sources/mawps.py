"""MAWPS-single (English): the five standard cross-validation folds, and the single split.

Both files hold the same 1,987 problems, so both are read the same way, from
the raw question (`sQuestion`) and the equation written with values
(`lEquations`): the same problem gets the same numbers in the same order
whichever file it came from. The five-fold files' own masked `text` and
`num_list` are not used; a test checks our numbers agree with them.
"""

from __future__ import annotations

from pathlib import Path

from psedual.data.build import RecordError, make_problem, text_tokens
from psedual.data.files import read_json_list
from psedual.data.numbers import quote
from psedual.data.sources.common import Collector, LoadResult, require, require_text, source_id

FOLDS = 5
FOLD_FILES = tuple(f"mawps/five_fold/fold_{k}.json" for k in range(FOLDS))
SINGLE_FILES = tuple(f"mawps/single_split/{s}.json" for s in ("train", "valid", "test"))


def _add(out: Collector, rec: object, *, split: str, fold: int, origin: str) -> None:
    def build():
        equations = require(rec, "lEquations")
        if not isinstance(equations, list) or len(equations) != 1:
            raise RecordError("unparseable equation", f"expected one equation in lEquations, found {quote(equations)}")
        answer = rec.get("answer")
        if answer is None:
            solutions = require(rec, "lSolutions")
            answer = solutions[0] if isinstance(solutions, list) and len(solutions) == 1 else solutions
        text = require_text(rec, "sQuestion")
        tokens, num_pos, texts = text_tokens(text, "en")
        problem = make_problem(dataset=out.dataset, source_id=source_id(require(rec, "iIndex"), "iIndex"), split=split,
                               fold=fold, language="en", tokens=tokens, num_pos=num_pos, number_texts=texts,
                               answer=answer, origin=origin, equation=equations[0], notes=out.result.notes)
        out.note_rules(text, "en")
        return problem

    out.add(build, split=split, fold=fold, origin=origin)


def load_folds(root: Path) -> LoadResult:
    out = Collector("mawps")
    for fold, name in enumerate(FOLD_FILES):
        for i, rec in enumerate(read_json_list(root / name)):
            _add(out, rec, split="", fold=fold, origin=f"{root / name}#{i}")
    return out.result


def load_single(root: Path) -> LoadResult:
    out = Collector("mawps-single")
    for name, split in zip(SINGLE_FILES, ("train", "valid", "test")):
        for i, rec in enumerate(read_json_list(root / name)):
            _add(out, rec, split=split, fold=-1, origin=f"{root / name}#{i}")
    return out.result
