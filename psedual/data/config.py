"""Typed configuration of which problems a run trains, validates and tests on."""

from __future__ import annotations

from dataclasses import dataclass

from psedual.data.registry import DatasetName, get_spec


@dataclass(frozen=True)
class DataConfig:
    """Which dataset, fold and training subset a run uses; built by the CLI and the sweeps."""

    dataset: DatasetName = "mawps"
    """A name in `psedual.data.registry.DATASETS`."""
    fold: int | None = None
    """Test fold for cross-validated datasets (the registry's `folds`: mawps 0-4); must be None for the others."""
    data_root: str | None = None
    """Folder holding the benchmark files; default: $PSEDUAL_DATA, else a `shared/data` found
    beside the working directory or the checkout, else the per-user folder that `psedual data
    fetch` fills (${XDG_DATA_HOME:-~/.local/share}/psedual/data)."""
    user_path: str | None = None
    """A user's file or folder: MathQA's train.json, or the folder of a jsonl dataset."""
    train_size: int | None = None
    """Train on the first `train_size` problems of a seeded order (nested: 3000 ⊂ 5000 ⊂ ...)."""
    subset_seed: int = 0
    """Seed of the order that `train_size` subsets are taken from."""
    valid_fraction: float = 0.1
    """Share of the training pool carved out for validation where the source has no validation split;
    0 carves none (the published GTS and Graph2Tree protocols train on every training problem):
    such a run has no validation set, so it keeps its last epoch (`--selection last`)."""
    min_constant_count: int = 5
    """A constant is in the solver's vocabulary if at least this many training problems use it."""
    drop_inconsistent: bool = False
    """Leave out of training the problems whose gold expression disagrees with their answer
    (counted; valid and test problems are always kept); `data stats` counts them either way."""

    @classmethod
    def first_fold(cls, dataset: str, **fields) -> DataConfig:
        """`dataset`'s config, on fold 0 if it is cross-validated (what quick runs and benches use)."""
        return cls(dataset, fold=0 if get_spec(dataset).folds else None, **fields)

    def __post_init__(self) -> None:
        spec = get_spec(self.dataset)
        if spec.folds:
            if self.fold is None or not 0 <= self.fold < spec.folds:
                raise ValueError(f"{self.dataset} is cross-validated: fold must be 0..{spec.folds - 1}, got {self.fold}")
        elif self.fold is not None:
            raise ValueError(f"{self.dataset} has fixed splits; fold must be None, got {self.fold}")
        if spec.needs_user_path and not self.user_path:
            raise ValueError(f"the {self.dataset} dataset needs user_path: {spec.user_path}")
        if self.train_size is not None and self.train_size < 1:
            raise ValueError(f"train_size must be positive, got {self.train_size}")
        if not 0.0 <= self.valid_fraction < 1.0:
            raise ValueError(f"valid_fraction must be in [0, 1) (0: no carve-out), got {self.valid_fraction}")
        if self.min_constant_count < 1:
            raise ValueError(f"min_constant_count must be at least 1, got {self.min_constant_count}")
