"""Sweep files obeyed as written (issue 52, items 10-13): a key given twice, a key without effect in
the sweep's mode, a value its field cannot take and a file that is not UTF-8 are each one line
naming the file and the key (`hostile_sweeps.py` holds the cases), before any trial starts; the
valid files beside them still load."""

from __future__ import annotations

from pathlib import Path

import pytest

import hostile_sweeps as corpus
from psedual.tune.paper import load_paper
from psedual.tune.space import SpecError, read_yaml

ERRORS = [c for c in corpus.CASES if c.expect == "error"]
VALID = [c for c in corpus.CASES if c.expect == "load"]


@pytest.mark.parametrize("case", ERRORS, ids=lambda c: f"{c.kind}: {c.name}")
def test_a_hostile_sweep_file_is_one_line_naming_the_file_and_the_key(case, tmp_path):
    path = corpus.write(case, tmp_path)
    code, line = corpus.outcome(path, tmp_path / "storage")
    assert code == 2, line
    assert line.startswith(f"psedual: error: {path}"), line
    assert all(fragment in line for fragment in case.fragments), line
    assert not any(word in line for word in corpus.PYTHON_WORDS), line
    assert len(line) < 400, line  # 30,000 seeds are not copied into it


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.name)
def test_valid_files_beside_the_hostile_ones_still_load(case, tmp_path):
    path = corpus.write(case, tmp_path)
    code, line = corpus.outcome(path, tmp_path / "storage")
    assert code == 0, line


def test_the_merged_mapping_is_read_with_its_override(tmp_path):
    case = next(c for c in VALID if "merged" in c.name)
    paper = load_paper(corpus.write(case, tmp_path))
    assert paper.sweep("table3", "small").fixed == {"solver": "gts", "data.fold": 0, "epochs": 3}


def test_keys_equal_as_written_only_are_twice(tmp_path):
    # `1` (an int) and `"1"` (a string) are two keys; a key repeated inside an anchored mapping is
    # refused where it is written, however often the anchor is used
    (tmp_path / "a.yaml").write_text("a: {1: x, '1': y}\n")
    assert read_yaml(tmp_path / "a.yaml", "sweep file") == {"a": {1: "x", "1": "y"}}
    (tmp_path / "b.yaml").write_text("base: &b {lr: 1, lr: 2}\nuse: *b\n")
    with pytest.raises(SpecError, match=r"b\.yaml:1: base\.lr given twice \(twice on line 1\)"):
        read_yaml(tmp_path / "b.yaml", "sweep file")


def test_lists_as_seeds_are_refused_before_ray_starts(tmp_path, monkeypatch, capsys):
    import ray

    from psedual.cli import main

    def no_ray(*args, **kwargs):
        raise AssertionError("Ray was started for a sweep file that should have been refused")

    monkeypatch.setattr(ray, "init", no_ray)
    case = next(c for c in ERRORS if c.name == "lists as seeds")
    path = corpus.write(case, tmp_path)
    assert main(["tune", "--space", str(path), "--storage", str(tmp_path / "storage")]) == 2
    assert f"{path}: grid.seed: seed must be a whole number, got [0, 1]" in capsys.readouterr().err
    assert not Path(tmp_path / "storage").exists() or not any((tmp_path / "storage").iterdir())
