"""A finished run is never lost at its test step: a test problem the solver cannot represent
is scored wrong with its reason, and whatever else fails there leaves the checkpoints for
`psedual test RUN_DIR` (or `psedual train --resume`) to finish without training."""

from __future__ import annotations

import json

import polars as pl
import pytest

from psedual.cli import main
from psedual.data.config import DataConfig
from psedual.solvers.config import SolverConfig
from psedual.results import folder
from psedual.train import trainer
from psedual.train.config import TrainConfig

MANY = 40  # numbers in one test problem; every training problem has 2


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PSEDUAL_CACHE", str(tmp_path / "cache"))


def _config(tmp_path) -> TrainConfig:
    folder = tmp_path / "mine"
    folder.mkdir()
    rows = [{"id": f"p{i}", "text": f"Ann has {i + 2} apples and buys {i + 3} more .", "equation": f"x={i + 2}+{i + 3}",
             "answer": 2 * i + 5} for i in range(24)]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    many = " and ".join(str(k + 1) for k in range(MANY))
    test = [{**r, "id": f"t{i}"} for i, r in enumerate(rows[:3])]
    test.append({"id": "t-many", "text": f"Ann has {many} apples .", "equation": "x=1+2", "answer": 3})
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in test))
    return TrainConfig(DataConfig("jsonl", user_path=str(folder)), model=SolverConfig(16, 32, 1, 0.2), epochs=1,
                       batch_size=16, beam_size=1, seed=0, threads=1)


def test_a_test_problem_with_more_numbers_than_slots_is_scored_wrong_with_its_reason(tmp_path, capsys):
    out = tmp_path / "run"
    result = trainer.train(_config(tmp_path), out, progress=False)
    rows = {r["id"]: r for r in pl.read_parquet(out / "predictions.parquet").to_dicts()}
    assert len(rows) == 4
    many = rows["jsonl:t-many"]
    assert many["unscored"] == f"jsonl:t-many: {MANY} numbers, but the solver has 2 number slots"
    assert (many["predicted"], many["value_correct"], many["expression_correct"]) == ([], False, False)
    assert [rows[f"jsonl:t{i}"]["unscored"] for i in range(3)] == [None, None, None]
    metrics = pl.read_parquet(out / "metrics.parquet").row(0, named=True)
    assert (metrics["n_test"], metrics["n_test_unscored"]) == (4, 1)
    assert result.test_value_acc == sum(r["value_correct"] for r in rows.values()) / 4
    assert "test: 1 of 4 problems could not be decoded and are scored wrong" in capsys.readouterr().err


def test_a_failed_test_step_keeps_the_run_and_is_finished_without_training(tmp_path, monkeypatch, capsys):
    config, out = _config(tmp_path), tmp_path / "run"
    write = folder.write_rows

    def disk_full(rows, path, schema=None):
        if path.name == "predictions.parquet":
            raise OSError(28, "No space left on device")
        write(rows, path, schema)

    monkeypatch.setattr(folder, "write_rows", disk_full)
    with pytest.raises(OSError, match="No space left"):
        trainer.train(config, out, progress=False)
    assert (out / "best.pt").is_file() and (out / "last.pt").is_file() and not (out / "metrics.parquet").exists()

    monkeypatch.setattr(folder, "write_rows", write)
    monkeypatch.setattr(trainer, "_train_epoch", lambda *a: pytest.fail("trained again"))
    assert main(["test", str(out)]) == 0
    assert "best epoch 1: valid value" in capsys.readouterr().out
    first = pl.read_parquet(out / "predictions.parquet")
    assert first.height == 4 and (out / "metrics.parquet").is_file()

    (out / "predictions.parquet").unlink()
    (out / "metrics.parquet").unlink()
    result = trainer.train(config, out, resume=True, progress=False)  # the same options, --resume
    assert result.best_epoch == 1
    assert pl.read_parquet(out / "predictions.parquet").equals(first)


def test_psedual_test_on_a_folder_that_holds_no_run_is_one_line(tmp_path, capsys):
    (tmp_path / "config.json").write_text("{}")
    assert main(["test", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"psedual: error: {tmp_path}: not a trained run folder (missing epochs.parquet, best.pt)\n"
