"""The datasets the platform knows, by name. An unknown name fails with the valid ones."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from psedual.data.sources import jsonl, math23k, mathqa, mawps, svamp
from psedual.data.sources.common import LoadResult


@dataclass(frozen=True)
class DatasetSpec:
    """How to read one benchmark."""

    name: str
    """Registry key, also the `dataset` field of its problems."""
    files: tuple[str, ...]
    """Source files relative to the data root; their bytes key the cache."""
    folds: int
    """Number of cross-validation folds; 0 when the source fixes train/valid/test."""
    read: Callable[[Path, Path | None], LoadResult]
    """Reads (data root, user path) into problems and skips."""
    source: str
    """Where its problems come from, in a few words (the README's dataset table)."""
    splits: str
    """Its train / valid / test sizes or fold rule, in a few words (the README's dataset table)."""
    user_path: str = ""
    """What the optional user path means for this dataset ('' if it takes none): the error that
    asks for a missing one, and `data stats --help`, say it."""
    user_files: Callable[[Path, Path | None], list[Path]] = lambda root, user: []
    """The source files beyond `files` that key the cache, given (data root, user path)."""
    needs_user_path: bool = False
    """The user path is the data: no data root is searched, and a run without one is refused."""
    language: str = "en"
    """The problems' language (`zh`: Math23K): a pretrained-encoder solver needs an encoder of it
    (`psedual.tune.encoders` checks a sweep's before its first trial)."""


def _mathqa_train(root: Path, user: Path | None) -> list[Path]:
    train = user or root / mathqa.TRAIN_FILE
    return [train] if user or train.exists() else []


DATASETS: dict[str, DatasetSpec] = {
    "math23k": DatasetSpec("math23k", math23k.FILES, 0, lambda root, _: math23k.load(root),
                           "raw Math_23K.json + split_ids.json (+ group_num.json cells)", "21,162 / 1,000 / 1,000",
                           language="zh"),
    "mawps": DatasetSpec("mawps", mawps.FOLD_FILES, mawps.FOLDS, lambda root, _: mawps.load_folds(root),
                         "MAWPS five folds", "fold k = test, the other four = train, validation carved from train"),
    "mawps-single": DatasetSpec("mawps-single", mawps.SINGLE_FILES, 0, lambda root, _: mawps.load_single(root),
                                "MAWPS single split", "1,589 / 199 / 199"),
    "svamp": DatasetSpec("svamp", svamp.FILES, 0, lambda root, _: svamp.load(root),
                         "train MAWPS+ASDiv-A CSV, test SVAMP CSV", "3,138 train (validation carved), 1,000 test"),
    "mathqa": DatasetSpec("mathqa", mathqa.FILES, 0, mathqa.load,
                          "valid/test in shared data; train from `--data.user_path FILE`", "– / 3,540 / 2,410",
                          f"a training file in MathQA's form (default: <data root>/{mathqa.TRAIN_FILE} if present)",
                          _mathqa_train),
    "jsonl": DatasetSpec("jsonl", (), 0, lambda _, path: jsonl.load(path),
                         "your folder: `train.jsonl`, `test.jsonl`, optional `valid.jsonl`", "see below",
                         "the folder holding train/valid/test.jsonl",
                         lambda _, user: jsonl.files(user), True),
}
"""The datasets, by name: the configs' choices, the cache, `data stats` and analysis's fold
protocol read it. Adding one is its reader in `sources/`, one line here and a test, then `make readme`."""
DatasetName = Literal[tuple(DATASETS)]  # the configs' annotation: the CLI lists the registry's names


def get_spec(name: str) -> DatasetSpec:
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}")
    return DATASETS[name]
