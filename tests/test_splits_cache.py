"""Run views (folds, validation carve, nested subsets, constants) and the Parquet cache."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from psedual.data import cache
from psedual.data.cache import cache_key, load_dataset
from psedual.data.config import DataConfig
from psedual.data.splits import INCONSISTENT, OUTSIDE_VOCABULARY, constants_of, split_dataset


def test_mawps_fold_views_partition_the_data(datasets):
    ds = datasets("mawps")
    tests = []
    for k in range(5):
        s = split_dataset(ds, DataConfig("mawps", fold=k))
        ids = [{p.id for p in part} for part in (s.train, s.valid, s.test)]
        assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
        assert all(p.fold == k for p in s.test) and all(p.fold != k for p in s.valid + s.train)
        assert len(s.valid) == round(0.1 * (1987 - len(s.test)))
        tests.append(ids[2])
    assert sum(map(len, tests)) == 1987 and len(set().union(*tests)) == 1987
    again = split_dataset(ds, DataConfig("mawps", fold=0))
    assert again == split_dataset(ds, DataConfig("mawps", fold=0))
    assert [p.id for p in again.valid][:3] == ["mawps:0", "mawps:101", "mawps:112"]


def test_nested_training_subsets(datasets):
    ds = datasets("math23k")
    sizes = [3000, 5000, 10000, 15000, 20000]
    trains = [{p.id for p in split_dataset(ds, DataConfig("math23k", train_size=n)).train} for n in sizes]
    # Sizes are drawn before rare-constant problems are left out, so a view may be a few short.
    assert all(n - 5 <= len(t) <= n for n, t in zip(sizes, trains))
    assert all(a < b for a, b in zip(trains, trains[1:]))
    other_seed = {p.id for p in split_dataset(ds, DataConfig("math23k", train_size=3000, subset_seed=1)).train}
    assert other_seed != trains[0]
    with pytest.raises(ValueError, match="exceeds the 21161 training problems"):
        split_dataset(ds, DataConfig("math23k", train_size=30000))


def _write_jsonl(folder, split, rows):
    folder.mkdir(exist_ok=True)
    (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_constants_come_from_training_only(tmp_path):
    folder = tmp_path / "byo"
    train = [{"text": f"Ann has {i + 2} apples and buys {i + 3}.", "equation": f"x={i + 2}+{i + 3}+1",
              "answer": 2 * i + 6} for i in range(10)]
    test = [{"text": f"A box holds {i + 2} eggs.", "equation": f"x={i + 2}*42", "answer": (i + 2) * 42}
            for i in range(10)]
    _write_jsonl(folder, "train", train)
    _write_jsonl(folder, "test", test)
    ds = load_dataset("jsonl", user_path=folder)
    s = split_dataset(ds, DataConfig("jsonl", user_path=str(folder), min_constant_count=5))
    assert s.constants == ("1",)  # 42 is used 10 times, but only in test
    assert all(constants_of(p) == {"42"} for p in s.test) and len(s.test) == 10
    assert len(s.valid) == 1 and len(s.train) == 9


def test_cache_second_load_reads_no_source_and_is_identical(tmp_path, monkeypatch, data_root):
    # What the cache saves is the parse: the second load must not call the reader at all. (A wall-clock
    # ratio said the same on an idle machine, 0.67 s cold vs 0.08 s warm, and failed on a loaded one.)
    monkeypatch.setenv("PSEDUAL_CACHE", str(tmp_path / "cache"))
    reads = []
    spec = cache.get_spec("mawps")

    def counted(root, user):
        reads.append(root)
        return spec.read(root, user)

    monkeypatch.setattr(cache, "get_spec", lambda name: dataclasses.replace(spec, read=counted))
    first = load_dataset("mawps")
    assert len(reads) == 1
    second = load_dataset("mawps")
    assert len(reads) == 1, "the second load parsed the source again"
    assert not first.from_cache and second.from_cache
    assert second.problems == first.problems and second.skips == first.skips and second.notes == first.notes


def test_cache_key_follows_source_bytes(tmp_path, data_root):
    root = tmp_path / "data"
    shutil.copytree(data_root / "mawps", root / "mawps")
    before = cache_key("mawps", root, None)
    fold = root / "mawps/five_fold/fold_3.json"
    fold.write_text(fold.read_text().replace('"answer": 21.0', '"answer": 22.0', 1))
    assert cache_key("mawps", root, None) != before


def test_config_checks():
    with pytest.raises(ValueError, match="fold must be 0..4"):
        DataConfig("mawps")
    with pytest.raises(ValueError, match="fixed splits"):
        DataConfig("math23k", fold=1)
    with pytest.raises(ValueError, match="valid names: math23k, mawps"):
        DataConfig("gsm8k")
    with pytest.raises(ValueError, match="needs user_path"):
        DataConfig("jsonl")
    with pytest.raises(ValueError, match="train_size must be positive"):
        DataConfig("math23k", train_size=0)


def test_mathqa_reads_a_user_training_file(tmp_path, data_root):
    train = tmp_path / "train.json"
    rows = [{"original_text": f"a train covers {60 + i} km in {2 + i % 3} hours . what is its speed ?",
             "equation": f"x=({60 + i}/{2 + i % 3})", "ans": str((60 + i) / (2 + i % 3))} for i in range(12)]
    rows.append({"original_text": "what is 5 % of 40 ?", "equation": "x=((5/100)*40)", "ans": "2"})
    train.write_text(json.dumps(rows))
    ds = load_dataset("mathqa", data_root=data_root, user_path=train)
    s = split_dataset(ds, DataConfig("mathqa", user_path=str(train)))
    assert len([p for p in ds.problems if p.split == "train"]) == 13
    assert (len(s.train), len(s.valid), len(s.test)) == (12, 3540, 2410)  # 100 is used once: left out
    assert s.constants == () and s.left_out == {"uses a constant outside the vocabulary": 1}
    assert all(p.answer_agrees for p in ds.problems if p.split == "train")


def test_drop_inconsistent_leaves_out_training_problems_whose_gold_disagrees(datasets):
    ds = datasets("mawps")
    base = split_dataset(ds, DataConfig("mawps", fold=0))
    dropped = split_dataset(ds, DataConfig("mawps", fold=0, drop_inconsistent=True))
    assert base.left_out == {OUTSIDE_VOCABULARY: 22} and len(base.train) == 1409
    assert sum(not p.answer_agrees for p in base.train) == 3  # trained on by default
    assert dropped.left_out == {INCONSISTENT: 7, OUTSIDE_VOCABULARY: 22} and len(dropped.train) == 1402
    assert all(p.answer_agrees for p in dropped.train)
    assert dropped.valid == base.valid and dropped.test == base.test  # never dropped there
    # Decided before the vocabulary: 7 (days in a week) reached min_constant_count (5) only
    # through MAWPS 3253, whose gold 700 / 7 disagrees with its answer 7.
    assert base.constants == ("12", "3", "0.01", "7") and dropped.constants == ("12", "3", "0.01")
