"""bench/step_ops.py: kernel-launching ops per training step, the CPU's proxy for a launch-bound GPU step."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).parent.parent


def _load():
    sys.path.insert(0, str(ROOT / "bench"))  # it imports train_speed beside it, as `python bench/...` would
    try:
        spec = importlib.util.spec_from_file_location("step_ops", ROOT / "bench" / "step_ops.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_views_are_counted_apart_from_the_ops_that_launch_a_kernel():
    bench = _load()
    a = torch.ones(3, 2)
    counter = bench.OpCount()
    with counter:
        (a.t() @ a).sum().unsqueeze(0)
    assert counter.ops == {"t": 1, "mm": 1, "sum": 1, "unsqueeze": 1}
    assert counter.kernels == {"mm": 1, "sum": 1}


def test_a_pseduals_step_launches_more_than_its_base_step_with_either_rollout():
    from psedual.data.cache import load_dataset
    from psedual.data.config import DataConfig
    from psedual.data.splits import split_dataset
    from psedual.solvers.config import SolverConfig
    from psedual.solvers.vocab import Vocab

    bench = _load()
    threads = torch.get_num_threads()
    splits = split_dataset(load_dataset("mawps"), DataConfig.first_fold("mawps"))
    vocab = Vocab.build(splits.train, splits.constants, min_word_count=1)
    try:
        totals = bench.count("gts", ["base", "gcn"], ["masked", "rows"], splits, vocab, batches=1, batch_size=4,
                             config=SolverConfig(embedding_size=16, hidden_size=32))
    finally:
        torch.set_num_threads(threads)
    base = sum(totals["base", "auto"].values())
    assert set(totals) == {("base", "auto"), ("gcn", "masked"), ("gcn", "rows")}
    assert base > 100 and not set(totals["base", "auto"]) & bench.VIEWS
    # the sampled rollout and the infiller's pass come on top of the teacher-forced step
    assert sum(totals["gcn", "masked"].values()) > 1.5 * base and sum(totals["gcn", "rows"].values()) > 1.5 * base
