"""MathQA in the MWP form of Tan et al. 2021 / Li et al. 2022 (infix `x=...`, constants inline).

Shared data holds valid (3,540) and test (2,410) only; the training split
(23,703) is read from a file of the same form that the user supplies, by
default `<data root>/mathqa/train.json`.
"""

from __future__ import annotations

from pathlib import Path

from psedual.data.build import make_problem, text_tokens
from psedual.data.files import read_json_list
from psedual.data.sources.common import Collector, LoadResult, require, require_text

NAME = "mathqa"
FILES = ("mathqa/valid.json", "mathqa/test.json")
TRAIN_FILE = "mathqa/train.json"


def load(root: Path, train_file: Path | None = None) -> LoadResult:
    out = Collector(NAME)
    paths = [(root / FILES[0], "valid"), (root / FILES[1], "test")]
    train = train_file or root / TRAIN_FILE
    if train_file is not None or train.exists():
        paths.insert(0, (train, "train"))
    for path, split in paths:
        for i, rec in enumerate(read_json_list(path)):
            origin = f"{path}#{i}"

            def build(rec=rec, split=split, i=i, origin=origin):
                text = require_text(rec, "original_text")
                tokens, num_pos, texts = text_tokens(text, "en")
                problem = make_problem(dataset=NAME, source_id=f"{split}-{i}", split=split, fold=-1, language="en",
                                       tokens=tokens, num_pos=num_pos, number_texts=texts, answer=require(rec, "ans"),
                                       origin=origin, equation=require_text(rec, "equation"), notes=out.result.notes)
                out.note_rules(text, "en")
                return problem

            out.add(build, split=split, fold=-1, origin=origin)
    return out.result
