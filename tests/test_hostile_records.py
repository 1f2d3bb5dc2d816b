"""Hostile records, one at a time, in every source format they apply to (jsonl, SVAMP CSV,
MAWPS json, Math23K's concatenated json), built in tmp files from the real files' structure
(the benchmark files are never modified). Each is a counted skip with its reason and its
file:line or record; the rest of the file loads; nothing in the data is executed; no record
takes more than a second (CPU time of the whole small load, which holds it)."""

from __future__ import annotations

import builtins
import csv
import json
import shutil
import time
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from psedual.data.build import OVER_LIMIT
from psedual.data.cache import load_dataset
from psedual.data.config import DataConfig
from psedual.data.files import DataFileError
from psedual.data.root import find_data_root
from psedual.data.sources import jsonl, math23k, mawps, svamp
from psedual.data.sources.common import LITERAL_AND_DISAGREES, LITERAL_NOT_IN_TEXT
from psedual.data.splits import INCONSISTENT, split_dataset
from psedual.data.stats import describe

def shared() -> Path:
    """The benchmark files the loaders find (shared/data, $PSEDUAL_DATA, the per-user folder), looked
    up when a test runs: at import time a machine without them could not even collect the tests."""
    return find_data_root()
GOOD = 3  # real or well-formed records around each hostile one
SECOND = 1.0



@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PSEDUAL_CACHE", str(tmp_path / "cache"))


class Raw(str):
    """A value written into the JSON as these characters, unquoted (NaN, a 5,000-digit int)."""


def dumps(obj: object, **kwargs) -> str:
    raws: dict[str, str] = {}

    def mark(o):
        if isinstance(o, Raw):
            raws[f"@@raw{len(raws)}@@"] = str(o)
            return f"@@raw{len(raws) - 1}@@"
        if isinstance(o, dict):
            return {k: mark(v) for k, v in o.items()}
        if isinstance(o, list):
            return [mark(v) for v in o]
        return o

    text = json.dumps(mark(obj), **kwargs)
    for marker, raw in raws.items():
        text = text.replace(json.dumps(marker), raw)
    return text


# --- the hostile records, in a neutral form: text, infix equation, answer ------------------

BASE = {"text": "Ann has 3 apples and 7 pears . How many fruits does she have ?", "equation": "x=3+7", "answer": 10}
BIG = "1" * 5000  # past Python's 4,300-digit int-conversion limit
INJECTION = "__import__('os').system('touch PWNED')"

# (id, fields that differ from BASE, reason, a fragment of the detail)
INFIX_CASES = [
    ("165 nested brackets", {"equation": "x=" + "(" * 165 + "3+7" + ")" * 165}, OVER_LIMIT, "nested deeper than 100"),
    ("flat sum of 1,000 terms", {"equation": "x=" + "+".join(["3"] * 1000)}, OVER_LIMIT, "more than 1,000 tokens"),
    ("flat sum of 300 terms", {"equation": "x=" + "+".join(["3"] * 300)}, OVER_LIMIT, "nested deeper than 100"),
    ("990 unary minuses", {"equation": "x=" + "-" * 990 + "3"}, OVER_LIMIT, "nested deeper than 100"),
    ("power chain of 500", {"equation": "x=" + "^".join(["1"] * 500)}, OVER_LIMIT, "nested deeper than 100"),
    ("NaN answer", {"answer": Raw("NaN")}, "answer not a number", "nan is not a finite number"),
    ("Infinity answer", {"answer": Raw("-Infinity")}, "answer not a number", "-inf is not a finite number"),
    ("5,000-digit answer", {"answer": Raw(BIG)}, OVER_LIMIT, "longer than 100 digits"),
    ("5,000-digit float answer", {"answer": Raw(BIG + ".5")}, OVER_LIMIT, "longer than 100 digits"),
    ("5,000-digit number in the text", {"text": f"Ann has 3 apples and {BIG} pears ."}, OVER_LIMIT,
     "longer than 100 digits"),
    ("5,000-digit literal in the equation", {"equation": f"x=3+{BIG}"}, OVER_LIMIT, "longer than 100 digits"),
    ("exponent literal 1e400", {"equation": "x=3*1e400"}, OVER_LIMIT, "exponent too large"),
    ("lone surrogate in the text", {"text": "Ann has 3 apples \ud800 and 7 pears ."}, "invalid text", "lone surrogate"),
    ("text of only spaces", {"text": "     "}, "empty field", "is there but blank"),
    ("5 million numbers", {"text": "1 " * 5_000_000}, OVER_LIMIT, "10,000,000 characters"),
    ("101 numbers", {"text": " ".join(["2"] * 101)}, OVER_LIMIT, "101 numbers in the text (limit 100)"),
    ("code in the equation", {"equation": f"x={INJECTION}"}, "unparseable equation", "unknown token"),
    ("equation not a string", {"equation": ["x=3+7"]}, "malformed record", "must be a string"),
]
PREFIX_CASES = [  # jsonl's `prefix`, SVAMP's `Equation`
    ("prefix 1,000 deep", "+ " * 1000 + "N0 " * 1001, OVER_LIMIT, "2,001 tokens (limit 1,000)"),
    ("prefix 300 deep", "+ N0 " * 300 + "N1", OVER_LIMIT, "nested deeper than 100"),
    ("code in the prefix", INJECTION, "unparseable equation", ""),
    # a second name for a slot would be kept, then stop training at its first batch
    ("slots with a leading zero", "+ N00 N01", "unparseable equation", "slot 'N00' is not canonical"),
    ("slots in Arabic-Indic digits", "+ N\u0660 N\u0661", "unparseable equation", "slot 'N\u0660' is not canonical"),
]
CASE_IDS = [c[0] for c in INFIX_CASES]


def _check(result, expected_good: int, origin: str, reason: str, fragment: str, seconds: float) -> None:
    assert [(s.reason, s.origin) for s in result.skips] == [(reason, origin)], result.skips
    assert fragment in result.skips[0].detail, result.skips[0].detail
    assert len(result.skips[0].detail) <= 500  # a megabyte record is not copied into its message
    assert len(result.problems) == expected_good  # the rest of the file loads
    assert seconds < SECOND, seconds


def _timed(load, *args):
    start = time.process_time()  # CPU time: the machine's other jobs do not count
    result = load(*args)
    return result, time.process_time() - start


# --- jsonl ---------------------------------------------------------------------------------


def _jsonl_folder(tmp_path: Path, hostile: dict | None) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir(exist_ok=True)
    rows = [{**BASE, "id": f"good-{i}"} for i in range(GOOD)]
    if hostile is not None:
        rows.insert(1, {"id": "hostile", **hostile})
    (folder / "train.jsonl").write_text("".join(dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "test.jsonl").write_text(dumps({**BASE, "id": "t"}) + "\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize(("case", "change", "reason", "fragment"), INFIX_CASES, ids=CASE_IDS)
def test_jsonl_hostile_record(tmp_path, case, change, reason, fragment):
    folder = _jsonl_folder(tmp_path, {**BASE, **change})
    result, seconds = _timed(jsonl.load, folder)
    _check(result, GOOD + 1, f"{folder / 'train.jsonl'}:2", reason, fragment, seconds)


@pytest.mark.parametrize(("case", "prefix", "reason", "fragment"), PREFIX_CASES, ids=[c[0] for c in PREFIX_CASES])
def test_jsonl_hostile_prefix(tmp_path, case, prefix, reason, fragment):
    folder = _jsonl_folder(tmp_path, {"text": BASE["text"], "prefix": prefix, "answer": 10})
    result, seconds = _timed(jsonl.load, folder)
    _check(result, GOOD + 1, f"{folder / 'train.jsonl'}:2", reason, fragment, seconds)


def test_jsonl_all_hostile_records_through_the_cache(tmp_path):
    """All of them in one file, through load_dataset: counted by reason, and the Parquet cache
    (which a lone surrogate used to break) writes and serves the same."""
    folder = tmp_path / "mine"
    folder.mkdir()
    rows = [{**BASE, "id": "good"}] + [{**BASE, **change, "id": case} for case, change, _, _ in INFIX_CASES]
    (folder / "train.jsonl").write_text("".join(dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "test.jsonl").write_text(dumps({**BASE, "id": "t"}) + "\n", encoding="utf-8")
    first = load_dataset("jsonl", user_path=folder)
    assert len(first.problems) == 2 and not first.from_cache
    expected = {}
    for _, _, reason, _ in INFIX_CASES:
        expected[reason] = expected.get(reason, 0) + 1
    got = {}
    for s in first.skips:
        got[s.reason] = got.get(s.reason, 0) + 1
    assert got == expected
    again = load_dataset("jsonl", user_path=folder)
    assert again.from_cache and again.skips == first.skips and again.problems == first.problems


def test_jsonl_json_nested_too_deeply_names_the_line(tmp_path):
    folder = _jsonl_folder(tmp_path, None)
    path = folder / "train.jsonl"
    path.write_text(path.read_text() + '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(DataFileError) as info:
        jsonl.load(folder)
    assert str(info.value).startswith(f"{path}: line {GOOD + 1}: JSON nested too deeply")


def test_nothing_in_the_data_is_executed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError("the data layer called eval or exec")

    monkeypatch.setattr(builtins, "eval", refuse)
    monkeypatch.setattr(builtins, "exec", refuse)
    folder = _jsonl_folder(tmp_path, {**BASE, "equation": INJECTION, "answer": INJECTION})
    result = jsonl.load(folder)
    assert [s.reason for s in result.skips] == ["unparseable equation"]
    assert not (tmp_path / "PWNED").exists()


# --- MAWPS five-fold json -------------------------------------------------------------------



def _mawps_record(fields: dict) -> dict:
    real = json.loads((shared() / mawps.FOLD_FILES[0]).read_text(encoding="utf-8"))[0]
    return {**real, "iIndex": 999_999, "sQuestion": fields["text"], "lEquations": [fields["equation"]],
            "answer": fields["answer"]}


@pytest.mark.parametrize(("case", "change", "reason", "fragment"), INFIX_CASES, ids=CASE_IDS)
def test_mawps_hostile_record(mawps_root, case, change, reason, fragment):
    path = mawps_root / mawps.FOLD_FILES[2]
    records = json.loads(path.read_text(encoding="utf-8"))
    records.insert(1, _mawps_record({**BASE, **change}))
    path.write_text(dumps(records, indent=4), encoding="utf-8")
    result, seconds = _timed(mawps.load_folds, mawps_root)
    _check(result, 5 * GOOD, f"{path}#1", reason, fragment, seconds)
    assert result.skips[0].fold == 2


# --- Math23K's concatenated 7-line objects ----------------------------------------------------


@pytest.fixture
def math23k_root(tmp_path) -> Path:
    root = tmp_path / "data"
    (root / "math23k").mkdir(parents=True)
    with open(shared() / math23k.FILES[0], encoding="utf-8") as f:
        lines = [next(f) for _ in range(GOOD * 7)]
    (root / math23k.FILES[0]).write_text("".join(lines), encoding="utf-8")
    ids = [str(json.loads("".join(lines[i:i + 7]))["id"]) for i in range(0, len(lines), 7)]
    split = {"train": ids[:-1] + ["hostile"], "valid": [], "test": ids[-1:]}
    (root / math23k.FILES[1]).write_text(json.dumps(split), encoding="utf-8")
    (root / math23k.FILES[2]).write_text("[]", encoding="utf-8")
    return root


@pytest.mark.parametrize(("case", "change", "reason", "fragment"), INFIX_CASES, ids=CASE_IDS)
def test_math23k_hostile_record(math23k_root, case, change, reason, fragment):
    fields = {**BASE, **change}
    record = {"id": "hostile", "original_text": fields["text"], "segmented_text": fields["text"],
              "equation": fields["equation"], "ans": fields["answer"]}
    path = math23k_root / math23k.FILES[0]
    with path.open("a", encoding="utf-8") as f:
        f.write(dumps(record, indent=4) + "\n")  # \ud800 stays an escape: the file is UTF-8
    result, seconds = _timed(math23k.load, math23k_root)
    _check(result, GOOD, f"{path}#{GOOD} (id hostile)", reason, fragment, seconds)


# --- SVAMP's CSVs ----------------------------------------------------------------------------


@pytest.fixture
def svamp_root(tmp_path) -> Path:
    root = tmp_path / "data"
    (root / "svamp").mkdir(parents=True)
    for name in svamp.FILES[:2]:
        with open(shared() / name, encoding="utf-8", newline="") as f:
            lines = [next(f) for _ in range(GOOD + 1)]  # the header and GOOD rows (no field spans lines)
        (root / name).write_text("".join(lines), encoding="utf-8", newline="")
    records = json.loads((shared() / svamp.FILES[2]).read_text(encoding="utf-8"))[:30]
    (root / svamp.FILES[2]).write_text(json.dumps(records), encoding="utf-8")
    return root


def _real_row(name: str) -> tuple[list[str], dict]:
    with open(shared() / name, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames), next(reader)


QUESTION = "ann has number0 apples and number1 pears . how many fruits ?"
SVAMP_CASES = [
    # (id, fields that differ from a two-number row, reason, fragment)
    ("fewer Numbers than masks", {"Numbers": "5"}, "unknown number mask", "number1 but only 1 Numbers"),
    ("empty Numbers", {"Numbers": ""}, "empty field", "'Numbers' is there but blank"),
    ("unreadable Numbers", {"Numbers": "4 abc"}, "unreadable number", "not a number: 'abc'"),
    ("unreadable unused Number", {"Numbers": "4 5 abc"}, "unreadable number", "not a number: 'abc'"),
    ("5,000-digit Number", {"Numbers": f"4 {BIG}"}, OVER_LIMIT, "longer than 100 digits"),
    ("5 million Numbers", {"Numbers": "1 " * 5_000_000}, OVER_LIMIT, "10,000,000 characters"),
    ("NaN answer", {"Answer": "nan"}, "answer not a number", "'nan'"),
    ("Infinity answer", {"Answer": "Infinity"}, "answer not a number", "'Infinity'"),
    ("5,000-digit answer", {"Answer": BIG}, OVER_LIMIT, "longer than 100 digits"),
    ("question of only spaces", {"Question": "   "}, "empty field", "'Question' is there but blank"),
    ("prefix 1,000 deep", {"Equation": "+ " * 1000 + "number0 " * 1001}, OVER_LIMIT, "(limit 10,000)"),
    ("prefix 300 deep", {"Equation": "+ number0 " * 300 + "number1"}, OVER_LIMIT, "nested deeper than 100"),
    ("code in the equation", {"Equation": INJECTION}, "unparseable equation", "extra tokens"),
]


@pytest.mark.parametrize("name", svamp.FILES[:2], ids=["train csv", "test csv"])
@pytest.mark.parametrize(("case", "change", "reason", "fragment"), SVAMP_CASES, ids=[c[0] for c in SVAMP_CASES])
def test_svamp_hostile_row(svamp_root, name, case, change, reason, fragment):
    header, real = _real_row(name)
    row = {**real, "Question": QUESTION, "Numbers": "3 5", "Equation": "+ number0 number1", "Answer": "8.0", **change}
    path = svamp_root / name
    with path.open("a", encoding="utf-8", newline="") as f:
        csv.DictWriter(f, header).writerow(row)
    result, seconds = _timed(svamp.load, svamp_root)
    _check(result, 2 * GOOD, f"{path}:{GOOD + 2}", reason, fragment, seconds)


def test_svamp_row_lines_count_multiline_fields(svamp_root):
    """A CSV field may span lines: the origin is the line its row starts on."""
    name = svamp.FILES[1]
    header, real = _real_row(name)
    path = svamp_root / name
    with path.open("a", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, header)
        writer.writerow({**real, "Body": "two\nlines"})
        writer.writerow({**real, "Numbers": ""})
    result = svamp.load(svamp_root)
    assert [s.origin for s in result.skips] == [f"{path}:{GOOD + 4}"]


# --- equation literals that are not in the text ---------------------------------------------


def _flag_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "flags"
    folder.mkdir()
    rows = [{"id": f"ok-{i}", "text": f"Ann has {i + 2} apples and buys {i + 3} .", "equation": f"x={i + 2}+{i + 3}",
             "answer": 2 * i + 5} for i in range(12)]
    rows += [
        {"id": "typo", "text": "Ann has 3 apples and 5 pears .", "equation": "x=3+7", "answer": 8},
        {"id": "percent", "text": "A coat costs 200 dollars .", "equation": "x=200*3.5%", "answer": 9},
        {"id": "exponent", "text": "Ann has 3 apples .", "equation": "x=3*1e3", "answer": 3000},
    ]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "test.jsonl").write_text(json.dumps({**rows[0], "id": "test-0"}) + "\n")
    return folder


def test_literals_not_in_the_text_are_flagged_and_inconsistent_gold_can_be_dropped(tmp_path):
    folder = _flag_folder(tmp_path)
    ds = load_dataset("jsonl", user_path=folder)
    assert not ds.skips and len(ds.problems) == 16  # kept: a constant may be meant
    assert ds.notes[LITERAL_NOT_IN_TEXT] == 3
    assert ds.notes[LITERAL_AND_DISAGREES] == 2  # 3+7 is not 8, 200*3.5% is not 9
    # min_constant_count=1: every constant enters the vocabulary, so the typos would be trained on
    config = DataConfig("jsonl", user_path=str(folder), valid_fraction=0.01, min_constant_count=1)
    kept = split_dataset(ds, config)
    assert {"jsonl:typo", "jsonl:percent"} <= {p.id for p in kept.train + kept.valid}
    dropped = split_dataset(ds, replace(config, drop_inconsistent=True))
    assert {"jsonl:typo", "jsonl:percent"}.isdisjoint(p.id for p in dropped.train)
    in_valid = sum(p.id in ("jsonl:typo", "jsonl:percent") for p in dropped.valid)  # validation is never dropped
    assert dropped.left_out[INCONSISTENT] == 2 - in_valid
    text = describe(ds, config, 0.0)
    assert f"{LITERAL_NOT_IN_TEXT}: 3" in text and f"{LITERAL_AND_DISAGREES}: 2" in text
    assert "training problems whose gold disagrees with the answer: " in text


# --- messages --------------------------------------------------------------------------------


def test_stats_says_no_constant_reached_the_count_when_there_is_a_training_split(tmp_path):
    folder = _flag_folder(tmp_path)
    text = describe(load_dataset("jsonl", user_path=folder), DataConfig("jsonl", user_path=str(folder)), 0.0)
    assert "(none: no training split)" not in text and "problems): (none)" in text


def test_a_byte_identical_copy_of_a_folder_quotes_its_own_paths(tmp_path):
    folder = _jsonl_folder(tmp_path, {**BASE, "answer": Raw("NaN")})
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    first, second = load_dataset("jsonl", user_path=folder), load_dataset("jsonl", user_path=copy)
    assert first.key != second.key and not second.from_cache
    assert second.skips[0].origin == f"{copy / 'train.jsonl'}:2"
    assert all(str(copy) in p.origin for p in second.problems)
    assert second.user_path == str(copy.resolve())


# --- training prints and records what it read --------------------------------------------


def test_training_prints_and_records_the_data_summary(tmp_path, capsys):
    from psedual.solvers.config import SolverConfig
    from psedual.train.config import TrainConfig
    from psedual.train.trainer import train

    folder = tmp_path / "mine"
    folder.mkdir()
    rows = [{"id": f"p{i}", "text": f"Ann has {i + 2} apples and buys {i + 3} more .", "equation": f"x={i + 2}+{i + 3}",
             "answer": 2 * i + 5} for i in range(24)]
    rows += [{**BASE, **change, "id": case} for case, change, _, _ in INFIX_CASES[:6]]
    (folder / "train.jsonl").write_text("".join(dumps(r) + "\n" for r in rows))
    (folder / "test.jsonl").write_text("".join(json.dumps({**r, "id": f"t{i}"}) + "\n" for i, r in enumerate(rows[:4])))
    config = TrainConfig(DataConfig("jsonl", user_path=str(folder)), model=SolverConfig(16, 32, 1, 0.2), epochs=1,
                         batch_size=16, beam_size=1, seed=0, threads=1)
    out = tmp_path / "run"
    train(config, out, progress=False)
    err = capsys.readouterr().err
    assert f"data: jsonl from {folder.resolve()} (cache key " in err
    assert "28 problems kept, 6 records skipped (answer not a number: 1; over a size limit: 5)" in err
    assert f"e.g. {folder / 'train.jsonl'}:25: over a size limit: " in err
    info = json.loads((out / "data.json").read_text())
    assert (info["kept"], info["skipped"], info["skipped_by_reason"]) == (28, 6, {"answer not a number": 1,
                                                                                  OVER_LIMIT: 5})
    metrics = pl.read_parquet(out / "metrics.parquet").row(0, named=True)
    assert metrics["data_root"] == str(folder.resolve()) and metrics["data_key"] == info["cache_key"]
    assert (metrics["data_kept"], metrics["data_skipped"], metrics["data_left_out"]) == (28, 6, info["left_out"])
    assert json.loads(metrics["data_skipped_by_reason"]) == info["skipped_by_reason"]
