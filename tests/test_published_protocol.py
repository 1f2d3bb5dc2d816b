"""The published GTS/Graph2Tree protocol as options: no validation carve-out (`data.valid_fraction 0`),
the last epoch tested (`selection last`), and the published problem-vector read in a run (tiny models)."""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest
import torch

from psedual.data.cache import load_dataset
from psedual.data.config import DataConfig
from psedual.data.splits import split_dataset
from psedual.results.best import kept_epoch
from psedual.solvers.config import SolverConfig
from psedual.train import checkpoint
from psedual.train.config import TrainConfig
from psedual.train.trainer import train

TINY = TrainConfig(DataConfig("mawps", fold=0, train_size=96), model=SolverConfig(16, 32, 1, 0.2), epochs=3,
                   batch_size=32, lr=1e-2, beam_size=2, seed=3, threads=1)
ROWS = [{"epoch": 3, "valid_value_acc": 0.25}, {"epoch": 1, "valid_value_acc": 0.125},
        {"epoch": 2, "valid_value_acc": 0.5}]


def test_no_carve_out_trains_on_the_whole_pool():
    """MAWPS fold 0: the carve-out takes 159 of the other folds' problems for validation; with
    valid_fraction 0 all of them train (less the same vocabulary leave-outs), none validates."""
    dataset = load_dataset("mawps")
    pool = {p.id for p in dataset.problems if p.fold != 0}
    carved = split_dataset(dataset, DataConfig("mawps", fold=0))
    whole = split_dataset(dataset, DataConfig("mawps", fold=0, valid_fraction=0.0))
    assert len(carved.valid) == 159 and whole.valid == ()
    assert whole.test == carved.test
    assert {p.id for p in whole.train} <= pool
    assert len(whole.train) + sum(whole.left_out.values()) == len(pool)
    assert len(carved.train) + len(carved.valid) + sum(carved.left_out.values()) == len(pool)
    with pytest.raises(ValueError, match=r"valid_fraction must be in \[0, 1\)"):
        DataConfig("mawps", fold=0, valid_fraction=-0.1)


def test_kept_epoch_best_or_last():
    assert kept_epoch(ROWS)["epoch"] == 2  # best: the first of the highest
    assert kept_epoch(ROWS, "last")["epoch"] == 3  # last: whatever validation says
    assert kept_epoch([{"epoch": 1, "valid_value_acc": float("nan")}], "last")["epoch"] == 1
    with pytest.raises(ValueError, match="unknown selection 'test'; valid: best, last"):
        kept_epoch(ROWS, "test")
    with pytest.raises(ValueError, match="unknown selection 'test'; valid: best, last"):
        TrainConfig(selection="test")


def test_no_validation_set_needs_selection_last(tmp_path):
    config = replace(TINY, data=replace(TINY.data, valid_fraction=0.0))
    with pytest.raises(ValueError, match="no validation problems .* pass --selection last"):
        train(config, tmp_path)


PUBLISHED = replace(TINY, data=replace(TINY.data, valid_fraction=0.0), selection="last",
                    model=replace(TINY.model, problem_vector="published"))
"""The three published settings together: no carve-out, last epoch, published read."""


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    out = tmp_path_factory.mktemp("published")
    return train(PUBLISHED, out), out


def test_a_published_protocol_run_tests_its_last_epoch_without_validation(published):
    result, out = published
    epochs = pl.read_parquet(out / "epochs.parquet")
    assert epochs["epoch"].to_list() == [1, 2, 3] and epochs["valid_value_acc"].is_nan().all()
    assert result.best_epoch == 3
    assert round(result.test_value_acc * 397) == 17  # fixed seed, one thread: this run's exact count
    metrics = pl.read_parquet(out / "metrics.parquet").row(0, named=True)
    assert (metrics["n_valid"], metrics["n_train"], metrics["n_test"]) == (0, 94, 397)  # 2 of the 96 use a rare constant
    assert (metrics["selection"], metrics["model.problem_vector"], metrics["data.valid_fraction"]) == (
        "last", "published", 0.0)
    # the tested checkpoint is the last epoch's weights
    best, last = checkpoint.load(out / "best.pt"), checkpoint.load(out / "last.pt")
    assert all(torch.equal(best["model"][k], last["model"][k]) for k in last["model"])


def test_the_published_read_changes_training_and_nothing_else(published, tmp_path):
    """Same data, selection and seed with the final-state read: the first epoch's loss differs
    (the root goal of every shorter problem is another vector), the test split is the same."""
    _, out = published
    config = replace(TINY, data=replace(TINY.data, valid_fraction=0.0), selection="last")
    train(config, tmp_path)
    ours, theirs = pl.read_parquet(tmp_path / "epochs.parquet"), pl.read_parquet(out / "epochs.parquet")
    assert ours["train_loss"][0] != theirs["train_loss"][0]
    assert pl.read_parquet(tmp_path / "predictions.parquet")["id"].equals(
        pl.read_parquet(out / "predictions.parquet")["id"])


def test_selection_last_with_a_validation_set_keeps_the_last_epoch(tmp_path):
    result = train(replace(TINY, selection="last"), tmp_path)
    epochs = pl.read_parquet(tmp_path / "epochs.parquet")
    assert result.best_epoch == 3
    assert result.valid_value_acc == pytest.approx(epochs["valid_value_acc"][2])


def test_a_published_protocol_run_resumes_to_the_same_numbers(published, tmp_path):
    """What the fold-0 runs of issue 58 rely on across sessions: stopped after an epoch and resumed
    (`--resume`), a run without validation ends as the uninterrupted one did."""
    whole, out = published
    assert train(PUBLISHED, tmp_path, stop_after_epoch=1) is None
    resumed = train(PUBLISHED, tmp_path, resume=True)
    same = dict(out_dir="", train_seconds=0, valid_value_acc=0.0, valid_expr_acc=0.0)  # NaN: no validation set
    assert replace(resumed, **same) == replace(whole, **same)
    assert resumed.valid_value_acc != resumed.valid_value_acc  # NaN
    assert pl.read_parquet(tmp_path / "predictions.parquet").equals(pl.read_parquet(out / "predictions.parquet"))
