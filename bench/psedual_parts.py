"""Where PseDual's training step spends its time beyond the solver's, beside the base step (issue 59).

A base solver and the same solver with PseDual step in turn on the same batches (side by side, so a
load that comes and goes falls on both alike; ε halfway, so every PseDual step samples an
expression). Printed per batch and as a share of the base step: the PseDual step's forward split
into the encoder, the teacher-forced loss and the reexamining module (its sampled rollout, the
expression encoder over gold and sample, the infiller), its backward and its optimiser step, each
beside the base step's. The backward is not split by part (autograd runs the graph as one); the
difference between the two backward passes is PseDual's, most of it the rollout's.

`--clock cpu` times by the process's CPU seconds instead of the wall clock: on a shared machine a
load from other processes moves it least (with one thread, the step's own work).

Usage: python bench/psedual_parts.py [--solver gts] [--variant gcn] [--dataset math23k] [--batches 7]
           [--rounds 2] [--batch-size 32] [--threads 1] [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import collections
import time

import torch

from psedual.data.cache import load_dataset
from psedual.data.config import DataConfig
from psedual.data.splits import split_dataset
from psedual.reexamine import PseDualConfig, Reexaminer
from psedual.reexamine.config import VARIANTS
from psedual.reexamine.schedules import Clock
from psedual.solvers import SOLVERS
from psedual.solvers.batch import collate
from psedual.solvers.config import SolverConfig
from psedual.solvers.vocab import Vocab
from psedual.train.trainer import StepLoss

MIDWAY = Clock(1, 2, 1)
"""ε halfway: every PseDual step samples an expression (the worst case)."""

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
"""`--clock`: what a phase's seconds are read from."""


def timing(clock: dict, name: str, fn, now=time.perf_counter):
    """`fn`, its seconds (read from `now`) added to `clock[name]` at every call."""
    def timed(*args, **kwargs):
        start = now()
        out = fn(*args, **kwargs)
        clock[name] += now() - start
        return out
    return timed


def step(step_fn: StepLoss, opt, batch, clock: dict, prefix: str, now=time.perf_counter) -> None:
    """One training step (forward, backward, optimiser: as `trainer.train_step`, at fp32), its
    phases timed into `clock` under `prefix`."""
    start = now()
    loss, reexamined = step_fn(batch, MIDWAY)
    if reexamined is not None:
        loss = loss + step_fn.alpha * reexamined.loss
    marks = [start, now()]
    opt.zero_grad()
    loss.backward()
    marks.append(now())
    opt.step()
    marks.append(now())
    for name, a, b in zip(("forward", "backward", "optimiser"), marks, marks[1:]):
        clock[f"{prefix} {name}"] += b - a


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--solver", default="gts", choices=list(SOLVERS))
    parser.add_argument("--variant", default="gcn", choices=[v for v in VARIANTS if v != "base"])
    parser.add_argument("--dataset", default="math23k")
    parser.add_argument("--batches", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=2, help="passes over the timed batches")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", default="wall", choices=list(CLOCKS))
    args = parser.parse_args()
    now = CLOCKS[args.clock]
    torch.set_num_threads(args.threads)
    splits = split_dataset(load_dataset(args.dataset), DataConfig.first_fold(args.dataset))
    vocab = Vocab.build(splits.train, splits.constants, min_word_count=5 if args.dataset == "math23k" else 1)
    config = SolverConfig()
    arms = {}
    for variant in ("base", args.variant):
        torch.manual_seed(0)
        model = SOLVERS[args.solver](vocab, config)
        reexaminer = None if variant == "base" else Reexaminer(vocab, config, PseDualConfig(expression_encoder=variant))
        step_fn = StepLoss(model, reexaminer, 1.0)
        arms[variant] = (step_fn, torch.optim.Adam(step_fn.parameters(), 1e-3))
    train = list(splits.train)
    batches = [collate(train[i * args.batch_size:(i + 1) * args.batch_size], vocab) for i in range(args.batches + 1)]
    clock: dict[str, float] = collections.defaultdict(float)
    pseudo = arms[args.variant][0]
    model, reexaminer = pseudo.model, pseudo.reexaminer
    for variant, (step_fn, opt) in arms.items():  # warm-up, untimed
        step(step_fn, opt, batches[0], collections.defaultdict(float), variant)
    model.encode = timing(clock, "  encoder", model.encode, now)
    model.loss = timing(clock, "  teacher-forced loss", model.loss, now)
    reexaminer.forward = timing(clock, "  reexamining module", reexaminer.forward, now)
    model.rollout = timing(clock, "    sampled rollout", model.rollout, now)
    reexaminer.keys = timing(clock, "    expression encoder (gold and sample)", reexaminer.keys, now)
    reexaminer._infill = timing(clock, "    infiller", reexaminer._infill, now)
    for _ in range(args.rounds):
        for batch in batches[1:]:
            for variant, (step_fn, opt) in arms.items():
                step(step_fn, opt, batch, clock, variant, now)
    n = args.rounds * args.batches
    base = sum(clock[f"base {p}"] for p in ("forward", "backward", "optimiser")) / n
    pseudo_s = sum(clock[f"{args.variant} {p}"] for p in ("forward", "backward", "optimiser")) / n
    print(f"{args.solver} on {args.dataset}, batch {args.batch_size}, {args.threads} thread(s), {args.clock} clock, "
          f"{n} steps an arm: "
          f"base {base:.3f} s/step, PseDual-{args.variant.upper()} {pseudo_s:.3f} s/step, ratio {pseudo_s / base:.2f}x")
    order = ["base forward", "base backward", "base optimiser", f"{args.variant} forward", "  encoder",
             "  teacher-forced loss", "  reexamining module", "    sampled rollout",
             "    expression encoder (gold and sample)", "    infiller", f"{args.variant} backward",
             f"{args.variant} optimiser"]
    for name in order:
        print(f"  {name:<44} {clock[name] / n:7.3f} s/step  {100 * clock[name] / n / base:6.1f}% of the base step")


if __name__ == "__main__":
    main()
