"""Training and evaluation speed of the solvers, alone and with PseDual, on a device and precision.

For each solver × variant (base, PseDual-GCN) × precision: training problems/s over N
batches after warm-up, the variants stepping in turn on the same batches (side by side: a load
that comes and goes falls on each alike), through the trainer's own step (batch copied to the device,
autocast, the PseDual loss with an expression sampled at every step: ε ≈ 0.5, the worst
case), evaluation problems/s at beam 5 (fp32, as the trainer validates), and the epoch
time these imply: train set ÷ training rate + validation set ÷ evaluation rate. Published
GTS sizes (embedding 128, hidden 512), batch 64. Evaluation runs in fp32 whatever the training
precision, so a bf16 row reuses its fp32 row's rate. `--plm DIR --plm-layers 12 --plm-hidden 768`
times the pretrained-encoder solvers on a random encoder of BERT-base's size (a machine without
the weights: a GPU session).

The tree solvers' sampled expression (PseDual rows) is written by the rollout the device runs
(masked on a GPU, by rows on a CPU: psedual/solvers/tree_rollout.py); `--rollouts masked rows`
times both, one row each, side by side, and `compiled` the masked one with each step through
torch.compile (a row of its own; its first warm-up batch, compiling, is printed apart). Each PseDual
row's ratio to its solver's base row (same precision) is printed after the rows, and beside it the
same ratio batch by batch (its median and quartiles: a burst of load on a shared machine moves a few
batches, not the median) and, on a CPU,
from the process's CPU seconds (what a load from other processes moves least; with `--threads 1`
the step's own work), and how long the sampled expressions were beside the gold's (tokens over the
timed batches). A model trained only through the warm-up samples long expressions (up to the length
limit), which its rollout pays token by token: `--warmup 48` times the same step a fifth of an
epoch later, when its samples are nearer the gold's length. Under the default ε schedule no
expression is sampled at all in a run's first 20% of epochs (ε = 1).

Usage: python bench/train_speed.py [--device cpu|cuda] [--precisions fp32 bf16] [--solvers gts]
           [--variants base gcn] [--dataset math23k] [--batches N] [--threads 2]
           [--plm minilm|DIR] [--plm-layers N] [--plm-hidden N] [--rollouts auto|masked|rows|compiled ...]
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import time
from dataclasses import dataclass, field

import numpy as np

import torch

from psedual.data.cache import load_dataset
from psedual.data.config import DataConfig
from psedual.data.splits import split_dataset
from psedual.reexamine import PseDualConfig, Reexaminer
from psedual.reexamine.config import VARIANTS
from psedual.reexamine.schedules import Clock
from psedual.solvers import SOLVERS
from psedual.solvers.batch import collate, gold_tokens
from psedual.solvers.config import SolverConfig
from psedual.solvers.rollout import COMPILED_DEVICES, MASKED_DEVICES, Rollout
from psedual.solvers.vocab import Vocab
from psedual.train.device import resolve
from psedual.train.test import evaluate
from psedual.train.trainer import StepLoss, train_step


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class Arm:
    """One row: a solver's variant (and its tree rollout), its model and optimiser, its seconds."""

    variant: str
    rollout: str
    """`auto`, `masked`, `rows` or `compiled` (the PseDual rows' tree rollout; base rows: auto)."""
    step: StepLoss
    opt: torch.optim.Optimizer
    seconds: float = 0.0
    """Training seconds over the timed batches."""
    batch_seconds: list[float] = field(default_factory=list)
    """Each timed batch's training seconds."""
    batch_cpu: list[float] = field(default_factory=list)
    """Each timed batch's process CPU seconds (every thread's)."""
    first: float = 0.0
    """The first warm-up batch's seconds (with `compiled`, most of it compiling)."""
    kept: list[Rollout] = field(default_factory=list)
    """The current batch's sampled expressions, kept by the rollout's wrapper and counted (`written`)
    after the batch's clock stops: a count reads the device."""
    sampled: int = 0
    """Tokens of the expressions sampled over the timed batches (PseDual rows)."""
    gold: int = 0
    """Tokens of the timed batches' gold expressions."""


def arm(solver: str, variant: str, rollout: str, vocab, device: torch.device, config: SolverConfig) -> Arm:
    torch.manual_seed(0)
    model = SOLVERS[solver](vocab, config)
    reexaminer = None if variant == "base" else Reexaminer(vocab, config, PseDualConfig(expression_encoder=variant))
    step = StepLoss(model, reexaminer, 1.0).to(device)
    a = Arm(variant, rollout, step, torch.optim.Adam(step.parameters(), 1e-3, weight_decay=1e-5))
    model.rollout = keeping(a.kept, model.rollout)
    return a


def keeping(kept: list[Rollout], rollout):
    """`rollout` (a solver's), each expression batch it returns appended to `kept` (no read: its ids
    stay where they are until the batch's clock has stopped)."""
    def keep(*args, **kwargs):
        out = rollout(*args, **kwargs)
        kept.append(out)
        return out
    return keep


def written(rollout: Rollout) -> int:
    """Tokens of a rollout's expressions (its ids, -1 past each end)."""
    return int((rollout.tokens >= 0).sum())


def step(a: Arm, batch, device: torch.device, precision: str) -> None:
    """One training step of arm `a` through the trainer's own step, with its tree rollout, at ε halfway
    (PseDual samples an expression). `a.kept` holds this step's expressions alone: an earlier step's,
    whoever called it, are let go first."""
    a.kept.clear()
    with rollout_on(device, a.rollout):
        train_step(a.step, a.opt, batch, Clock(1, 2, 1), device=device, precision=precision)


def time_side_by_side(arms: list[Arm], splits, vocab, device: torch.device, precision: str, batches: int,
                      warmup: int, batch_size: int) -> None:
    """Each arm's training seconds over `batches` batches after `warmup`, the arms stepping in turn on
    the same batch: a load that comes and goes (a shared machine) falls on every arm alike, so the
    ratios between arms hold where each arm's own rate moves."""
    train = list(splits.train)
    need = (warmup + batches) * batch_size
    train = (train * (need // len(train) + 1))[:need]
    for i in range(warmup + batches):
        problems = train[i * batch_size:(i + 1) * batch_size]
        for a in arms:
            _sync(device)
            start, cpu = time.perf_counter(), time.process_time()
            batch = collate(problems, vocab).to(device)  # collate and the copy count: the trainer pays them too
            step(a, batch, device, precision)
            _sync(device)
            if i == 0:
                a.first = time.perf_counter() - start
            if i >= warmup:
                a.seconds += time.perf_counter() - start
                a.batch_seconds.append(time.perf_counter() - start)
                a.batch_cpu.append(time.process_time() - cpu)
                a.sampled += sum(map(written, a.kept))
                a.gold += gold_tokens(problems)
            a.kept.clear()


def eval_rate(a: Arm, splits, vocab, device: torch.device, batch_size: int, eval_problems: int) -> float:
    """Beam-5 evaluation problems/s of the arm's solver (fp32, as the trainer validates)."""
    a.step.eval()
    valid = list(splits.valid)[:eval_problems]
    _sync(device)
    start = time.perf_counter()
    evaluate(a.step.model, valid, vocab, 5, batch_size, device)
    _sync(device)
    return len(valid) / (time.perf_counter() - start)


def line(solver: str, a: Arm, precision: str, splits, device: torch.device, batches: int, batch_size: int,
         rate: float) -> str:
    """The row's line: training and evaluation rates, the epoch they imply, peak memory."""
    train_rate = batches * batch_size / a.seconds
    epoch = len(splits.train) / train_rate + len(splits.valid) / rate
    memory = (f"peak GPU memory {torch.cuda.max_memory_allocated(device) / 2**20:,.0f} MiB" if device.type == "cuda"
              else f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")
    return (f"{solver:<12} {a.variant:<4} {precision:<4} train {train_rate:7.1f} problems/s "
            f"({a.seconds / batches:6.3f} s/batch)  eval beam 5 {rate:6.1f} problems/s  epoch ≈ {epoch:6.1f} s "
            f"({len(splits.train)} train + {len(splits.valid)} valid)  {memory}")


def spread(a: Arm, base: Arm, device: torch.device) -> str:
    """The step ratio batch by batch (median and quartiles), on a CPU from CPU seconds too, and the
    length of `a`'s sampled expressions beside the gold's."""
    def quartiles(ratios: np.ndarray) -> str:
        q1, median, q3 = np.percentile(ratios, [25, 50, 75])
        return f"median {median:.2f}x, quartiles {q1:.2f}-{q3:.2f}x"

    wall = np.array(a.batch_seconds) / np.array(base.batch_seconds)
    text = f"  (per batch: {quartiles(wall)}"
    if device.type == "cpu":
        cpu = np.array(a.batch_cpu) / np.array(base.batch_cpu)
        text += f"; CPU seconds: {sum(a.batch_cpu) / sum(base.batch_cpu):.2f}x, per batch {quartiles(cpu)}"
    if a.gold:
        text += f"; sampled expressions {a.sampled / a.gold:.2f}x the gold's tokens"
    return text + ")"

def compiled_graphs() -> int:
    """Graphs torch.compile has built in this process: past its recompile limit (8 for one function) it
    leaves the step to run eager with a warning alone, and a `compiled` row would time the eager step."""
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"]


@contextlib.contextmanager
def rollout_on(device: torch.device, rollout: str):
    """The tree rollout `rollout` (masked, rows, compiled: the masked one's steps through torch.compile,
    or auto: the device's own) while timing a row."""
    before = set(MASKED_DEVICES), set(COMPILED_DEVICES)
    if rollout in ("masked", "compiled"):
        MASKED_DEVICES.add(device.type)
    elif rollout == "rows":
        MASKED_DEVICES.discard(device.type)
    if rollout == "compiled":
        COMPILED_DEVICES.add(device.type)
    elif rollout != "auto":
        COMPILED_DEVICES.discard(device.type)
    try:
        masked = device.type in MASKED_DEVICES
        yield ("compiled" if device.type in COMPILED_DEVICES else "masked") if masked else "rows"
    finally:
        for live, was in zip((MASKED_DEVICES, COMPILED_DEVICES), before):
            live.clear()
            live.update(was)


def parser() -> argparse.ArgumentParser:
    """The command line (bench/gpu_session.py's test checks its device calls against it)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda (default auto)")
    parser.add_argument("--precisions", nargs="+", default=None, choices=("fp32", "bf16"),
                        help="default: fp32 and bf16 on CUDA, fp32 on CPU")
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=list(SOLVERS))
    parser.add_argument("--variants", nargs="+", default=["base", "gcn"], choices=VARIANTS)
    parser.add_argument("--dataset", default="math23k")
    parser.add_argument("--batches", type=int, default=10, help="timed batches after warm-up")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--eval-problems", type=int, default=256, help="validation problems decoded for the rate")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--plm", default="minilm", help="the pretrained-encoder solvers' encoder folder")
    parser.add_argument("--plm-layers", type=int, help="resize that encoder, randomly initialised")
    parser.add_argument("--plm-hidden", type=int, help="resize that encoder, randomly initialised")
    parser.add_argument("--rollouts", nargs="+", default=["auto"], choices=("auto", "masked", "rows", "compiled"),
                        help="the PseDual rows' tree rollout: the device's own (auto), or each named, a row each "
                             "(compiled: the masked one's steps through torch.compile; the first warm-up batch, "
                             "which compiles, is printed)")
    return parser


def main() -> None:
    args = parser().parse_args()
    config = SolverConfig(plm=args.plm, plm_layers=args.plm_layers, plm_hidden=args.plm_hidden)
    torch.set_num_threads(args.threads)
    device = resolve(args.device)
    precisions = args.precisions or (["fp32", "bf16"] if device.type == "cuda" else ["fp32"])
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {args.threads} threads"
    splits = split_dataset(load_dataset(args.dataset),
                           DataConfig.first_fold(args.dataset))
    vocab = Vocab.build(splits.train, splits.constants, min_word_count=5 if args.dataset == "math23k" else 1)
    print(f"torch {torch.__version__}, {name}, {args.dataset}, batch {args.batch_size}, {args.batches} timed batches")
    seconds = {}  # (solver, variant, rollout, precision) -> training s/batch
    timed = {}  # the same key -> the arm (its per-batch seconds)
    for solver in args.solvers:
        for precision in precisions:
            arms = [arm(solver, variant, rollout, vocab, device, config) for variant in args.variants
                    for rollout in (["auto"] if variant == "base" else args.rollouts)]
            time_side_by_side(arms, splits, vocab, device, precision, args.batches, args.warmup, args.batch_size)
            rates = {}  # evaluation is fp32 at every training precision and the same whatever the rollout
            for a in arms:
                if (a.variant, precision) not in rates and (a.variant, "fp32") not in rates:
                    rates[a.variant, precision] = eval_rate(a, splits, vocab, device, args.batch_size,
                                                            args.eval_problems)
                rate = rates.get((a.variant, precision), rates.get((a.variant, "fp32")))
                with rollout_on(device, a.rollout) as running:
                    used = "" if a.variant == "base" else running
                seconds[solver, a.variant, used, precision] = a.seconds / args.batches
                timed[solver, a.variant, used, precision] = a
                print(line(solver, a, precision, splits, device, args.batches, args.batch_size, rate)
                      + (f"  ({used} rollout)" if used else "")
                      + (f"  first batch {a.first:.1f} s (compiling), {compiled_graphs()} graph(s) compiled in this "
                         "process" if used == "compiled" else ""), flush=True)
    for (solver, variant, used, precision), s in seconds.items():
        base = seconds.get((solver, "base", "", precision))
        if variant != "base" and base:
            print(f"step ratio {solver} {variant} ({used} rollout) / base, {precision}: {s / base:.2f}x"
                  + spread(timed[solver, variant, used, precision], timed[solver, "base", "", precision], device))


if __name__ == "__main__":
    main()
