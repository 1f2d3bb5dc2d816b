"""A split's identity: one hash (`split_hash`) of its problems, in id order, in two uses.

`gold_hash`, of ids and gold expressions: the trainer records it for the training and test splits
of every run (the runs table's `data_train_hash` and `data_test_hash`), and analysis recomputes
the test one from a run's predictions (`id`, `gold`), so two arms are compared only when they
trained and tested on the same problems with the same golds, and a run's predictions are checked
against its test split. `splits_identity`, of answers and numbers as well: a run folder's
data.json, which its test checks the data on disk against. Plain Python: analysis imports it
without torch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

HASH_CHARS = 16
"""hex digits kept: 64 bits, ample to tell data versions apart"""


def split_hash(problems: Iterable[tuple[str, Sequence[str]]]) -> str:
    """The hash of (id, gold prefix) pairs, in id order (so file order does not matter)."""
    digest = hashlib.sha256()
    for pid, gold in sorted((str(i), " ".join(g)) for i, g in problems):
        digest.update(f"{pid}\x1f{gold}\x1e".encode())
    return digest.hexdigest()[:HASH_CHARS]


def gold_hash(problems: Iterable) -> str:
    """A split's hash as the result tables hold it (`data_train_hash`, `data_test_hash`): its
    problems' ids and gold expressions, which analysis can recompute from a run's predictions."""
    return split_hash((p.id, p.prefix) for p in problems)


def splits_identity(train: Iterable, test: Iterable) -> dict[str, str]:
    """What a run's test must find its data still to be (its folder's data.json): the training
    split (the vocabulary comes from it) and the test split, each hashed with its answers and
    numbers as well, which a changed source file may alter while its golds stay."""
    def of(problems: Iterable) -> str:
        return split_hash((p.id, (*p.prefix, "=", p.answer, "|", *p.numbers)) for p in problems)

    return {"train": of(train), "test": of(test)}
