"""Does a claim show the arms alike? Equivalence within a stated margin, beside the difference test.

A difference test that finds nothing says nothing about the data by itself: "not significant" is
as true of 3 noisy seeds as of 30 tight ones. Each claim therefore also carries
- the **TOST** at ±`margin` points (two one-sided paired t-tests, statsmodels' `ttost_paired`):
  a small p says |Δ| < margin;
- the **posterior probability** that |Δ| < margin: the Student-t posterior of the mean paired
  difference (flat prior on the mean and on log sd: t with n − 1 degrees of freedom, centred on the
  mean Δ, scaled by its standard error; scipy's `stats.t`);
- the **units that would decide it**: the fewest paired units at which either the difference test
  (detecting the observed Δ, statsmodels' `TTestPower`) or the TOST (showing |Δ| < margin if the
  true Δ is the observed one, `tost_power`) reaches 80% power, whichever needs fewer.
The unit is the seed over several seeds (the per-seed Δ) and the test example over one seed (the
per-example difference, +100, 0 or −100 points: the large-sample form, as `analysis.stats.power`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats
from statsmodels.stats.weightstats import ttost_paired

from analysis.stats import power
from analysis.stats.stats import no_spread

DEFAULT_MARGIN = 1.0
"""the equivalence margin in points where none is given (a sweep's `compare: margin`, `--margin`)"""
POWER = power.POWER
MAX_N = power.MAX_N
"""units beyond which no count is given"""


@dataclass(frozen=True)
class Equivalence:
    """A claim's equivalence figures over its paired units."""

    margin: float
    """±margin in points: the arms count as alike when |Δ| < margin."""
    p_tost: float | None
    """TOST p (the larger of the two one-sided p's); None without spread or with one unit."""
    p_within: float | None
    """Posterior probability that |Δ| < margin; None without spread or with one unit."""

    def __post_init__(self) -> None:
        if not self.margin > 0:
            raise ValueError(f"an equivalence margin must be > 0 points, got {self.margin}")
        for name in ("p_tost", "p_within"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {value}")


def _spread(d: np.ndarray, scores: np.ndarray) -> bool:
    """Whether the differences have a spread a t statistic can divide by: not float noise
    (`stats.no_spread`)."""
    return d.size >= 2 and not no_spread(d, scores)


def equivalence(treatment, base, margin: float = DEFAULT_MARGIN) -> Equivalence:
    """TOST and posterior of `treatment` − `base` (paired units, in points) within ±margin."""
    t, b = np.asarray(treatment, float), np.asarray(base, float)
    if t.shape != b.shape or t.ndim != 1:
        raise ValueError(f"equivalence needs paired units: shapes {t.shape} and {b.shape}")
    d = t - b
    if not _spread(d, np.concatenate([t, b])):  # no spread: the t statistic is 0/0 or ±inf, no probability to state
        return Equivalence(margin, None, None)
    p = float(ttost_paired(t, b, -margin, margin)[0])
    posterior = stats.t(d.size - 1, loc=float(d.mean()), scale=float(stats.sem(d)))
    within = float(posterior.cdf(margin) - posterior.cdf(-margin))
    return Equivalence(margin, min(max(p, 0.0), 1.0), min(max(within, 0.0), 1.0))


def tost_power(delta: float, sd: float, n: int, margin: float, alpha: float) -> float:
    """Exact power of the paired TOST at ±margin over n units when the true Δ is `delta` and the
    per-unit sd `sd`: statsmodels and scipy have no TOST power for t, so it is integrated over the
    sample sd's distribution (scipy's `chi2.expect`): given the sample sd s, both one-sided tests
    reject when the mean lies within ±(margin − t·s/√n), t the one-sided critical value, a normal
    probability. 0 where |Δ| ≥ margin or n < 2 (checked against simulated `ttost_paired` in the tests)."""
    if n < 2 or abs(delta) >= margin or not sd > 0:
        return 0.0
    nu, se = n - 1, sd / math.sqrt(n)
    critical = float(stats.t.ppf(1.0 - alpha, nu))
    # beyond this chi-square value the rejection interval is empty: the sample sd is too large
    top = nu * (margin * math.sqrt(n) / (critical * sd)) ** 2

    def inside(u: float) -> float:
        half = margin - critical * sd * math.sqrt(u / nu) / math.sqrt(n)
        return max(0.0, float(stats.norm.cdf((half - delta) / se) - stats.norm.cdf((-half - delta) / se)))

    return min(1.0, max(0.0, float(stats.chi2(nu).expect(inside, lb=0.0, ub=top))))


def tost_n(delta: float, sd: float, margin: float, alpha: float, goal: float = POWER) -> int | None:
    """The fewest units (≥ 2) at which the TOST reaches power `goal` (`tost_power`); None where it never
    does (|Δ| ≥ margin, no spread) or beyond MAX_N. Power rises with n, so a doubling search then a
    bisection over integers finds it."""
    if abs(delta) >= margin or not sd > 0 or not math.isfinite(sd):
        return None
    high = 2
    while tost_power(delta, sd, high, margin, alpha) < goal:
        if high > MAX_N:
            return None
        high *= 2
    low = max(2, high // 2)
    while low < high:
        mid = (low + high) // 2
        if tost_power(delta, sd, mid, margin, alpha) >= goal:
            high = mid
        else:
            low = mid + 1
    return high


@dataclass(frozen=True)
class Decision:
    """How many paired units would decide a claim, and by which test."""

    n: int | None
    """Units in all at which the quicker test reaches 80% power; None where neither does within MAX_N."""
    by: str | None
    """`difference` or `equivalence`: the test that needs fewer units; None with `n`."""

    def __post_init__(self) -> None:
        if (self.n is None) != (self.by is None) or self.by not in (None, "difference", "equivalence"):
            raise ValueError(f"bad decision {self}")


def to_decide(delta: float, sd: float | None, margin: float, alpha: float) -> Decision:
    """The units that would decide the claim either way: the fewer of the difference test's
    (`analysis.stats.power.n_needed` for the observed Δ) and the TOST's (`tost_n`), both at the observed
    Δ and spread and at level `alpha`."""
    if sd is None or not sd > 0:
        return Decision(None, None)
    # the difference test's count is analysis.stats.power's, with the observed Δ as its target
    difference = power.n_needed(delta, sd, alpha) if delta else None
    options = [(n, by) for n, by in ((difference, "difference"), (tost_n(delta, sd, margin, alpha), "equivalence"))
               if n is not None and n <= MAX_N]
    if not options:
        return Decision(None, None)
    n, by = min(options)
    return Decision(n, by)
