"""A split's identity: one hash of its problems' ids and gold expressions.

The trainer records it for the training and test splits of every run (the runs table's
`data_train_hash` and `data_test_hash`), and analysis recomputes the test one from a run's
predictions (`id`, `gold`), so two arms are compared only when they trained and tested on the
same problems with the same golds, and a run's predictions are checked against its test split.
Plain Python: analysis imports it without torch.
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
