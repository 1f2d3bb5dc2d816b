"""Where a solver's training step spends its time, on CPU (torch.profiler plus wall-clock phases).

For N batches after warm-up (published GTS sizes, batch 64, Adam), prints the wall time per batch of
each phase of the step (collate, encoder forward, decoder forward and loss, backward, optimiser), the
encoder alone forward + backward (its share of the backward, which the profiler cannot separate),
and the operators with the most self CPU time from `torch.profiler` over the same batches.

Usage: python bench/profile_step.py [--solver gts] [--dataset math23k] [--batches 6] [--threads 2] [--top 15]
"""

from __future__ import annotations

import argparse
import random
import time

import torch
from torch.profiler import ProfilerActivity, profile

from psedual.data.cache import load_dataset
from psedual.data.config import DataConfig
from psedual.data.splits import split_dataset
from psedual.solvers import SOLVERS
from psedual.solvers.batch import collate
from psedual.solvers.config import SolverConfig
from psedual.solvers.vocab import Vocab
from psedual.train.trainer import StepLoss, train_step

PHASES = ("collate", "encode", "decode+loss", "backward", "optimiser")


def timed_step(model, opt, problems, vocab, clock: dict[str, float]) -> None:
    """`train_step` of the solver alone, its pieces written out so that a clock sits between them."""
    marks = [time.perf_counter()]
    batch = collate(problems, vocab)
    marks.append(time.perf_counter())
    enc = model.encode(batch)
    marks.append(time.perf_counter())
    loss = model.loss(batch, enc)
    marks.append(time.perf_counter())
    opt.zero_grad()
    loss.backward()
    marks.append(time.perf_counter())
    opt.step()
    marks.append(time.perf_counter())
    for name, a, b in zip(PHASES, marks, marks[1:]):
        clock[name] += b - a


def encoder_alone(model, chunks, vocab) -> float:
    """Seconds per batch of the encoder's forward and backward (a sum of its outputs as the loss)."""
    start = time.perf_counter()
    for problems in chunks:
        outputs, problem = model.encoder(collate(problems, vocab))
        (outputs.sum() + problem.sum()).backward()
    return (time.perf_counter() - start) / len(chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--solver", default="gts", choices=list(SOLVERS))
    parser.add_argument("--dataset", default="math23k")
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    splits = split_dataset(load_dataset(args.dataset),
                           DataConfig.first_fold(args.dataset))
    vocab = Vocab.build(splits.train, splits.constants, min_word_count=5 if args.dataset == "math23k" else 1)
    torch.manual_seed(0)
    model = SOLVERS[args.solver](vocab, SolverConfig())
    model.train()
    opt = torch.optim.Adam(model.parameters(), 1e-3, weight_decay=1e-5)
    train = list(splits.train)
    random.Random(0).shuffle(train)
    chunks = [train[i * 64:(i + 1) * 64] for i in range(args.warmup + 2 * args.batches)]
    whole = StepLoss(model, None, 0.0)
    for problems in chunks[: args.warmup]:
        train_step(whole, opt, collate(problems, vocab))
    timed = chunks[args.warmup: args.warmup + args.batches]
    clock = dict.fromkeys(PHASES, 0.0)
    for problems in timed:
        timed_step(model, opt, problems, vocab, clock)
    total = sum(clock.values()) / len(timed)
    print(f"{args.solver} on {args.dataset}, batch 64, {args.threads} threads, {len(timed)} batches: "
          f"{total:.3f} s/batch ({64 / total:.1f} problems/s)")
    for name in PHASES:
        print(f"  {name:<12} {clock[name] / len(timed):7.3f} s  {100 * clock[name] / len(timed) / total:5.1f}%")
    if hasattr(model, "encoder"):
        alone = encoder_alone(model, timed, vocab)
        print(f"  encoder alone, forward + backward: {alone:.3f} s/batch ({100 * alone / total:.0f}% of the step)")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for problems in chunks[args.warmup + args.batches:]:
            train_step(whole, opt, collate(problems, vocab))
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top, max_name_column_width=50))


if __name__ == "__main__":
    main()
