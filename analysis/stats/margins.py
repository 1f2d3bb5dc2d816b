"""Margins and targets, in points of accuracy: which equivalence margins a user could mean
(`check_margin`, one line naming the option, the value and the unit where one is refused), the
margin where none is given and why (`default_margin`), and whether a margin can test a claim's
target Δ at all (a margin at or above the target calls an effect of the target's size equivalent).
Read by the sequential design's verdicts, by a sweep file's `seeds` rule and by `psedual analyze
--margin`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from analysis.stats.equivalence import DEFAULT_MARGIN

UNIT = "points of accuracy"
"""the unit of every Δ, margin and target here: percentage points of accuracy (1 = one percent)"""
MARGIN_FLOOR = 0.1
"""the smallest margin accepted, in points: ±0.1 already needs over a thousand seeds at the sd of a
seed difference these studies see (about 1.3 points), and a margin below it is most often a percent
typed as a fraction (0.01 for 1)"""
MARGIN_CEILING = 10.0
"""the largest margin accepted, in points: a band of ±10 points is four times the largest Δ the paper
reports (Table 2's +2.5, ChatGPT with re-examination); above it "equivalent" would admit any accuracy
difference a method could make"""


def points(x: float) -> str:
    """A number of points as a verdict prints it: 0.45, 1, 12.5."""
    return f"{x:g}"


def check_margin(margin: float, target: float | None = None, target_from: str = "the target",
                 name: str = "margin") -> str | None:
    """Refuse, in one line naming the option (`name`), the value and the unit, a margin no user could
    mean (outside MARGIN_FLOOR..MARGIN_CEILING points); return the note a verdict carries where the
    margin cannot test the target (None where it can or there is no target)."""
    bounds = f"give one from {points(MARGIN_FLOOR)} to {points(MARGIN_CEILING)} {UNIT}"
    if isinstance(margin, bool) or not isinstance(margin, (int, float, np.integer, np.floating)) or not math.isfinite(margin):
        raise ValueError(f"{name} {margin!r} is not a finite number of {UNIT}; {bounds}")
    if margin <= 0:
        raise ValueError(f"{name} {margin:g} {UNIT} is refused: it is the half-width of the equivalence band "
                         f"±margin, so above 0; {bounds}")
    if margin > MARGIN_CEILING:
        raise ValueError(f"{name} {margin:g} {UNIT} is refused: a band of ±{margin:g} points admits almost any "
                         f"accuracy difference; {bounds}")
    if margin < MARGIN_FLOOR:
        meant = margin * 100
        hint = f" (did you mean {meant:g}, a percent typed as a fraction?)" if MARGIN_FLOOR <= meant <= MARGIN_CEILING \
            else ""
        raise ValueError(f"{name} {margin:g} {UNIT} is refused: no seed budget could show a difference that small; "
                         f"{bounds}{hint}")
    return said_against(margin, target, target_from)


def said_against(margin: float, target: float | None, target_from: str = "the target") -> str | None:
    """The note a verdict carries where the margin is at or above the target Δ's size ("±1 points of
    accuracy includes the paper's +0.9: this does not test it"); None without a target or below it."""
    if target is not None and math.isfinite(target) and margin >= abs(target):
        return f"±{points(margin)} {UNIT} includes {target_from} {target:+g}: this does not test it"
    return None


def default_margin(target: float | None) -> tuple[float, str]:
    """The margin where none is given, and why: half the target Δ where there is one (and half of it is
    a margin `check_margin` accepts), else the platform's default (analysis.stats.equivalence.DEFAULT_MARGIN)."""
    if target is None or not math.isfinite(target) or abs(target) / 2.0 < MARGIN_FLOOR:
        return DEFAULT_MARGIN, f"±{points(DEFAULT_MARGIN)} {UNIT}: the platform's default where no target Δ is stated"
    margin = abs(target) / 2.0
    return margin, (f"±{points(margin)} {UNIT}, half the target {target:+g}: a margin at or above the target "
                    f"would call an effect of the target's size equivalent, and at half of it an equivalence "
                    f"verdict refutes the target with as much room as a difference verdict refutes no effect")


def below_target(delta: float, sd: float | None, n: int, target: float) -> float | None:
    """The one-sided p that Δ is smaller than the target in size: a paired t-test of H0 Δ ≥ target
    against Δ < target (a negative target: H0 Δ ≤ target against Δ > target) over `n` paired units
    with mean `delta` and sd `sd` (scipy's t law: `scipy.stats.ttest_1samp(d, target, alternative=...)`
    on the differences themselves gives the same p). None without spread, n < 2 or a zero target."""
    if not target or not math.isfinite(target) or n < 2 or not sd or not math.isfinite(sd):
        return None
    t = (delta - target) / (sd / math.sqrt(n))
    return float(stats.t.cdf(t, n - 1) if target > 0 else stats.t.sf(t, n - 1))
