"""Cost of the reexamining module: PseDual training time ÷ the solver's own, per solver.

Times N training steps after warm-up (published sizes, batch 64, 2 threads) for the
solver alone and with PseDual. `scheduled` is timed after ε has left 1, so every
step samples an expression (the worst case); `teacher_forcing` encodes the gold
expression only. Validation decoding, the rest of an epoch, is the same with and
without PseDual, so whole-epoch ratios are lower than these step ratios.

Usage: python bench/psedual_overhead.py [--batches N] [--solvers gts dns] [--dataset mawps]
"""

from __future__ import annotations

import argparse
import time

import torch

from psedual.data.cache import load_dataset
from psedual.data.config import DataConfig
from psedual.data.splits import split_dataset
from psedual.reexamine import PseDualConfig, Reexaminer
from psedual.reexamine.schedules import Clock
from psedual.solvers import SOLVERS
from psedual.solvers.batch import collate
from psedual.solvers.config import SolverConfig
from psedual.solvers.vocab import Vocab
from psedual.train.trainer import StepLoss, train_step

# scheduled: the `step` rule at steps 1000+ with no hold (ε ≈ 0.99), so every step samples an expression
VARIANTS = {"base": None,
            "gcn scheduled": PseDualConfig(expression_encoder="gcn", epsilon_schedule="step", epsilon_hold=0.0),
            "gru scheduled": PseDualConfig(expression_encoder="gru", epsilon_schedule="step", epsilon_hold=0.0),
            "gcn teacher_forcing": PseDualConfig(expression_encoder="gcn", fusion="teacher_forcing")}


def seconds_per_step(solver: str, psedual: PseDualConfig | None, batches, vocab, warmup: int) -> float:
    torch.manual_seed(0)
    model = SOLVERS[solver](vocab, SolverConfig())
    reexaminer = Reexaminer(vocab, SolverConfig(), psedual) if psedual is not None else None
    step = StepLoss(model, reexaminer, 1.0)
    opt = torch.optim.Adam(step.parameters(), 1e-3, weight_decay=1e-5)
    elapsed = 0.0
    for i, batch in enumerate(batches):
        start = time.perf_counter()
        train_step(step, opt, batch, Clock(1000 + i, 10_000, 1))  # ε ≈ 0.99
        if i >= warmup:
            elapsed += time.perf_counter() - start
    return elapsed / (len(batches) - warmup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=10, help="timed batches after warm-up")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=list(SOLVERS))
    parser.add_argument("--dataset", default="mawps")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    splits = split_dataset(load_dataset(args.dataset), DataConfig.first_fold(args.dataset))
    vocab = Vocab.build(splits.train, splits.constants, min_word_count=5 if args.dataset == "math23k" else 1)
    train = list(splits.train)
    n = args.warmup + args.batches
    batches = [collate(train[i * args.batch_size:(i + 1) * args.batch_size], vocab) for i in range(n)]
    print(f"torch {torch.__version__}, {args.threads} threads, {args.dataset}, batch {args.batch_size}, "
          f"{args.batches} timed steps")
    for solver in args.solvers:
        base = None
        for name, psedual in VARIANTS.items():
            t = seconds_per_step(solver, psedual, batches, vocab, args.warmup)
            base = base or t
            print(f"{solver:<10} {name:<20} {t:6.3f} s/step  {t / base:5.2f}x", flush=True)


if __name__ == "__main__":
    main()
