"""A BYO (jsonl) folder: only train/valid/test.jsonl are read, anything else is listed in one
note and keys no cache; a folder named like a data file is ignored; a run with no test (or
no training) problems left is refused before training, saying why."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from psedual.cli import main
from psedual.data.cache import cache_key, load_dataset
from psedual.data.config import DataConfig
from psedual.solvers.config import SolverConfig
from psedual.train.config import TrainConfig
from psedual.train.trainer import train

ROWS = [{"id": f"p{k}", "text": f"Tom has {k + 3} apples and eats 2.", "equation": f"x={k + 3}-2", "answer": k + 1}
        for k in range(12)]


def _folder(tmp_path, train=ROWS[:10], test=ROWS[10:]):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train))
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in test))
    return folder


def test_other_files_are_listed_never_read(tmp_path):
    folder = _folder(tmp_path)
    before = cache_key("jsonl", tmp_path, folder)
    (folder / "dev.jsonl").write_text(json.dumps(ROWS[0]) + "\n")
    (folder / "valid.json").write_text("[]")
    (folder / "old.jsonl").mkdir()  # a folder named like a data file: it blocked the load
    (folder / "huge.jsonl").write_bytes(b"x" * 1_000_000)  # read whole on every load (the cache key)
    ds = load_dataset("jsonl", user_path=folder, use_cache=False)
    assert cache_key("jsonl", tmp_path, folder) == before
    assert len(ds.problems) == 12 and not ds.skips
    note, = [k for k in ds.notes if k.startswith("not read")]
    assert note == "not read (only train.jsonl, valid.jsonl, test.jsonl are): dev.jsonl, huge.jsonl, old.jsonl/, valid.json"


def test_stats_shows_the_note(tmp_path, capsys):
    folder = _folder(tmp_path)
    (folder / "dev.jsonl").write_text("")
    assert main(["data", "stats", "jsonl", "--user_path", str(folder)]) == 0
    assert "not read (only train.jsonl, valid.jsonl, test.jsonl are): dev.jsonl: 1" in capsys.readouterr().out


def _config(folder, **data):
    return TrainConfig(DataConfig("jsonl", user_path=str(folder), **data), model=SolverConfig(16, 32, 1, 0.2), epochs=1,
                       batch_size=8, beam_size=1, seed=0, threads=1)


def test_no_test_problems_is_refused_before_training(tmp_path):
    bad = [{"id": "t1", "text": "No numbers here.", "equation": "x=5-2", "answer": "three"}]
    folder = _folder(tmp_path, test=bad)
    with pytest.raises(ValueError, match=r"jsonl: no test problems: its test split is empty, so no run on it could "
                                         r"be scored; 10 problems kept from .*mine, 1 records skipped "
                                         r"\(answer not a number: 1\)"):
        train(_config(folder), tmp_path / "run")
    assert not (tmp_path / "run" / "best.pt").exists()


def test_no_training_problems_says_why(tmp_path):
    rows = [{**r, "equation": f"x={r['answer'] + 2}-2+{100 + k}-{100 + k}"} for k, r in enumerate(ROWS[:10])]
    folder = _folder(tmp_path, train=rows)
    with pytest.raises(ValueError, match=r"no training problems: all \d+ were left out of training \(uses a constant "
                                         r"outside the vocabulary: \d+; a constant needs --data.min_constant_count 5"):
        train(_config(folder), tmp_path / "run")


def test_a_problem_longer_than_the_encoder_is_left_out_at_load(tmp_path):
    from psedual.train.view import TOO_MANY_SUBWORDS

    long = {"id": "long", "text": "Tom has 5 apples and eats 2. " + "Then he walks on. " * 340, "equation": "x=5-2",
            "answer": 3}
    assert len(long["text"]) > 6000
    folder = _folder(tmp_path, train=ROWS[:10] + [long], test=ROWS[11:])
    (folder / "valid.jsonl").write_text(json.dumps(ROWS[10]) + "\n")  # none carved: the long one trains
    config = replace(_config(folder), solver="bert_tree",
                     model=SolverConfig(16, 32, 1, 0.0, plm_layers=1, plm_hidden=32))
    result = train(config, tmp_path / "run")  # it stopped at its first batch: more subwords than positions
    info = json.loads((tmp_path / "run" / "data.json").read_text())
    assert info["left_out_by_reason"] == {TOO_MANY_SUBWORDS: 1} and info["train"] == 10
    assert result is not None


def test_psedual_test_refuses_data_changed_since_training(tmp_path, capsys):
    folder = _folder(tmp_path)
    run = tmp_path / "run"
    train(_config(folder), run)
    assert main(["test", str(run)]) == 0  # the same data: tested again
    capsys.readouterr()
    changed = [{**r, "answer": r["answer"] + 1} if r["id"] == "p11" else r for r in ROWS[10:]]
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in changed))
    metrics = (run / "metrics.parquet").read_bytes()
    assert main(["test", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"{run}: the test data of jsonl (from {folder}) differ from what this run used (test " in err
    assert "refused, as its metrics would be for other problems" in err and err.count("\n") == 1
    assert (run / "metrics.parquet").read_bytes() == metrics  # not overwritten
    assert main(["test", str(run), "--allow_changed_data", "true"]) == 0
    assert "testing on the data now on disk (--allow_changed_data)" in capsys.readouterr().err
    import polars as pl  # the metrics say so, and analysis flags a claim on them

    assert pl.read_parquet(run / "metrics.parquet")["data_changed"].to_list() == [True]


def test_the_same_problem_in_train_and_test_under_another_id_is_reported(tmp_path, capsys):
    copy = {**ROWS[3], "id": "copy", "text": ROWS[3]["text"].upper()}  # case is no difference
    other_numbers = {**ROWS[3], "id": "other", "text": "Tom has 99 apples and eats 2.", "equation": "x=99-2",
                     "answer": 97}  # the same template over other numbers is no leak
    folder = _folder(tmp_path, test=[copy, other_numbers])
    (folder / "valid.jsonl").write_text(json.dumps(ROWS[11]) + "\n")
    assert main(["data", "stats", "jsonl", "--user_path", str(folder)]) == 0
    assert ("leakage: valid/test problems whose text and gold are also in train (other ids): 0/1 (scores on them "
            "may be memory)") in capsys.readouterr().out
    train(_config(folder), tmp_path / "run")
    assert json.loads((tmp_path / "run" / "data.json").read_text())["leaked"] == {"valid": 0, "test": 1}
    assert "leakage: valid/test problems whose text and gold are also in train (other ids): 0/1" in capsys.readouterr().err
