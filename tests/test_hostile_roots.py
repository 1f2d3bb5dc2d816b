"""A results root whose files or folders cannot be read (issue 52, item 13): a file cut short or
emptied, a root or experiment folder that is a symbolic link loop, two files of one table whose
column types differ. Each is one `psedual analyze` error line naming the file or folder (and the
column), never a Polars or pyarrow message alone, nor an experiment left out without a word
(`crafted_runs.py` builds the roots: `python tests/crafted_runs.py OUT 13` prints each outcome)."""

from __future__ import annotations

import pytest

import crafted_runs as crafted
from analysis.cli import main as analyze
from crafted_runs import seeds
from test_analysis_checks import _write

# each case: (the path under the root the line must name, what else it must say)
NAMED = {
    "13 a runs file cut in half": ("runs/experiment=x/g1.parquet", "not a readable Parquet file of the runs table"),
    "13 an epochs file without its last 8 bytes": ("epochs/experiment=x/g1.parquet",
                                                   "not a readable Parquet file of the epochs table"),
    "13 an empty predictions file": ("predictions/experiment=x/g1.parquet", "(Parquet file size is 0 bytes)"),
    "13 the root a symbolic link loop": ("", "the results root cannot be entered (a symbolic link loop)"),
    "13 an experiment folder a symbolic link loop": ("runs/experiment=y", "cannot be entered (a symbolic link loop)"),
    "13 seed int64 in one file, string in another": ("runs/experiment=x/g1.parquet",
                                                     "column 'seed' is int64 in "),
    "13 lr double in one file, string in another": ("runs/experiment=x/g1.parquet", "column 'lr' is double in "),
}
CASES = [next(c for c in crafted.CASES if c.name == name) for name in NAMED]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_an_unreadable_results_root_is_one_line_naming_the_file(case, tmp_path, capsys):
    root = tmp_path / "root"
    case.build(root)
    code = analyze(["analyze", case.words[0], "--root", str(root), *case.words[1:], "--resamples", "200"])
    err = capsys.readouterr().err
    path, said = NAMED[case.name]
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("psedual analyze: error: "), err
    assert f"{root / path if path else root}" in err and said in err, err
    assert "ArrowTypeError" not in err and "FileNotFoundError" not in err, err


def test_a_damaged_file_of_another_experiment_does_not_stop_this_one(tmp_path, capsys):
    _write(tmp_path, seeds(3))
    _write(tmp_path, seeds(3), experiment="y")
    broken = tmp_path / "runs" / "experiment=y" / "g1.parquet"
    broken.write_bytes(broken.read_bytes()[:100])
    assert analyze(["analyze", "table1", "--root", str(tmp_path), "--experiment", "x", "--resamples", "200"]) == 0
    assert analyze(["analyze", "table1", "--root", str(tmp_path), "--resamples", "200"]) == 2
    assert f"{broken}: not a readable Parquet file" in capsys.readouterr().err


def test_types_that_widen_are_still_read_together(tmp_path):
    # a column written as int64 by one writer and as double by another is one number column
    from analysis.tables import read

    crafted.retyped("seed", "double")(tmp_path)
    seeds_read = read.scan(str(tmp_path), "runs").collect()["seed"].to_list()
    assert sorted(seeds_read) == [0, 0, 1, 1, 2, 2]
