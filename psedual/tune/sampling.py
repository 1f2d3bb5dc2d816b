"""Which of a trial's steps sample an expression, and the sampled step a row predating that figure
is priced at (issue 59: the cost plan priced PseDual trials at the step of a teacher-forced epoch).

A PseDual step at ε = 1 encodes the gold expression only; at ε < 1 it also samples the predicted
expression (the rollout, `psedual/reexamine/module.py`), which costs up to 3× the solver's step on
a GPU. Scheduled fusion holds ε at 1 for `epsilon_hold` of the run, so a trial's steps are a mix,
known before it runs from its own schedule: `sampled_steps` counts them, and the plan prices
the rest at the row's `step_s` and these at its `sample_step_s` (`calibrate.measure` times both).
"""

from __future__ import annotations

from dataclasses import dataclass

from psedual.reexamine import schedules
from psedual.reexamine.schedules import Clock


def sampled_steps(config, steps_per_epoch: int) -> int:
    """Of the trial's `steps_per_epoch × epochs` optimiser steps (`config`: its TrainConfig), those
    that sample an expression (ε < 1); 0 for a base solver, teacher forcing and the no_expression
    control. ε never rises over a run (every schedule decays from epsilon0, after its hold), so the
    sampling steps are the run's tail, found by bisection, not by walking every step."""
    pc = config.psedual
    if pc is None or not schedules.samples(pc):
        return 0
    total = steps_per_epoch * config.epochs

    def samples_at(t: int) -> bool:
        return schedules.epsilon(pc, Clock(t, steps_per_epoch, config.epochs)) < 1.0

    lo, hi = 0, total  # the first sampling step is in [lo, hi]; hi = total: none samples
    while lo < hi:
        mid = (lo + hi) // 2
        if samples_at(mid):
            hi = mid
        else:
            lo = mid + 1
    return total - lo


@dataclass(frozen=True)
class MeasuredSample:
    """A sampled PseDual step timed by a GPU session's bench, beside calibration rows that predate
    `sample_step_s`: what the plan prices those rows' sampling steps at."""

    machine: str
    """The calibration machine whose rows it prices (`instances.gpu_machine`)."""
    commit: str
    """The session (commit) whose rows it prices: rows measured later carry their own figure."""
    solver: str
    """The solver it was timed with (PseDual-GCN, ε midway: every step samples)."""
    batch_size: int
    """The batch it was timed at: it prices rows of this batch only."""
    step_s: float
    """Seconds per sampled step (fp32)."""

    def __post_init__(self) -> None:
        if self.step_s <= 0 or self.batch_size < 1:
            raise ValueError(f"bad measured sample: {self}")


H100 = "NVIDIA H100 80GB HBM3 x1"
MEASURED_SOURCE = ("bench/train_speed.py on the H100 (docs/gpu/h100_report.md at 3d2b7a9: math23k, batch 64, "
                   "SolverConfig's sizes as the rows', fp32, PseDual-GCN at ε midway)")
"""Where `MEASURED` comes from, as the plan says it."""
MEASURED = {m.solver: m for m in (MeasuredSample(H100, "3d2b7a9", "gts", 64, 0.417),
                                   MeasuredSample(H100, "3d2b7a9", "dns", 64, 0.168),
                                   MeasuredSample(H100, "3d2b7a9", "graph2tree", 64, 0.318),
                                   MeasuredSample(H100, "3d2b7a9", "bert_tree", 64, 0.324),
                                   MeasuredSample(H100, "3d2b7a9", "re_deduction", 64, 0.256))}
"""Per solver, the sampled step the H100 session's bench measured (its `train speed` table's gcn fp32
s/batch). Its calibration rows (10-step epochs of trials of 10 epochs or more, ε held at 1 for the
first fifth of the run) timed teacher-forced steps only; a PseDual-GRU step is priced at the GCN's
(the same rollout; its expression encoder differs), which the plan says."""


def measured_sample(machine: str, commit: str, config) -> MeasuredSample | None:
    """The bench's sampled step for an old row of `config`'s shape on `machine` at `commit`, or None
    (another machine, session, solver or batch: the row is then not priced)."""
    found = MEASURED.get(config.solver)
    if found is None or (found.machine, found.commit, found.batch_size) != (machine, commit, config.batch_size):
        return None
    return found
