"""Run folders protected by what they hold (issue 52, item 14): a folder whose last.pt is gone still
holds a run, and a run of another config started there is refused, naming the folder and the keys
that differ, with every file left as it was; the same config starts again as it always did. And a
results root that is a symbolic link loop is one line for `psedual results add` (item 13)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from psedual.cli import main
from psedual.data.config import DataConfig
from psedual.reexamine import PseDualConfig
from psedual.solvers.config import SolverConfig
from psedual.train import checkpoint
from psedual.train.config import TrainConfig
from psedual.train.trainer import train

TINY = TrainConfig(DataConfig("mawps", fold=0, train_size=64), model=SolverConfig(16, 32, 1, 0.2), epochs=1,
                   batch_size=32, lr=1e-2, beam_size=1, seed=3, threads=1)
FLAGS = ["--data.dataset", "mawps", "--data.fold", "0", "--data.train_size", "64", "--model.embedding_size", "16",
         "--model.hidden_size", "32", "--model.layers", "1", "--model.dropout", "0.2", "--epochs", "1",
         "--batch_size", "32", "--lr", "0.01", "--beam_size", "1", "--seed", "3", "--threads", "1"]
"""TINY as `psedual train` options."""


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("finished")
    train(TINY, out)
    return out


@pytest.fixture
def run(finished, tmp_path):
    """A copy of the finished run whose last.pt was deleted."""
    shutil.copytree(finished, tmp_path / "run")
    (tmp_path / "run" / "last.pt").unlink()
    return tmp_path / "run"


def _held(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# (what the folder and the new run are, how the folder is changed, the new run's config, the line's fragment)
ANOTHER = [
    ("another learning rate", None, replace(TINY, lr=5e-3), "(lr: 0.01 there, 0.005 here)"),
    ("another arm", None, replace(TINY, psedual=PseDualConfig(expression_encoder="gcn")),
     "(variant: base there, gcn here)"),
    ("another data set and seed", None, replace(TINY, data=DataConfig("svamp", train_size=64), seed=4),
     "(data.dataset: mawps there, svamp here; data.fold: 0 there, None here; seed: 3 there, 4 here)"),
    ("its config.json deleted too", lambda f: (f / "config.json").unlink(), TINY,
     "holds a run (epochs.parquet, best.pt, predictions.parquet, metrics.parquet) but no config.json"),
    ("its config.json not JSON", lambda f: (f / "config.json").write_text("{oops"), TINY,
     "config.json: not a run's config (JSONDecodeError"),
    ("an LLM run's folder", lambda f: (f / "config.json").write_text(json.dumps({"llm": {"model": "m"}})), TINY,
     "config.json: not a run's config"),
]


@pytest.mark.parametrize(("name", "change", "config", "says"), ANOTHER, ids=[a[0] for a in ANOTHER])
@pytest.mark.parametrize("resume", [False, True], ids=["fresh", "--resume"])
def test_a_folder_holding_another_run_is_refused_and_kept(run, name, change, config, says, resume):
    if change is not None:
        change(run)
    before = _held(run)
    with pytest.raises(checkpoint.CheckpointError) as err:
        train(config, run, resume=resume)
    assert str(run) in str(err.value) and says in str(err.value), err.value
    assert _held(run) == before  # nothing replaced, nothing added


def test_the_command_says_so_in_one_line(run, capsys):
    before = _held(run)
    assert main(["train", *FLAGS[:-4], "--seed", "4", "--threads", "1", "--out", str(run)]) == 2
    err = capsys.readouterr().err  # the data's summary, then the error
    assert err.count("psedual: error:") == 1 and "Traceback" not in err, err
    assert err.splitlines()[-1].startswith(f"psedual: error: {run} holds the run of another config (seed: 3 there, "
                                           "4 here)"), err
    assert _held(run) == before


@pytest.mark.parametrize("device", ["auto", "cpu"])
def test_the_same_config_starts_again_as_before(run, device):
    # today's semantics: without last.pt the run starts from scratch (its device is not its identity)
    result = train(replace(TINY, device=device), run)
    assert result is not None and (run / "last.pt").is_file() and result.best_epoch == 1


def test_a_results_root_that_is_a_link_loop_is_one_line(finished, tmp_path, capsys):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert main(["results", "add", str(finished), "--experiment", "e", "--root", str(loop)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"psedual: error: {loop}: the results root cannot be resolved"), err
