"""Bad input: every broken file is a DataFileError naming the file (and the record or
line), every broken record a counted Skip with its reason and origin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from psedual.data.cache import load_dataset
from psedual.data.files import DataFileError
from psedual.data.registry import DATASETS, get_spec
from psedual.data.root import find_data_root
from psedual.data.sources import jsonl, math23k, mawps

def shared() -> Path:
    """The benchmark files the loaders find (shared/data, $PSEDUAL_DATA, the per-user folder), looked
    up when a test runs: at import time a machine without them could not even collect the tests."""
    return find_data_root()
PER_FOLD = 3



@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    """No test touches the real cache."""
    monkeypatch.setenv("PSEDUAL_CACHE", str(tmp_path / "cache"))


# --- MAWPS five_fold ----------------------------------------------------------------


def _real_fold(k: int) -> list[dict]:
    return json.loads((shared() / mawps.FOLD_FILES[k]).read_text(encoding="utf-8"))[:PER_FOLD]



def _rewrite_record(root: Path, fold: int, index: int, change) -> Path:
    path = root / mawps.FOLD_FILES[fold]
    records = json.loads(path.read_text(encoding="utf-8"))
    change(records[index])
    path.write_text(json.dumps(records, indent=4), encoding="utf-8")
    return path


def test_mawps_small_root_loads_clean(mawps_root):
    result = mawps.load_folds(mawps_root)
    assert len(result.problems) == 5 * PER_FOLD
    assert result.skips == []


def test_truncated_json_names_file_and_line(mawps_root):
    path = mawps_root / mawps.FOLD_FILES[2]
    real = (shared() / mawps.FOLD_FILES[2]).read_bytes()
    path.write_bytes(real[: len(real) // 2])
    with pytest.raises(DataFileError) as info:
        mawps.load_folds(mawps_root)
    message = str(info.value)
    assert str(path) in message
    assert "truncated JSON" in message
    assert "line" in message


def _skip_for(root: Path, fold: int, index: int, change, reason: str):
    path = _rewrite_record(root, fold, index, change)
    result = mawps.load_folds(root)
    assert len(result.skips) == 1, result.skips
    skip = result.skips[0]
    assert skip.reason == reason
    assert skip.origin == f"{path}#{index}"
    assert skip.dataset == "mawps" and skip.fold == fold
    # The other records are kept.
    assert len(result.problems) == 5 * PER_FOLD - 1
    kept = {p.origin for p in result.problems}
    assert skip.origin not in kept
    assert f"{path}#{(index + 1) % PER_FOLD}" in kept
    return skip


def test_missing_equation_is_a_skip(mawps_root):
    skip = _skip_for(mawps_root, 1, 1, lambda r: r.pop("lEquations"), "missing field")
    assert "'lEquations'" in skip.detail


def test_empty_equation_list_is_a_skip(mawps_root):
    skip = _skip_for(mawps_root, 1, 0, lambda r: r.update(lEquations=[]), "unparseable equation")
    assert "lEquations" in skip.detail


def test_blank_question_is_a_skip(mawps_root):
    # There but blank is told apart from absent ("no 'sQuestion'" would be wrong).
    skip = _skip_for(mawps_root, 4, 2, lambda r: r.update(sQuestion="  "), "empty field")
    assert "'sQuestion' is there but blank" in skip.detail


def test_unknown_token_in_equation_is_a_skip(mawps_root):
    skip = _skip_for(mawps_root, 0, 0, lambda r: r.update(lEquations=["X=(3.0&7.0)"]), "unparseable equation")
    assert "unknown token" in skip.detail and "&" in skip.detail


def test_unbalanced_brackets_in_equation_is_a_skip(mawps_root):
    skip = _skip_for(mawps_root, 3, 1, lambda r: r.update(lEquations=["X=((3.0*7.0)"]), "unparseable equation")
    assert "unbalanced '('" in skip.detail


def test_unbalanced_closing_bracket_is_a_skip(mawps_root):
    skip = _skip_for(mawps_root, 3, 2, lambda r: r.update(lEquations=["X=(3.0*7.0))"]), "unparseable equation")
    assert "unbalanced ')'" in skip.detail


def test_answer_not_a_number_is_a_skip(mawps_root):
    skip = _skip_for(mawps_root, 2, 0, lambda r: r.update(answer="abc"), "answer not a number")
    assert "'abc'" in skip.detail


def test_division_by_zero_is_a_skip(mawps_root):
    skip = _skip_for(mawps_root, 0, 2, lambda r: r.update(lEquations=["X=(3.0/(7.0-7.0))"]),
                     "invalid equation value")
    assert "division by zero" in skip.detail


def test_non_object_record_is_a_skip(mawps_root):
    path = mawps_root / mawps.FOLD_FILES[0]
    records = json.loads(path.read_text(encoding="utf-8"))
    records[1] = [1, 2, 3]
    path.write_text(json.dumps(records), encoding="utf-8")
    result = mawps.load_folds(mawps_root)
    assert [(s.reason, s.origin) for s in result.skips] == [("malformed record", f"{path}#1")]
    assert "list" in result.skips[0].detail


def test_non_utf8_names_file(mawps_root):
    path = mawps_root / mawps.FOLD_FILES[3]
    raw = path.read_bytes()
    cut = raw.index(b"sQuestion")
    path.write_bytes(raw[:cut] + b"\xff\xfe" + raw[cut:])
    with pytest.raises(DataFileError) as info:
        mawps.load_folds(mawps_root)
    message = str(info.value)
    assert str(path) in message and "UTF-8" in message
    line = raw[:cut].count(b"\n") + 1
    assert f"line {line}" in message


@pytest.mark.parametrize("content", [b"", b"  \n\n  "])
def test_empty_file_names_file(mawps_root, content):
    path = mawps_root / mawps.FOLD_FILES[4]
    path.write_bytes(content)
    with pytest.raises(DataFileError) as info:
        mawps.load_folds(mawps_root)
    assert str(info.value) == f"{path}: empty file"


def test_json_not_a_list_names_file(mawps_root):
    path = mawps_root / mawps.FOLD_FILES[1]
    path.write_text('{"iIndex": 1}', encoding="utf-8")
    with pytest.raises(DataFileError) as info:
        mawps.load_folds(mawps_root)
    assert str(path) in str(info.value) and "expected a JSON list" in str(info.value)


def test_missing_file_names_file(mawps_root):
    path = mawps_root / mawps.FOLD_FILES[3]
    path.unlink()
    with pytest.raises(DataFileError) as info:
        mawps.load_folds(mawps_root)
    assert str(info.value) == f"{path}: file not found"


def test_load_dataset_missing_files_names_file(tmp_path):
    root = tmp_path / "empty_root"
    root.mkdir()
    with pytest.raises(DataFileError) as info:
        load_dataset("mawps", data_root=root)
    message = str(info.value)
    assert "file not found" in message
    assert str(root / mawps.FOLD_FILES[0]) in message


def test_load_dataset_data_root_not_a_folder(tmp_path):
    with pytest.raises(DataFileError, match="data root is not a folder") as info:
        load_dataset("mawps", data_root=tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in str(info.value)


# --- Math23K raw file ------------------------------------------------------------------

M23_RECORDS = 4
M23_LINES = 7


@pytest.fixture
def math23k_root(tmp_path) -> Path:
    """The first records of the real raw file, with a matching split and group_num."""
    root = tmp_path / "data"
    (root / "math23k").mkdir(parents=True)
    with open(shared() / math23k.FILES[0], encoding="utf-8") as f:
        lines = [next(f) for _ in range(M23_RECORDS * M23_LINES)]
    (root / math23k.FILES[0]).write_text("".join(lines), encoding="utf-8")
    ids = [str(json.loads("".join(lines[i:i + M23_LINES]))["id"]) for i in range(0, len(lines), M23_LINES)]
    split = {"train": ids[:2], "valid": ids[2:3], "test": ids[3:]}
    (root / math23k.FILES[1]).write_text(json.dumps(split), encoding="utf-8")
    groups = [g for g in json.loads((shared() / math23k.FILES[2]).read_text(encoding="utf-8")) if str(g["id"]) in ids]
    (root / math23k.FILES[2]).write_text(json.dumps(groups), encoding="utf-8")
    return root


def test_math23k_small_root_loads_clean(math23k_root):
    result = math23k.load(math23k_root)
    assert len(result.problems) == M23_RECORDS and result.skips == []


def test_math23k_truncated_mid_record_names_file_and_record(math23k_root):
    path = math23k_root / math23k.FILES[0]
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[: 2 * M23_LINES + 4]), encoding="utf-8")  # inside record 2
    with pytest.raises(DataFileError) as info:
        math23k.load(math23k_root)
    message = str(info.value)
    assert str(path) in message
    assert "record 2 (after 2 good records)" in message
    assert "line" in message


def test_math23k_garbage_between_records_names_record(math23k_root):
    path = math23k_root / math23k.FILES[0]
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:M23_LINES] + ["oops\n"] + lines[M23_LINES:]), encoding="utf-8")
    with pytest.raises(DataFileError) as info:
        math23k.load(math23k_root)
    assert str(path) in str(info.value) and "record 1 " in str(info.value)
    assert f"line {M23_LINES + 1}" in str(info.value)


def test_math23k_missing_equation_is_a_skip(math23k_root):
    path = math23k_root / math23k.FILES[0]
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    records = [json.loads("".join(lines[i:i + M23_LINES])) for i in range(0, len(lines), M23_LINES)]
    del records[1]["equation"]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False, indent=4) for r in records), encoding="utf-8")
    result = math23k.load(math23k_root)
    assert len(result.problems) == M23_RECORDS - 1
    assert [(s.reason, s.origin) for s in result.skips] == [("missing field", f"{path}#1 (id {records[1]['id']})")]


def test_math23k_split_ids_naming_absent_records(math23k_root):
    split_path = math23k_root / math23k.FILES[1]
    split = json.loads(split_path.read_text(encoding="utf-8"))
    split["test"].append("999999")
    split_path.write_text(json.dumps(split), encoding="utf-8")
    with pytest.raises(DataFileError) as info:
        math23k.load(math23k_root)
    assert str(split_path) in str(info.value) and "'999999'" in str(info.value)


# --- jsonl -------------------------------------------------------------------------------

GOOD_PREFIX = {"id": "p1", "text": "Maria has 3 boxes of 7 eggs. How many eggs?", "prefix": "* N0 N1", "answer": 21}
GOOD_EQUATION = {"id": "p2", "text": "Maria has 3 boxes of 7 eggs. How many eggs?", "equation": "x=3*7",
                 "answer": "21"}


def _write_jsonl(folder: Path, name: str, rows: list) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def jsonl_folder(tmp_path) -> Path:
    folder = tmp_path / "mine"
    _write_jsonl(folder, "train.jsonl", [GOOD_PREFIX, GOOD_EQUATION])
    _write_jsonl(folder, "test.jsonl", [{**GOOD_EQUATION, "id": "t1"}])
    return folder


def test_jsonl_good_records(jsonl_folder):
    result = jsonl.load(jsonl_folder)
    assert result.skips == []
    by_id = {p.id: p for p in result.problems}
    assert set(by_id) == {"jsonl:p1", "jsonl:p2", "jsonl:t1"}
    for pid in ("jsonl:p1", "jsonl:p2"):
        p = by_id[pid]
        assert p.prefix == ("*", "N0", "N1")
        assert p.numbers == ("3", "7")
        assert p.answer == "21" and p.answer_agrees is True
        assert p.split == "train"
    assert by_id["jsonl:t1"].split == "test"
    assert by_id["jsonl:p1"].origin == f"{jsonl_folder / 'train.jsonl'}:1"


def test_jsonl_line_not_json_names_file_and_line(jsonl_folder):
    path = _write_jsonl(jsonl_folder, "train.jsonl", [GOOD_PREFIX, "", "{not json", GOOD_EQUATION])
    with pytest.raises(DataFileError) as info:
        jsonl.load(jsonl_folder)
    message = str(info.value)
    assert message.startswith(f"{path}: line 3 is not valid JSON")


@pytest.mark.parametrize(
    "change",
    [
        {"prefix": "* N0 N1"},  # both equation and prefix
        {"equation": None},  # neither
    ],
    ids=["both", "neither"],
)
def test_jsonl_needs_exactly_one_equation(jsonl_folder, change):
    path = _write_jsonl(jsonl_folder, "train.jsonl", [GOOD_PREFIX, {**GOOD_EQUATION, **change}])
    result = jsonl.load(jsonl_folder)
    assert [(s.reason, s.origin, s.split) for s in result.skips] == [("no equation", f"{path}:2", "train")]
    assert {p.id for p in result.problems} == {"jsonl:p1", "jsonl:t1"}


@pytest.mark.parametrize(
    ("change", "reason", "detail"),
    [
        ({"equation": "x=3*seven"}, "unparseable equation", "unknown token"),
        ({"equation": "x=(3*7"}, "unparseable equation", "unbalanced '('"),
        ({"equation": "x=3/(7-7)"}, "invalid equation value", "division by zero"),
        ({"equation": None, "prefix": "* N0 N5"}, "invalid equation value", "N5"),
        ({"equation": None, "prefix": "* N0"}, "unparseable equation", "ends too early"),
        ({"answer": "abc"}, "answer not a number", "'abc'"),
        ({"answer": None}, "missing field", "'answer'"),
        ({"text": ""}, "empty field", "'text' is there but blank"),
        ({"text": "   "}, "empty field", "'text' is there but blank"),  # was kept with 0 numbers
        ({"equation": ""}, "empty field", "the equation is there but blank"),
        ({"language": "fr"}, "bad language", "'fr'"),
    ],
)
def test_jsonl_bad_record_is_a_skip(jsonl_folder, change, reason, detail):
    path = _write_jsonl(jsonl_folder, "train.jsonl", [GOOD_PREFIX, {**GOOD_EQUATION, **change}])
    result = jsonl.load(jsonl_folder)
    assert [(s.reason, s.origin) for s in result.skips] == [(reason, f"{path}:2")]
    assert detail in result.skips[0].detail
    assert len(result.problems) == 2


def test_jsonl_equation_not_a_string_is_a_skip(jsonl_folder):
    path = _write_jsonl(jsonl_folder, "train.jsonl", [GOOD_PREFIX, {**GOOD_EQUATION, "equation": 21}])
    result = jsonl.load(jsonl_folder)
    assert [s.origin for s in result.skips] == [f"{path}:2"]


@pytest.mark.parametrize("bad_prefix", [5, ["*", 3, 7]])
def test_jsonl_prefix_not_strings_is_a_skip(jsonl_folder, bad_prefix):
    path = _write_jsonl(jsonl_folder, "train.jsonl",
                        [GOOD_EQUATION, {**GOOD_PREFIX, "prefix": bad_prefix}])
    result = jsonl.load(jsonl_folder)
    assert [s.origin for s in result.skips] == [f"{path}:2"]


def test_jsonl_non_object_line_is_a_skip(jsonl_folder):
    path = _write_jsonl(jsonl_folder, "train.jsonl", [GOOD_PREFIX, "[1, 2]"])
    result = jsonl.load(jsonl_folder)
    assert [(s.reason, s.origin) for s in result.skips] == [("malformed record", f"{path}:2")]


def test_jsonl_missing_test_file_names_file(jsonl_folder):
    (jsonl_folder / "test.jsonl").unlink()
    with pytest.raises(DataFileError) as info:
        jsonl.load(jsonl_folder)
    assert str(info.value) == f"{jsonl_folder / 'test.jsonl'}: file not found"


def test_jsonl_not_a_folder(tmp_path):
    with pytest.raises(DataFileError, match="not a folder") as info:
        jsonl.load(tmp_path / "absent")
    assert str(tmp_path / "absent") in str(info.value)


def test_jsonl_non_utf8_and_empty(jsonl_folder):
    path = jsonl_folder / "test.jsonl"
    path.write_bytes(b'{"text": "caf\xe9 3 and 4", "prefix": "+ N0 N1", "answer": 7}\n')
    with pytest.raises(DataFileError) as info:
        jsonl.load(jsonl_folder)
    assert str(path) in str(info.value) and "UTF-8" in str(info.value) and "line 1" in str(info.value)
    path.write_bytes(b"\n\n")
    with pytest.raises(DataFileError) as info:
        jsonl.load(jsonl_folder)
    assert str(info.value) == f"{path}: empty file"


def test_load_dataset_jsonl_loads_and_caches(jsonl_folder, tmp_path):
    first = load_dataset("jsonl", user_path=jsonl_folder)
    assert len(first.problems) == 3 and not first.from_cache
    again = load_dataset("jsonl", user_path=jsonl_folder)
    assert again.from_cache and again.problems == first.problems
    assert list((tmp_path / "cache").glob("jsonl-*.parquet"))


def test_load_dataset_duplicate_ids(jsonl_folder, tmp_path):
    train = _write_jsonl(jsonl_folder, "train.jsonl", [GOOD_PREFIX, GOOD_EQUATION])
    test = _write_jsonl(jsonl_folder, "test.jsonl", [{**GOOD_EQUATION, "id": "p1"}])
    with pytest.raises(DataFileError) as info:
        load_dataset("jsonl", user_path=jsonl_folder)
    message = str(info.value)
    assert "duplicate problem id 'jsonl:p1'" in message
    assert f"{train}:1" in message and f"{test}:1" in message
    assert not list((tmp_path / "cache").glob("*.parquet"))


def test_load_dataset_jsonl_needs_a_path():
    with pytest.raises(ValueError, match="needs a user path"):
        load_dataset("jsonl")


# --- registry ----------------------------------------------------------------------------


def test_unknown_dataset_name_lists_valid_names():
    with pytest.raises(ValueError) as info:
        get_spec("nope")
    message = str(info.value)
    assert "unknown dataset 'nope'" in message
    for name in DATASETS:
        assert name in message
    assert {"math23k", "mawps", "svamp", "mathqa", "jsonl"} <= set(DATASETS)


def test_load_dataset_unknown_name(tmp_path):
    with pytest.raises(ValueError, match="unknown dataset 'nope'"):
        load_dataset("nope", data_root=tmp_path)
