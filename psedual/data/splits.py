"""Train/valid/test views of a dataset: folds, the carved validation split, nested
training subsets, and the constant vocabulary decided from training data only.

Orders are seeded hashes of problem ids, so they do not depend on file order:
- validation carve: where a source has no validation split (MAWPS folds, SVAMP,
  jsonl without valid.jsonl), the `valid_fraction` of the training pool with the
  smallest sha256("valid/<id>") becomes validation. For MAWPS fold k the pool is
  the other four folds. `valid_fraction` 0 carves nothing: all of the pool trains
  and there is no validation set (the published GTS/Graph2Tree protocol).
- training subsets: the first `train_size` problems in order of
  sha256("<subset_seed>/<id>"), so a smaller subset is always inside a larger one.
- constants: a constant literal is in the vocabulary when at least
  `min_constant_count` training problems use it. A training problem that uses a
  constant outside the vocabulary is left out of training (counted); valid and
  test problems are never dropped (they count as unsolvable, see stats).
- with `drop_inconsistent`, training problems whose gold expression disagrees
  with their answer are left out (counted) before the vocabulary is decided,
  so a typo's constant cannot enter it; valid and test problems are kept.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field

from psedual.data.cache import Dataset
from psedual.data.config import DataConfig
from psedual.data.expr import literals
from psedual.data.record import Problem
from psedual.data.registry import get_spec


@dataclass(frozen=True)
class Splits:
    """The problems a run trains, validates and tests on, and its constant vocabulary."""

    train: tuple[Problem, ...]
    valid: tuple[Problem, ...]
    test: tuple[Problem, ...]
    constants: tuple[str, ...]
    """Constant literals a solver may produce, most used first."""
    left_out: dict[str, int] = field(default_factory=dict)
    """Training problems left out, by reason."""

    @property
    def train_disagreeing(self) -> int:
        """Training problems whose gold expression disagrees with their answer (trained on)."""
        return sum(not p.answer_agrees for p in self.train)


def constants_of(problem: Problem) -> set[str]:
    return literals(problem.prefix)


def _rank(problems, salt: str) -> list[Problem]:
    return sorted(problems, key=lambda p: hashlib.sha256(f"{salt}/{p.id}".encode()).digest())


def nested_subset(train: list[Problem], size: int, seed: int) -> list[Problem]:
    if size > len(train):
        raise ValueError(f"train_size {size} exceeds the {len(train)} training problems")
    return _rank(train, str(seed))[:size]


def constant_vocabulary(train: list[Problem], min_count: int) -> tuple[str, ...]:
    counts = Counter(c for p in train for c in constants_of(p))
    return tuple(c for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= min_count)


def split_dataset(dataset: Dataset, config: DataConfig) -> Splits:
    if dataset.name != config.dataset:
        raise ValueError(f"config is for {config.dataset!r} but the dataset is {dataset.name!r}")
    if get_spec(dataset.name).folds:
        test = [p for p in dataset.problems if p.fold == config.fold]
        pool = [p for p in dataset.problems if p.fold != config.fold]
        valid: list[Problem] = []
    else:
        by_split = {s: [p for p in dataset.problems if p.split == s] for s in ("train", "valid", "test")}
        pool, valid, test = by_split["train"], by_split["valid"], by_split["test"]
    if not valid and pool and config.valid_fraction > 0:
        ranked = _rank(pool, "valid")
        n_valid = max(1, round(config.valid_fraction * len(pool)))
        valid, pool = ranked[:n_valid], ranked[n_valid:]
    train = nested_subset(pool, config.train_size, config.subset_seed) if config.train_size else pool
    left_out: dict[str, int] = {}
    if config.drop_inconsistent:
        train = _leave_out(train, lambda p: p.answer_agrees, INCONSISTENT, left_out)
    constants = constant_vocabulary(train, config.min_constant_count)
    allowed = set(constants)
    kept = _leave_out(train, lambda p: constants_of(p) <= allowed, OUTSIDE_VOCABULARY, left_out)
    return Splits(_by_id(kept), _by_id(valid), _by_id(test), constants, left_out)


def _content(problem: Problem) -> tuple[str, tuple[str, ...]]:
    """A problem's normalised text (case-folded words, its numbers in place) and its gold."""
    words = list(problem.tokens)
    for k, pos in enumerate(problem.num_pos):
        words[pos] = problem.numbers[k]
    return " ".join(words).casefold(), problem.prefix


def leaked_ids(splits: Splits) -> dict[str, frozenset[str]]:
    """The ids of the valid and test problems whose normalised text and gold also occur in the
    training split (under another id: ids are unique): what a solver may have learnt by heart."""
    seen = {_content(p) for p in splits.train}
    return {name: frozenset(p.id for p in problems if _content(p) in seen)
            for name, problems in (("valid", splits.valid), ("test", splits.test))}


def leaked(splits: Splits) -> dict[str, int]:
    """How many valid and test problems `leaked_ids` finds."""
    return {name: len(ids) for name, ids in leaked_ids(splits).items()}


OUTSIDE_VOCABULARY = "uses a constant outside the vocabulary"
INCONSISTENT = "gold disagrees with the answer (drop_inconsistent)"


def _leave_out(problems: list[Problem], keep, reason: str, counts: dict[str, int]) -> list[Problem]:
    kept = [p for p in problems if keep(p)]
    if len(kept) < len(problems):
        counts[reason] = len(problems) - len(kept)
    return kept


def _by_id(problems: list[Problem]) -> tuple[Problem, ...]:
    return tuple(sorted(problems, key=lambda p: p.id))
