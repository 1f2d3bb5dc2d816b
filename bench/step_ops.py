"""Kernel-launching ops per training step, base against each PseDual variant and tree rollout: what
a GPU's step costs where it is launch-bound, counted on a CPU.

The H200 session (docs/gpu/h200_report.md, 50ac138) found a small solver's step bound by launching
kernels, not by the GPU's arithmetic nor its host reads: 8 trials sharing the GPU each ran nearly as
fast as one alone. So the step's time on a GPU follows the number of ops it launches, and that number
can be counted here, without a GPU, to rank changes before a device minute is spent. On the same
batches (GTS, Math23K, batch 64, 8 batches) this counts PseDual-GCN at 2.77x base's ops with the
masked rollout and 2.33x with the rows one, where the H200 timed 2.30x and 2.00x: the same order, the
count a little above the time (an op of the decoder's arithmetic weighs more than a view's bookkeeping).

Counted: every aten op dispatched in the step (forward, backward, optimiser), less the ops that only
make a view of a tensor and launch no kernel (`VIEWS`); on the CPU path, so the tree solvers' rollout is
named (`--rollouts masked rows`), as bench/train_speed.py does.

Usage: python bench/step_ops.py [--solvers gts graph2tree] [--variants base gcn] [--rollouts masked rows]
           [--dataset math23k] [--batches 8] [--batch-size 64] [--top 8]
"""

from __future__ import annotations

import argparse
import collections

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from psedual.data.cache import load_dataset
from psedual.data.config import DataConfig
from psedual.data.splits import split_dataset
from psedual.solvers.batch import collate
from psedual.solvers.config import SolverConfig
from psedual.solvers.vocab import Vocab
from train_speed import arm, step

VIEWS = frozenset({"t", "slice", "select", "detach", "expand", "view", "unsqueeze", "squeeze", "as_strided",
                   "permute", "transpose", "_unsafe_view", "alias", "unbind", "split", "split_with_sizes",
                   "_reshape_alias", "lift_fresh", "narrow"})
"""Ops that return a view of their input: metadata on the host, no kernel on a GPU."""


class OpCount(TorchDispatchMode):
    """The aten ops dispatched while it is on, by name, views apart."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))

    @property
    def kernels(self) -> collections.Counter[str]:
        return collections.Counter({k: v for k, v in self.ops.items() if k not in VIEWS})


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--solvers", nargs="+", default=["gts"])
    p.add_argument("--variants", nargs="+", default=["base", "gcn"])
    p.add_argument("--rollouts", nargs="+", default=["masked", "rows"], choices=["masked", "rows"])
    p.add_argument("--dataset", default="math23k")
    p.add_argument("--batches", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--top", type=int, default=8, help="the ops a variant adds most to base's, listed")
    return p


def count(solver: str, variants: list[str], rollouts: list[str], splits, vocab, batches: int, batch_size: int,
          config: SolverConfig | None = None) -> dict[tuple[str, str], collections.Counter[str]]:
    """Each (variant, rollout)'s kernel ops summed over the same `batches` batches, stepping in turn
    (`config`: the solvers' sizes, the published ones by default)."""
    device = torch.device("cpu")
    arms = [arm(solver, v, r, vocab, device, config or SolverConfig()) for v in variants
            for r in (["auto"] if v == "base" else rollouts)]
    train = list(splits.train)
    totals = {(a.variant, a.rollout): collections.Counter() for a in arms}
    for i in range(batches):
        problems = train[i * batch_size:(i + 1) * batch_size]
        for a in arms:
            batch = collate(problems, vocab)
            counter = OpCount()
            with counter:
                step(a, batch, device, "fp32")
            totals[a.variant, a.rollout] += counter.kernels
    return totals


def main() -> None:
    args = parser().parse_args()
    torch.set_num_threads(1)
    splits = split_dataset(load_dataset(args.dataset), DataConfig.first_fold(args.dataset))
    vocab = Vocab.build(splits.train, splits.constants, min_word_count=5 if args.dataset == "math23k" else 1)
    print(f"kernel ops per training step (views apart), {args.dataset}, batch {args.batch_size}, "
          f"{args.batches} batches, the variants stepping in turn on the same batches")
    for solver in args.solvers:
        totals = count(solver, args.variants, args.rollouts, splits, vocab, args.batches, args.batch_size)
        base = totals.get(("base", "auto"))
        for (variant, rollout), ops in totals.items():
            n = sum(ops.values()) / args.batches
            ratio = f"  {n / (sum(base.values()) / args.batches):.2f}x base" if base and variant != "base" else ""
            added = ""
            if base and variant != "base":
                more = (ops - base).most_common(args.top)
                added = "  most added: " + ", ".join(f"{k} +{v / args.batches:.0f}" for k, v in more)
            used = "" if variant == "base" else f" ({rollout} rollout)"
            print(f"{solver:<12} {variant:<5}{used:<17} {n:9.0f} ops a step{ratio}{added}", flush=True)


if __name__ == "__main__":
    main()
