"""A run folder handed to `psedual test`, or a checkpoint to `psedual solve`, that is not what a
run writes: each case is one line naming the file and what is wrong (exit 2), never a traceback,
and a damaged `data.json` never lets a run be tested on other data unnoticed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from psedual.cli import main
from psedual.data.config import DataConfig
from psedual.reexamine.config import PseDualConfig
from psedual.solvers.config import SolverConfig
from psedual.train.config import TrainConfig
from psedual.train.trainer import train

TEXT = "Tom has 5 apples and eats 2."


def _rows(n: int, prefix: str) -> str:
    ops = [("+", "buys", lambda a, b: a + b), ("-", "eats", lambda a, b: a - b)]
    rows = []
    for i in range(n):
        op, verb, f = ops[i % 2]
        a, b = 10 + i, 1 + i % 7
        rows.append({"id": f"{prefix}{i}", "text": f"Ann has {a} apples and {verb} {b} .", "equation": f"x={a}{op}{b}",
                     "answer": f(a, b)})
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One tiny PseDual run on a small folder of one's own (so best.pt holds a reexaminer too, and
    each `psedual test` takes a second), copied by each test."""
    folder = tmp_path_factory.mktemp("mine")
    (folder / "train.jsonl").write_text(_rows(40, "p"))
    (folder / "test.jsonl").write_text(_rows(6, "t"))
    out = tmp_path_factory.mktemp("run")
    train(TrainConfig(DataConfig("jsonl", user_path=str(folder)), model=SolverConfig(16, 32, 1, 0.2), epochs=1,
                      batch_size=16, lr=1e-2, beam_size=2, seed=3, threads=1,
                      psedual=PseDualConfig(expression_encoder="gru")), out)
    return out


@pytest.fixture
def run(trained, tmp_path):
    shutil.copytree(trained, tmp_path / "run")
    return tmp_path / "run"


def _one_line(capsys, *fragments: str) -> str:
    err = capsys.readouterr().err
    line = err.splitlines()[-1]
    assert line.startswith("psedual: error: ") and err.count("psedual: error:") == 1, err
    assert all(f in line for f in fragments), line
    return line


def _edit_json(path: Path, edit) -> None:
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))


@pytest.mark.parametrize(("name", "change", "says"), [
    ("not JSON", lambda p: p.write_text("{oops"), "not a run's config (JSONDecodeError"),
    ("a list", lambda p: p.write_text("[1, 2]"), "not a run's config (TypeError: an object of options, found a list)"),
    ("a field of the wrong type", lambda p: _edit_json(p, lambda c: {**c, "epochs": "many"}), "not a run's config"),
])
def test_a_damaged_config_json_is_one_line(run, capsys, name, change, says):
    change(run / "config.json")
    assert main(["test", str(run)]) == 2
    _one_line(capsys, f"{run / 'config.json'}: {says}")


@pytest.mark.parametrize(("name", "change", "says"), [
    ("not JSON", lambda p: p.write_text("{oops"), "JSONDecodeError"),
    ("a folder", lambda p: (p.unlink(), p.mkdir()), "IsADirectoryError"),
    ("its identity a list", lambda p: _edit_json(p, lambda d: {**d, "identity": [1]}), "not the train and test hashes"),
    ("its identity without hashes", lambda p: _edit_json(p, lambda d: {**d, "identity": {"train": 1}}),
     "not the train and test hashes"),
    ("a list", lambda p: p.write_text("[]"), "not the train and test hashes"),
])
def test_a_damaged_data_json_is_refused_not_skipped(run, capsys, name, change, says):
    """Damaging data.json used to skip the identity check silently: the run was tested on
    whatever data is on disk, its metrics overwritten."""
    before = (run / "metrics.parquet").read_bytes()
    change(run / "data.json")
    assert main(["test", str(run)]) == 2
    _one_line(capsys, f"{run / 'data.json'}: cannot tell which data this run used", says,
              "--allow_changed_data")
    assert (run / "metrics.parquet").read_bytes() == before
    assert main(["test", str(run), "--allow_changed_data", "true"]) == 0
    assert "(--allow_changed_data)" in capsys.readouterr().err


def test_a_missing_data_json_is_said(run, capsys):
    (run / "data.json").unlink()
    assert main(["test", str(run)]) == 0
    assert f"note: {run / 'data.json'} is missing: the data this run used are not checked" in capsys.readouterr().err


def test_a_damaged_epochs_table_is_one_line(run, capsys):
    (run / "epochs.parquet").write_bytes(b"PAR1 not a table")
    assert main(["test", str(run)]) == 2
    _one_line(capsys, f"{run / 'epochs.parquet'}: not a run's epoch table (ArrowInvalid")


def test_a_checkpoint_without_its_reexaminer_is_one_line(run, capsys):
    state = torch.load(run / "best.pt", weights_only=True)
    del state["reexaminer"]
    torch.save(state, run / "best.pt")
    assert main(["test", str(run)]) == 2
    _one_line(capsys, f"{run / 'best.pt'}: cannot restore its 'reexaminer' (KeyError")
    state["reexaminer"] = {"w": torch.zeros(2)}  # another module's weights
    torch.save(state, run / "best.pt")
    assert main(["test", str(run)]) == 2
    _one_line(capsys, f"{run / 'best.pt'}: cannot restore its 'reexaminer' (RuntimeError")


@pytest.mark.parametrize(("what", "make", "says"), [
    ("a folder", lambda p: p.mkdir(), "a folder with no best.pt: give a checkpoint file, or a run folder "
                                      "`psedual train ... --out {path}` has trained"),
    ("a dangling link", lambda p: p.symlink_to(p.parent / "nowhere.pt"), "is a dangling symbolic link"),
])
def test_solve_names_what_the_checkpoint_path_is(tmp_path, capsys, what, make, says):
    path = tmp_path / "best.pt"
    make(path)
    assert main(["solve", "--checkpoint", str(path), TEXT]) == 2
    assert capsys.readouterr().err == f"psedual: error: {path}: {says.format(path=path)}\n"


def test_solve_takes_a_run_folder_and_says_which_checkpoint(run, capsys):
    """`psedual solve --checkpoint runs/gts`: the folder `psedual train --out` wrote is solved with its
    best.pt, said on stderr (stdout stays the answer alone); without one, what would write it."""
    assert main(["solve", "--checkpoint", str(run / "best.pt"), TEXT]) == 0
    answer = capsys.readouterr().out
    assert main(["solve", "--checkpoint", str(run), TEXT]) == 0
    said = capsys.readouterr()
    assert said.out == answer and said.err == f"psedual solve: {run} is a run folder: solving with its {run / 'best.pt'}\n"
    (run / "best.pt").unlink()
    assert main(["solve", "--checkpoint", str(run), TEXT]) == 2
    assert capsys.readouterr().err == (f"psedual: error: {run}: a folder with no best.pt (it holds last.pt: `psedual "
                                       f"train ... --out {run} --resume` finishes it): give a checkpoint file, or a run "
                                       f"folder `psedual train ... --out {run}` has trained\n")


def test_a_tilde_in_the_data_and_cache_variables_means_home_everywhere(tmp_path, monkeypatch, capsys):
    """`PSEDUAL_DATA='~/data'` (quoted in a .env file, so no shell expanded it): fetch wrote into the
    home folder, and every loader then said `~/data` is not a folder; `PSEDUAL_CACHE='~/c'` made a
    folder named `~` in the working directory."""
    home, work = tmp_path / "home", tmp_path / "work"
    folder = home / "mine"
    folder.mkdir(parents=True)
    work.mkdir()
    (folder / "train.jsonl").write_text(_rows(4, "p"))
    (folder / "test.jsonl").write_text(_rows(2, "t"))
    (home / "data").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    monkeypatch.setenv("PSEDUAL_CACHE", "~/c")
    monkeypatch.setenv("PSEDUAL_DATA", "~/data")
    from psedual.data.root import find_data_root
    assert find_data_root() == home / "data"
    assert main(["data", "stats", "jsonl", "--user_path", "~/mine"]) == 0
    assert "== jsonl: 6 kept, 0 skipped" in capsys.readouterr().out
    assert list((home / "c").glob("jsonl-*.problems.parquet")) and not (work / "~").exists()


def test_a_config_that_does_not_fit_its_weights_is_refused_before_the_model_is_built(run, capsys):
    """hidden_size 100,000 beside 32-wide weights: the build allocated a 120 GB GRU matrix (or, at a
    size that fits, all of memory) before load_state_dict could refuse; now nothing is built."""
    import resource
    state = torch.load(run / "best.pt", weights_only=True)
    state["solver_config"] = {**state["solver_config"], "hidden_size": 100_000}
    torch.save(state, run / "best.pt")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert main(["solve", "--checkpoint", str(run / "best.pt"), TEXT]) == 2
    _one_line(capsys, f"{run / 'best.pt'}: its solver config", "'hidden_size': 100000", "does not fit its weights",
              "the model was not built")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: nothing large was allocated
