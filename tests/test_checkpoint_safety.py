"""Checkpoints never run code: a `.pt` whose pickle names a callable is refused unread, in one
line naming the file, by `checkpoint.load`, `psedual solve` and `psedual test`; a checkpoint
with the right keys but foreign contents is one line too."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from psedual.cli import main
from psedual.data.config import DataConfig
from psedual.solvers.config import SolverConfig
from psedual.train import checkpoint
from psedual.train.config import TrainConfig
from psedual.train.trainer import train


TINY = TrainConfig(DataConfig("mawps", fold=0, train_size=32), model=SolverConfig(16, 32, 1, 0.2), epochs=1,
                   batch_size=32, lr=1e-2, beam_size=2, seed=3, threads=1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A real run folder (one tiny epoch), whose best.pt the tests replace."""
    out = tmp_path_factory.mktemp("run")
    train(TINY, out)
    return out


class _Payload:
    """Unpickling this calls os.mkdir(marker): what a hostile checkpoint would do, harmlessly."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (str(self.marker),)


def _plant(path: Path, marker: Path) -> Path:
    # The keys a PseDual checkpoint has, so only the payload can make it fail.
    torch.save({"solver": "gts", "solver_config": {}, "vocab": "{}", "model": {"w": _Payload(marker)}}, path)
    return path


def test_a_pickle_payload_is_refused_without_running(tmp_path):
    marker = tmp_path / "payload-ran"
    evil = _plant(tmp_path / "evil.pt", marker)
    with pytest.raises(checkpoint.CheckpointError, match=r"evil\.pt: refused: it holds objects other than tensors") as err:
        checkpoint.load(evil)
    assert "\n" not in str(err.value)
    assert "posix.mkdir" in str(err.value) or "os.mkdir" in str(err.value)
    assert not marker.exists()


def test_solve_and_test_refuse_a_pickle_payload(trained, tmp_path, capsys):
    marker = tmp_path / "payload-ran"
    evil = _plant(tmp_path / "evil.pt", marker)
    assert main(["solve", "--checkpoint", str(evil), "Tom has 5 apples and eats 2."]) == 2
    err = capsys.readouterr().err
    assert "evil.pt: refused" in err and err.count("\n") == 1
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    _plant(run / "best.pt", marker)
    assert main(["test", str(run)]) == 2
    assert "best.pt" in capsys.readouterr().err
    assert not marker.exists()


@pytest.mark.parametrize("vocab", ["not json", json.dumps([1, 2]), json.dumps({"words": 3})])
def test_right_keys_foreign_contents_is_one_line(tmp_path, vocab, capsys):
    path = tmp_path / "foreign.pt"
    torch.save({"solver": "gts", "solver_config": {}, "vocab": vocab, "model": {}}, path)
    with pytest.raises(checkpoint.CheckpointError, match=r"foreign\.pt: its vocabulary is not a PseDual vocabulary"):
        checkpoint.build_model(checkpoint.load(path), path)
    assert main(["solve", "--checkpoint", str(path), "Tom has 5 apples and eats 2."]) == 2
    assert "foreign.pt" in capsys.readouterr().err


def test_solve_a_text_with_no_numbers_says_so(trained, capsys):
    assert main(["solve", "--checkpoint", str(trained / "best.pt"), "Tom has apples and eats some."]) == 2
    assert capsys.readouterr().err == ("psedual: error: no numbers in the problem text 'Tom has apples and eats some.': "
                                       "write its numbers out (5, 2.5, 1/2, 50%)\n")
