"""Seeds until decided, the decisions: what one look of a claim decides on the design's
boundaries (`analysis.stats.boundaries`): the difference test (better or worse), the equivalence
test at ±margin (both TOST halves at one look) and the below-target test, its `Look` (a row of the
looks table) with its verdict, and the looks a study runs until its first decision (`run_looks`).
Stopping early only removes chances to reject, so each test keeps its error rate under any
stopping rule that uses the data (`SequentialDesign.stop_on` says which decisions stop a study).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from analysis.stats.boundaries import SPENDING, SequentialDesign, boundaries
from analysis.stats.margins import UNIT, check_margin, default_margin, points

@dataclass(frozen=True)
class Decisions:
    """The decisions at one look, over one or many studies (arrays of the same shape)."""

    better: np.ndarray
    """the difference test's upper side rejected: Δ > 0"""
    worse: np.ndarray
    """its lower side rejected: Δ < 0"""
    equivalent: np.ndarray
    """both TOST halves rejected at this look: |Δ| < margin"""
    below_target: np.ndarray
    """the below-target test rejected: Δ < target (all False without a target)"""
    statistic: np.ndarray
    """t of Δ = 0"""
    stop: np.ndarray
    """a decision the design stops on was reached"""


def decisions(design: SequentialDesign, look_index: int, mean, sd, margin: float,
              target: float | None = None) -> Decisions:
    """The decisions at look `look_index` (0-based) for studies with these mean and sd of their
    paired differences at that look's seeds (arrays or scalars): the one decision path, used by
    `decide` and by the simulations."""
    b = boundaries(design)
    n = design.looks[look_index]
    mean, sd = np.asarray(mean, float), np.asarray(sd, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = sd / math.sqrt(n)
        spread = se > 0  # no spread: no t statistic, nothing decided
        t = np.where(spread, mean / se, np.nan)
        c, e = b.t_two_sided[look_index], b.t_one_sided[look_index]
        better = spread & (t >= c)
        worse = spread & (t <= -c)
        equivalent = spread & ((mean + margin) / se >= e) & ((mean - margin) / se <= -e)
        below = spread & ((mean - target) / se <= -e) if target is not None else np.zeros(mean.shape, bool)
    stop = np.zeros(mean.shape, bool)
    for name, reached in (("difference", better | worse), ("equivalence", equivalent), ("target", below)):
        if name in design.stop_on:
            stop |= reached
    return Decisions(better, worse, equivalent, below, t, stop)


@dataclass(frozen=True)
class Look:
    """One look of a claim: its figures, boundaries and verdict (a row of the looks table)."""

    look: int
    """1-based look number"""
    of: int
    """looks the design plans"""
    seeds: int
    """seed pairs at this look"""
    delta: float
    """mean paired difference, treatment − base, in points of accuracy"""
    ci: tuple[float, float]
    """repeated (1 − α) confidence interval of Δ: Δ ± boundary × se, valid across all looks together"""
    statistic: float
    """t of Δ = 0 (nan without spread)"""
    boundary: float
    """the difference test's |t| boundary at this look (calibrated to t)"""
    spent_alpha: float
    """the difference test's α spent by this look, both sides"""
    margin: float
    """the equivalence margin ±margin, in points of accuracy"""
    equivalence_ci: tuple[float, float]
    """repeated (1 − 2α one-sided) interval: inside ±margin means equivalent"""
    equivalence_boundary: float
    """each one-sided test's t boundary at this look"""
    spent_alpha_one_sided: float
    """a one-sided test's α spent by this look"""
    target: float | None
    """the target Δ in points of accuracy (None: no below-target test)"""
    better: bool
    """Δ > 0 shown"""
    worse: bool
    """Δ < 0 shown"""
    equivalent: bool
    """|Δ| < margin shown"""
    below_target: bool
    """Δ < target shown"""
    decided: bool
    """a decision the design stops on was reached: the study stops here"""
    verdict: str
    """e.g. "better at look 3 of 6 (16 seeds; O'Brien–Fleming spending, two-sided α 0.05)" """

    def row(self, claim: str) -> dict:
        """The look as a row of a looks table, under `claim`'s name (flat: the intervals in two columns)."""
        row = {"claim": claim, **dataclasses.asdict(self)}
        row["ci_low"], row["ci_high"] = row.pop("ci")
        row["equivalence_low"], row["equivalence_high"] = row.pop("equivalence_ci")
        return row

    def __post_init__(self) -> None:
        if not 1 <= self.look <= self.of:
            raise ValueError(f"look {self.look} outside 1..{self.of}")
        if self.better and self.worse:
            raise ValueError("a look cannot be both better and worse")


def _diffs(values) -> np.ndarray:
    """A flat array of paired differences from either the current differences or one array per look."""
    if isinstance(values, (list, tuple)) and values and all(np.ndim(v) == 1 for v in values):
        values = np.concatenate([np.asarray(v, float) for v in values])
    d = np.asarray(values, float)
    if d.ndim != 1:
        raise ValueError(f"paired differences must be one array (or one per look), got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError(f"paired differences must be finite {UNIT}; got {d[~np.isfinite(d)][:3].tolist()}")
    return d


def _verdict(design: SequentialDesign, look: int, seeds: int, d: Decisions, margin: float,
             target: float | None, target_from: str, note: str | None) -> str:
    of = len(design.looks)
    where = f"at look {look} of {of} ({seeds} seeds; {design.label})"
    one = f"one-sided α {design.alpha_one_sided:g}"
    found = []
    if bool(d.better[()]) or bool(d.worse[()]):
        found.append(("better " if bool(d.better[()]) else "worse ") + where)
    if bool(d.equivalent[()]):
        inside = f"equivalent within ±{points(margin)} {UNIT}"
        found.append(f"{inside} ({one} a half): real, and smaller than the margin" if found
                     else f"{inside} at look {look} of {of} ({seeds} seeds; "
                          f"{SPENDING[design.spending].label} spending, {one} a half)")
    if bool(d.below_target[()]):
        below = f"smaller than {target_from} {target:+g} {UNIT}"
        found.append(f"{below} ({one})" if found else
                     f"{below} at look {look} of {of} ({seeds} seeds; {SPENDING[design.spending].label} spending, {one})")
    if not found:
        if look < of:
            found.append(f"undecided at look {look} of {of} ({seeds} seeds): the next look at {design.looks[look]} seeds")
        else:
            found.append(f"undecided at {seeds} seeds (look {look} of {of}; {design.label})")
    if note:
        found.append(note)
    return "; ".join(found)


def decide(design: SequentialDesign, diffs, look_index: int, margin: float | None = None,
           target: float | None = None, target_from: str = "the target") -> Look:
    """The look `look_index` (0-based) of a claim: `diffs` are its paired differences (treatment −
    base, points of accuracy) so far, flat or one array per look, exactly the look's planned seed
    count (`design.with_seeds` analyses a look that fell short); `margin` in points (None: the
    `default_margin` for the target); `target` the Δ the claim is tested against (None: no
    below-target test), named `target_from` in the verdict (e.g. "the paper's")."""
    if not 0 <= look_index < len(design.looks):
        raise ValueError(f"look_index {look_index} outside 0..{len(design.looks) - 1} (the design has {len(design.looks)} looks)")
    if target is not None and not math.isfinite(target):
        raise ValueError(f"target {target!r} is not a finite number of {UNIT}")
    if margin is None:
        margin = default_margin(target)[0]
    note = check_margin(margin, target, target_from)
    d = _diffs(diffs)
    seeds = design.looks[look_index]
    if d.size != seeds:
        raise ValueError(f"look {look_index + 1} of the design is at {seeds} seed pairs, got {d.size}: "
                         f"analyse the actual count with design.with_seeds({look_index}, {d.size})")
    b = boundaries(design)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    found = decisions(design, look_index, mean, sd, margin, target)
    se = sd / math.sqrt(seeds)
    c, e = float(b.t_two_sided[look_index]), float(b.t_one_sided[look_index])
    return Look(
        look=look_index + 1, of=len(design.looks), seeds=seeds, delta=mean, ci=(mean - c * se, mean + c * se),
        statistic=float(found.statistic), boundary=c, spent_alpha=float(b.spent_two_sided[look_index]),
        margin=float(margin), equivalence_ci=(mean - e * se, mean + e * se), equivalence_boundary=e,
        spent_alpha_one_sided=float(b.spent_one_sided[look_index]), target=target,
        better=bool(found.better), worse=bool(found.worse), equivalent=bool(found.equivalent),
        below_target=bool(found.below_target), decided=bool(found.stop),
        verdict=_verdict(design, look_index + 1, seeds, found, margin, target, target_from, note))


def run_looks(design: SequentialDesign, diffs, margin: float | None = None, target: float | None = None,
              target_from: str = "the target") -> list[Look]:
    """Every look the differences reach, in seed order, up to and including the first decided one:
    the study as the design runs it (its last Look is its verdict so far)."""
    d = _diffs(diffs)
    out: list[Look] = []
    for k, n in enumerate(design.looks):
        if n > d.size:
            break
        out.append(decide(design, d[:n], k, margin, target, target_from))
        if out[-1].decided:
            break
    return out
