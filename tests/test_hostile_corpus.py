"""Every case of the hostile corpus (`hostile_corpus.py`) through `psedual data stats`: no
traceback and no hang; an error is one line naming its file; a bad record is a counted skip
and the rest loads; what must load, loads, with its number rule counted."""

from __future__ import annotations

import pytest

from hostile_corpus import CASES, build, outcome

MAX_LINE = 600  # no message repeats a 100,000-character id or record


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}: {c.name}" for c in CASES])
def test_hostile_input(case, data_root, tmp_path):
    got, said = outcome(case, *build(case, data_root, tmp_path))
    assert got == case.expect, said
    assert case.fragment in said, said
    assert all(len(line) <= MAX_LINE for line in said.splitlines()), max(said.splitlines(), key=len)
    if got == "error":
        assert said.startswith("psedual: error: ") and said.count("\n") == 1, said


def test_the_corpus_covers_every_source_and_outcome():
    assert {c.dataset for c in CASES} == {"math23k", "svamp", "mawps", "mawps-single", "mathqa", "jsonl"}
    assert {c.expect for c in CASES} == {"error", "skip", "load"}
    assert len(CASES) >= 100
