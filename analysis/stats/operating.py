"""Seeds until decided, by simulation: many studies run through a design at once, every look
through `analysis.stats.decisions.decisions` (the path `decide` takes): what each reached and the
seeds it ran (`simulate`, for bench/sequential_sim.py), and a design's operating characteristics
at one true Δ and sd (`operating`, what `--plan` prints beside the fixed design).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.stats.boundaries import SequentialDesign
from analysis.stats.decisions import decisions
from analysis.stats.margins import UNIT, check_margin, default_margin

@dataclass(frozen=True)
class Outcomes:
    """Many studies run by a design (arrays over the studies): what each reached before it stopped."""

    seeds: np.ndarray
    """seed pairs each study ran: those of its first decided look, else the last look's"""
    look: np.ndarray
    """1-based look it stopped at"""
    better: np.ndarray
    """reached "better" at some look up to its stop"""
    worse: np.ndarray
    """reached "worse" likewise"""
    equivalent: np.ndarray
    """reached "equivalent" likewise"""
    below_target: np.ndarray
    """reached "smaller than the target" likewise"""
    decided: np.ndarray
    """stopped on a decision before running out of looks (or at the last one)"""


def simulate(design: SequentialDesign, diffs: np.ndarray, margin: float | None = None,
             target: float | None = None) -> Outcomes:
    """Run the design on many studies at once: `diffs` (studies × at least the last look's seeds)
    are each study's paired differences in seed order; every look goes through `decisions`, the
    path `decide` takes. For simulations (bench/sequential_sim.py) and the expected seeds of a plan."""
    x = np.asarray(diffs, float)
    if x.ndim != 2 or x.shape[1] < design.looks[-1]:
        raise ValueError(f"simulate needs studies × at least {design.looks[-1]} seeds, got shape {x.shape}")
    if margin is None:
        margin = default_margin(target)[0]
    check_margin(margin, target)
    studies = x.shape[0]
    total, squares = np.cumsum(x, axis=1), np.cumsum(x**2, axis=1)
    running = np.ones(studies, bool)
    seeds = np.full(studies, design.looks[-1])
    look = np.full(studies, len(design.looks))
    ever = {name: np.zeros(studies, bool) for name in ("better", "worse", "equivalent", "below_target", "decided")}
    for k, n in enumerate(design.looks):
        mean = total[:, n - 1] / n
        sd = np.sqrt(np.maximum(squares[:, n - 1] - n * mean**2, 0.0) / (n - 1))
        found = decisions(design, k, mean, sd, margin, target)
        for name, reached in (("better", found.better), ("worse", found.worse), ("equivalent", found.equivalent),
                              ("below_target", found.below_target), ("decided", found.stop)):
            ever[name] |= running & reached
        stopping = running & found.stop
        seeds[stopping], look[stopping] = n, k + 1
        running &= ~found.stop
    return Outcomes(seeds=seeds, look=look, **ever)


@dataclass(frozen=True)
class Operating:
    """A design's operating characteristics at one true Δ and sd, by simulation (for a plan)."""

    delta: float
    """the true Δ simulated, in points of accuracy"""
    sd: float
    """the sd of a seed difference simulated, in points of accuracy"""
    studies: int
    """simulated studies"""
    better: float
    """P(better reached)"""
    worse: float
    """P(worse reached)"""
    equivalent: float
    """P(equivalent reached)"""
    below_target: float
    """P(smaller than the target reached)"""
    undecided: float
    """P(no stopping decision by the last look)"""
    expected_seeds: float
    """mean seed pairs run"""
    expected_seeds_se: float
    """its Monte Carlo standard error"""
    max_seeds: int
    """the most seed pairs the design runs (its last look)"""


def operating(design: SequentialDesign, delta: float, sd: float, margin: float | None = None,
              target: float | None = None, studies: int = 20_000, seed: int = 0) -> Operating:
    """Simulate `studies` studies with normal seed differences (mean `delta`, sd `sd`) through the
    design: the probabilities of each decision and the expected seeds (what a plan prints beside
    the fixed design; multiply by trial-hours for its cost)."""
    if not (math.isfinite(sd) and sd > 0):
        raise ValueError(f"sd {sd!r} must be a positive number of {UNIT}")
    x = np.random.default_rng(seed).normal(delta, sd, (studies, design.looks[-1]))
    out = simulate(design, x, margin, target)
    return Operating(
        delta=float(delta), sd=float(sd), studies=studies, better=float(out.better.mean()),
        worse=float(out.worse.mean()), equivalent=float(out.equivalent.mean()),
        below_target=float(out.below_target.mean()), undecided=float(1.0 - out.decided.mean()),
        expected_seeds=float(out.seeds.mean()), expected_seeds_se=float(out.seeds.std(ddof=1) / math.sqrt(studies)),
        max_seeds=design.looks[-1])
