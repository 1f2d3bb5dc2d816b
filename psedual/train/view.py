"""A run's view of its data: its splits, what was read and left out, the lists and vocabulary it
trains on, the data record its metrics carry, and the identity a later test must still find.

The trainer (`train`, `test_run`), the calibration and the infilling probe read a run's data
through these, so the checks (empty splits, the encoder's subword limit, changed data) hold
for all of them.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

from psedual.data.cache import load_dataset
from psedual.data.identity import gold_hash, splits_identity
from psedual.data.splits import Splits, split_dataset
from psedual.data.stats import summary
from psedual.results.folder import DATA, RunFolder
from psedual.results.records import DataRecord
from psedual.solvers import get_solver
from psedual.solvers.plm import subword_check
from psedual.solvers.vocab import Vocab
from psedual.train.config import TrainConfig


def view(config: TrainConfig) -> tuple[Splits, dict]:
    """The run's splits, and what was read and left out (`data.stats.summary`, with the splits'
    `identity`: a run folder's data.json) for its outputs."""
    dataset = load_dataset(config.data.dataset, config.data.data_root, config.data.user_path)
    splits = _fit_encoder(config, split_dataset(dataset, config.data))
    return splits, {**summary(dataset, splits), "identity": splits_identity(splits.train, splits.test)}


TOO_MANY_SUBWORDS = "more subwords than the pretrained encoder's positions"


def _fit_encoder(config: TrainConfig, splits: Splits) -> Splits:
    """`splits` without the training problems a subword-reading solver's encoder cannot hold
    (counted as left out, as a rare constant is); found at load time, not at their first batch,
    which stopped the run. Valid and test problems stay: they are scored wrong, undecoded."""
    if not get_solver(config.solver).reads_subwords:
        return splits
    too_long = subword_check(config.model)
    kept = tuple(p for p in splits.train if too_long(p) is None)
    if len(kept) == len(splits.train):
        return splits
    return replace(splits, train=kept, left_out={**splits.left_out, TOO_MANY_SUBWORDS: len(splits.train) - len(kept)})


def sets(config: TrainConfig, splits: Splits, info: dict):
    """The run's problem lists and vocabulary; an empty training or test split is an error saying
    why, before any time is spent (a run over 0 test problems would "complete" at 0.00%)."""
    skipped = "; ".join(f"{r}: {n:,}" for r, n in info["skipped_by_reason"].items())
    source = info["user_path"] or info["data_root"]
    read = (f"{info['kept']:,} problems kept from {source}, {info['skipped']:,} records skipped"
            + (f" ({skipped})" if skipped else ""))
    if not splits.train:
        left = "; ".join(f"{r}: {n:,}" for r, n in splits.left_out.items())
        why = (f"all {sum(splits.left_out.values()):,} were left out of training ({left}; a constant needs "
               f"--data.min_constant_count {config.data.min_constant_count} training problems using it)" if left
               else "its training split is empty")
        raise ValueError(f"{config.data.dataset}: no training problems: {why}; {read}")
    if not splits.test:
        raise ValueError(f"{config.data.dataset}: no test problems: its test split is empty, so no run on it could "
                         f"be scored; {read} (`psedual data stats` lists every skip)")
    train_set, valid_set, test_set = list(splits.train), list(splits.valid), list(splits.test)
    return train_set, valid_set, test_set, Vocab.build(train_set, splits.constants, config.min_word_count)


def data_record(info: dict, train_set, valid_set, test_set, unscored: list, infilled: int | None,
                 changed: bool = False) -> DataRecord:
    """The sizes, the data summary (the full one is the run's data.json) and the hashes of the
    training and test splits' ids and golds: what analysis pairs arms by."""
    return DataRecord(n_train=len(train_set), n_valid=len(valid_set), n_test=len(test_set), n_test_infilled=infilled,
                      data_key=info["cache_key"], data_train_hash=gold_hash(train_set),
                      data_test_hash=gold_hash(test_set),
                      n_test_unscored=sum(why is not None for why in unscored),
                      data_root=info["user_path"] or info["data_root"], data_kept=info["kept"],
                      data_skipped=info["skipped"], data_left_out=info["left_out"],
                      data_skipped_by_reason=json.dumps(info["skipped_by_reason"]),
                      data_left_out_by_reason=json.dumps(info["left_out_by_reason"]),
                      data_test_leaked=info.get("leaked", {}).get("test"), data_changed=changed)


def check_identity(folder: RunFolder, info: dict, allow_changed_data: bool) -> bool:
    """Refuse to test a run on data other than it was trained and tested on (`info`, the data now
    on disk, as `view` gives it), unless allowed (then say so, and return True). A run folder from
    before `data.json` held the identity is not checked, and says so; a `data.json` that cannot be
    read, or whose identity is not what a run writes, is refused as changed data would be (else
    damaging it would skip the check)."""
    path = folder.file(DATA)
    if not folder.holds_data_record():
        print(f"note: {path} is missing: the data this run used are not checked against the data now on disk",
              file=sys.stderr, flush=True)
        return False
    try:
        recorded = folder.recorded_identity()
    except ValueError as err:
        what = f"{path}: cannot tell which data this run used ({err})"
        if not allow_changed_data:
            raise ValueError(f"{what}: refused; restore the run's data.json, or pass --allow_changed_data to test on "
                             "the data now on disk") from None
        print(f"warning: {what}; testing on the data now on disk (--allow_changed_data)", file=sys.stderr, flush=True)
        return True
    if recorded is None:
        print(f"note: {path} holds no data identity (a run from before it was recorded): the data are not checked",
              file=sys.stderr, flush=True)
        return False
    now = info["identity"]
    changed = [k for k in ("train", "test") if recorded.get(k) != now[k]]
    if not changed:
        return False
    what = (f"{folder.path}: the {' and '.join(changed)} data of {info['dataset']} (from "
            f"{info['user_path'] or info['data_root']}) differ from what this run used "
            f"({', '.join(f'{k} {recorded.get(k)} now {now[k]}' for k in changed)})")
    if not allow_changed_data:
        raise ValueError(f"{what}: refused, as its metrics would be for other problems; restore the data, or pass "
                         "--allow_changed_data to test on the data now on disk")
    print(f"warning: {what}; testing on the data now on disk (--allow_changed_data)", file=sys.stderr, flush=True)
    return True
