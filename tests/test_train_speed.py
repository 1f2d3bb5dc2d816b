"""bench/train_speed.py: the side-by-side arms, and the sampled expressions' length counted off the clock."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).parent.parent


def _load(monkeypatch):
    spec = importlib.util.spec_from_file_location("train_speed", ROOT / "bench" / "train_speed.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "train_speed", module)  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_pseduals_sampled_tokens_are_counted_over_the_timed_batches_only(monkeypatch):
    from psedual.data.cache import load_dataset
    from psedual.data.config import DataConfig
    from psedual.data.splits import split_dataset
    from psedual.solvers.batch import gold_tokens
    from psedual.solvers.config import SolverConfig
    from psedual.solvers.vocab import Vocab

    bench = _load(monkeypatch)
    splits = split_dataset(load_dataset("mawps"), DataConfig.first_fold("mawps"))
    vocab = Vocab.build(splits.train, splits.constants, min_word_count=1)
    config = SolverConfig(embedding_size=16, hidden_size=32)
    device = torch.device("cpu")
    arms = [bench.arm("gts", variant, "auto", vocab, device, config) for variant in ("base", "gcn")]
    seen = []  # every expression batch the PseDual arm's rollout wrote, warm-up included
    arms[1].step.model.rollout = bench.keeping(seen, arms[1].step.model.rollout)
    bench.time_side_by_side(arms, splits, vocab, device, "fp32", batches=2, warmup=1, batch_size=4)
    base, pseudo = arms
    assert len(seen) == 3 and pseudo.kept == [] and base.sampled == 0  # one a step; each batch's cleared
    assert pseudo.sampled == sum(int((r.tokens >= 0).sum()) for r in seen[1:])  # the warm-up batch's not counted
    assert pseudo.gold == base.gold == gold_tokens(list(splits.train)[4:12])
    assert f"sampled expressions {pseudo.sampled / pseudo.gold:.2f}x the gold's tokens" in \
        bench.spread(pseudo, base, device)


def test_a_step_keeps_its_own_sampled_expressions_alone(monkeypatch):
    """Any caller of `step` (bench/step_ops.py's too) holds one step's rollouts at most, not every step's."""
    from psedual.data.cache import load_dataset
    from psedual.data.config import DataConfig
    from psedual.data.splits import split_dataset
    from psedual.solvers.batch import collate
    from psedual.solvers.config import SolverConfig
    from psedual.solvers.vocab import Vocab

    bench = _load(monkeypatch)
    splits = split_dataset(load_dataset("mawps"), DataConfig.first_fold("mawps"))
    vocab = Vocab.build(splits.train, splits.constants, min_word_count=1)
    device = torch.device("cpu")
    pseudo = bench.arm("gts", "gcn", "auto", vocab, device, SolverConfig(embedding_size=16, hidden_size=32))
    for start in (0, 4):
        bench.step(pseudo, collate(list(splits.train)[start:start + 4], vocab), device, "fp32")
        assert len(pseudo.kept) == 1
