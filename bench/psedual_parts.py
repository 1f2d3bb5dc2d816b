"""Where PseDual's training step spends its time beyond the solver's, beside the base step (issue 59).

A base solver and the same solver with PseDual step in turn on the same batches (side by side, so a
load that comes and goes falls on both alike; ε halfway, so every PseDual step samples an
expression). Printed per batch and as a share of the base step: the PseDual step's forward split
into the encoder, the teacher-forced loss and the reexamining module (its sampled rollout, the
expression encoder over gold and sample, the infiller), its backward and its optimiser step, each
beside the base step's. The backward is not split by part (autograd runs the graph as one); the
difference between the two backward passes is PseDual's, most of it the rollout's.

Below that table, why the step stays where it is (issue 59 asks for at most 1.25x on a CPU):
- tokens: the sampled expressions' tokens a batch (those the PseDual step's rollouts wrote) against
  the gold expressions' (what the teacher-forced pass decodes), and their ratio. A sample may run
  to `max_length_factor` times the batch's longest gold, and a solver early in training writes
  longer expressions than the gold (1.1-1.9x on Math23K's first batches: 1.93x over 8 batches of
  64), so the rollout decodes more tokens than teacher forcing does.
- the decoder alone, on the PseDual arm's model and the same batches (each after that batch's
  steps): the sampled rollout (as the step draws it) and the teacher-forced loss, each forward and
  backward from the encoder's outputs made leaves, so the backward stops there and the seconds are
  the decoder's own; per batch and per token (sampled, gold), and the ratio of the two per token.
  The encoder's backward runs once in a step whichever passes feed it, so these are what each
  pass adds to a step.
- the floor: the base step plus the sampled tokens at the teacher-forced cost per gold token, plus
  what PseDual adds beyond the rollout that the timers see (the expression encoder's and the
  infiller's forward, its optimiser's extra), over the base step, beside the measured ratio. It is
  the ratio a rollout as cheap per token as teacher forcing would give (a little under, as the
  expression encoder's and infiller's backward are not in it): when the rollout already costs about
  that per token, going below the floor needs fewer sampled tokens, or cheaper decoder cells, which
  make both arms' steps cheaper.

`--clock cpu` times by the process's CPU seconds instead of the wall clock: on a shared machine a
load from other processes moves it least (with one thread, the step's own work).

Usage: python bench/psedual_parts.py [--solver gts] [--variant gcn] [--dataset math23k] [--batches 7]
           [--rounds 2] [--batch-size 32] [--threads 1] [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import collections
import time
from dataclasses import fields

import torch

from psedual.data.cache import load_dataset
from psedual.data.config import DataConfig
from psedual.data.splits import split_dataset
from psedual.reexamine import PseDualConfig, Reexaminer
from psedual.reexamine.config import VARIANTS
from psedual.reexamine.module import GumbelNoise
from psedual.reexamine.schedules import Clock, tau
from psedual.solvers import SOLVERS
from psedual.solvers.batch import collate, gold_tokens
from psedual.solvers.config import SolverConfig
from psedual.solvers.vocab import Vocab
from psedual.train.trainer import StepLoss
from train_speed import written

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


def counting(counts: dict, fn):
    """`fn` (a solver's rollout), the tokens of the expressions it returns added to `counts["sampled"]`."""
    def counted(*args, **kwargs):
        out = fn(*args, **kwargs)
        counts["sampled"] += written(out)
        return out
    return counted


def leaves(enc):
    """`enc` (a solver's encoding dataclass) with every floating tensor a new leaf that asks for its
    gradient: a backward from a decoder pass over it stops there, at the encoder's outputs. Its other
    fields (the roots a teacher-forced pass keeps, `gts.Roots`) are left at their defaults."""
    tensors = {f.name: getattr(enc, f.name) for f in fields(enc) if isinstance(getattr(enc, f.name), torch.Tensor)}
    return type(enc)(**{name: t.detach().requires_grad_(t.is_floating_point()) for name, t in tensors.items()})


def decoder_alone(model, reexaminer: Reexaminer, batch, now=time.perf_counter) -> dict[str, float]:
    """The decoder's two passes over `batch`, each forward and backward alone from the encoder's
    outputs as leaves (encoded untimed, without gradient): the sampled rollout, drawn as
    `Reexaminer.forward` draws it at `MIDWAY`, its backward through fixed random weights on its rows
    (what the infiller's gradient would be does not change what the backward runs); and the
    teacher-forced loss. Their seconds ("rollout", "teacher-forced") and tokens ("sampled", "gold").

    Calls the class's methods: the bench's timers wrap the instance's, and these passes are not
    part of a step."""
    solver = type(model)
    with torch.no_grad():
        enc = solver.encode(model, batch)
    V = len(model.vocab.output_tokens)
    max_length = reexaminer.config.max_length_factor * batch.targets.shape[1] + 1
    noise = GumbelNoise([p.id for p in batch.problems], max_length, V, enc.problem.device)
    pick = reexaminer._pick(tau(reexaminer.config, MIDWAY), noise)
    sampled_from, gold_from = leaves(enc), leaves(enc)
    start = now()
    rollout = solver.rollout(model, batch, sampled_from, pick, max_length)
    forward = now() - start
    weights = torch.randn_like(rollout.choices)  # drawn off the clock
    start = now()
    (rollout.choices * weights).sum().backward()
    rollout_s = forward + now() - start
    start = now()
    solver.loss(model, batch, gold_from).backward()
    return {"rollout": rollout_s, "teacher-forced": now() - start,
            "sampled": written(rollout), "gold": gold_tokens(batch.problems)}


def step_seconds(clock: dict, prefix: str, n: int) -> float:
    """An arm's mean step (forward, backward, optimiser) over `n` steps."""
    return sum(clock[f"{prefix} {p}"] for p in ("forward", "backward", "optimiser")) / n


def floor_lines(clock: dict, alone: dict, tokens: dict, variant: str, n: int) -> list[str]:
    """The report's lines below the table: tokens a batch, the decoder's passes alone, and the
    floor they imply beside the measured ratio; `clock` and `tokens` summed over the `n` steps of
    each arm, `alone` over the `n` batches' `decoder_alone`."""
    base, pseudo = step_seconds(clock, "base", n), step_seconds(clock, variant, n)
    sampled, gold = tokens["sampled"] / n, tokens["gold"] / n
    per_token = {"rollout": alone["rollout"] / alone["sampled"],
                 "teacher-forced": alone["teacher-forced"] / alone["gold"]}
    rest = (clock["    expression encoder (gold and sample)"] + clock["    infiller"]
            + clock[f"{variant} optimiser"] - clock["base optimiser"]) / n
    floor = (base + sampled * per_token["teacher-forced"] + rest) / base
    lines = [f"tokens a batch: sampled {sampled:.1f} (the PseDual step's rollouts), gold {gold:.1f}, "
             f"ratio {sampled / gold:.2f}",
             "decoder alone (PseDual's model, forward + backward from the encoder's outputs as leaves):"]
    for name, counted in (("rollout", "sampled"), ("teacher-forced", "gold")):
        lines.append(f"  {name:<16} {1e3 * alone[name] / n:7.1f} ms/batch  {1e3 * per_token[name]:6.3f} ms/token "
                     f"({alone[counted] / n:.1f} {counted} tokens a batch)")
    ratio = per_token["rollout"] / per_token["teacher-forced"]
    lines += [f"  per token, rollout / teacher-forced: {ratio:.2f}",
              f"floor: (base step + sampled tokens x teacher-forced s/token + expression encoder, infiller and "
              f"extra optimiser {1e3 * rest:.0f} ms) / base step = {floor:.2f}x, measured {pseudo / base:.2f}x",
              f"The rollout costs {ratio:.2f}x teacher forcing per token; one as cheap per token would still leave "
              f"the step at {floor:.2f}x the base step: below that needs fewer sampled tokens, or cheaper decoder "
              f"cells, which make the base step cheaper too."]
    return lines


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
    tokens: dict[str, int] = collections.defaultdict(int)
    model.rollout = counting(tokens, model.rollout)  # outside the timer: counting is not the rollout's work
    alone: dict[str, float] = collections.defaultdict(float)
    for _ in range(args.rounds):
        for batch in batches[1:]:
            for variant, (step_fn, opt) in arms.items():
                step(step_fn, opt, batch, clock, variant, now)
            tokens["gold"] += gold_tokens(batch.problems)
            # beside the steps, so a load that comes and goes falls on these passes as on them
            for key, value in decoder_alone(model, reexaminer, batch, now).items():
                alone[key] += value
    n = args.rounds * args.batches
    base, pseudo_s = step_seconds(clock, "base", n), step_seconds(clock, args.variant, n)
    print(f"{args.solver} on {args.dataset}, batch {args.batch_size}, {args.threads} thread(s), {args.clock} clock, "
          f"{n} steps an arm: "
          f"base {base:.3f} s/step, PseDual-{args.variant.upper()} {pseudo_s:.3f} s/step, ratio {pseudo_s / base:.2f}x")
    order = ["base forward", "base backward", "base optimiser", f"{args.variant} forward", "  encoder",
             "  teacher-forced loss", "  reexamining module", "    sampled rollout",
             "    expression encoder (gold and sample)", "    infiller", f"{args.variant} backward",
             f"{args.variant} optimiser"]
    for name in order:
        print(f"  {name:<44} {clock[name] / n:7.3f} s/step  {100 * clock[name] / n / base:6.1f}% of the base step")
    print("\n".join(floor_lines(clock, alone, tokens, args.variant, n)))


if __name__ == "__main__":
    main()
