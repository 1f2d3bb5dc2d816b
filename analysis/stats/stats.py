"""The statistics behind a claim, each a thin, checked call into scipy.

Two kinds of pairing:
- per example: two runs answered the same test examples; the unit is the example
  (exact McNemar, paired bootstrap CI of the accuracy difference, paired permutation test);
- per seed: each arm was trained with the same seeds; the unit is the seed
  (mean ± sd, Student-t 95% CI of the mean difference, paired t-test, Wilcoxon signed-rank).
Accuracies and differences are in percentage points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

MIN_SEEDS = 6  # with 5 paired seeds the smallest two-sided exact sign/Wilcoxon p is 2/32 = 0.0625
MIN_TEST_EXAMPLES = 30
"""no verdict below this many test examples: an exact test over a handful of problems can reach
p < 0.05 (6 of 6 discordant: p 0.031) and a bootstrap over them has few distinct resamples"""
NO_SPREAD = 1e-9
"""Paired differences (points) whose range is within this share of the scores' magnitude (at least
1 point) have no spread: a score is 100 × a share, rounded, so Δ +1.00 on every seed can read
1.000000000000007 on one and 0.9999999999999858 on another, and a t-test over that noise gave p 4e-74."""
MIN_EXAMPLES_CI = 10  # a percentile bootstrap over fewer examples has too few distinct resamples to mean much
CONFIDENCE = 0.95
BATCH_VALUES = 2**22
"""The most values scipy's resampling tests hold at once per array (resamples × examples; 32 MiB of
float64): `batch` bounds their memory, not their resamples (10,000 × 100,000 examples at once was
14.9 GiB)."""


def _batch(n: int) -> int:
    """Resamples per scipy call for `n` examples, within BATCH_VALUES."""
    return max(1, BATCH_VALUES // max(n, 1))


def _as_bool(x, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected one flag per example, got shape {arr.shape}")
    if arr.dtype != bool:
        if not np.isin(arr, (0, 1)).all():
            raise ValueError(f"{name}: per-example correctness must be 0/1 or bool")
        arr = arr.astype(bool)
    return arr


@dataclass(frozen=True)
class PairedResult:
    """Two runs on the same n test examples (a = base, b = treatment)."""

    n: int
    """examples compared"""
    acc_a: float
    """accuracy of a, in %"""
    acc_b: float
    """accuracy of b, in %"""
    only_a: int
    """discordant: a right, b wrong"""
    only_b: int
    """discordant: b right, a wrong"""
    delta: float
    """acc_b - acc_a, in points"""
    ci_low: float | None
    """paired bootstrap (percentile) 95% CI of delta; None below MIN_EXAMPLES_CI examples"""
    ci_high: float | None
    p_mcnemar: float
    """exact McNemar: two-sided binomial test of only_b among only_a + only_b"""
    p_permutation: float
    """paired permutation test of delta (swapping a/b within examples)"""
    n_resamples: int
    """bootstrap and permutation resamples"""
    rng_seed: int
    """seed of both resampling RNGs"""


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Exact two-sided McNemar p from the discordant counts; 1.0 when there are none."""
    if only_a < 0 or only_b < 0:
        raise ValueError(f"discordant counts must be >= 0, got {only_a}, {only_b}")
    if only_a + only_b == 0:
        return 1.0
    return float(stats.binomtest(only_b, only_a + only_b, 0.5).pvalue)


def _mean_diff(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def paired(a, b, n_resamples: int = 10_000, seed: int = 0) -> PairedResult:
    """Compare per-example correctness `b` against `a` (same examples, same order)."""
    a, b = _as_bool(a, "a"), _as_bool(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"paired test needs the same examples: {a.size} vs {b.size}")
    if a.size == 0:
        raise ValueError("paired test needs at least one example")
    n = a.size
    only_a, only_b = int((a & ~b).sum()), int((b & ~a).sum())
    delta = 100.0 * (only_b - only_a) / n
    xb, xa = b.astype(float), a.astype(float)
    ci: tuple[float | None, float | None] = (None, None)
    if only_a + only_b == 0:
        # every resample of identical pairs gives delta 0, and every relabelling too;
        # scipy would warn about degenerate data, so state the known answer
        ci, p_perm = (delta, delta), 1.0
    elif only_a + only_b == 1:
        # one discordant pair: its two labellings give ±Δ, equally extreme (scipy refuses one pair)
        p_perm = 1.0
    else:
        # a swap within a concordant pair changes nothing, so the test runs over the discordant pairs
        # alone: the same permutation distribution of Δ (scaled by their share), in a fraction of the work
        # (1 seed × 100,000 examples: 5 s, not 330 s)
        disc = a != b
        perm = stats.permutation_test((xb[disc], xa[disc]), _mean_diff, permutation_type="samples", vectorized=True,
                                      n_resamples=n_resamples, alternative="two-sided",
                                      batch=_batch(int(disc.sum())), rng=np.random.default_rng(seed))
        p_perm = float(perm.pvalue)
    # scipy refuses a bootstrap of one example and a handful gives a degenerate interval:
    # below MIN_EXAMPLES_CI none is stated (the exact tests still hold)
    if only_a + only_b and n >= MIN_EXAMPLES_CI:
        boot = stats.bootstrap((xb, xa), _mean_diff, paired=True, vectorized=True, n_resamples=n_resamples,
                               confidence_level=CONFIDENCE, method="percentile", batch=_batch(n),
                               rng=np.random.default_rng(seed))
        ci = (100.0 * boot.confidence_interval.low, 100.0 * boot.confidence_interval.high)
    return PairedResult(n=n, acc_a=float(100.0 * xa.mean()), acc_b=float(100.0 * xb.mean()), only_a=only_a, only_b=only_b,
                        delta=delta, ci_low=ci[0], ci_high=ci[1],
                        p_mcnemar=mcnemar_exact(only_a, only_b), p_permutation=p_perm,
                        n_resamples=n_resamples, rng_seed=seed)


@dataclass(frozen=True)
class SeedResult:
    """Two arms trained with the same seeds; one score per arm and seed."""

    seeds: tuple[int, ...]
    """the paired seeds, in order"""
    mean_a: float
    sd_a: float | None
    """sample sd (ddof 1); None with one seed"""
    mean_b: float
    sd_b: float | None
    delta: float
    """mean over seeds of b - a"""
    ci_low: float | None
    """Student-t 95% CI of the mean difference (the t-test's own interval); None with one seed or
    when the test is untestable"""
    ci_high: float | None
    p_ttest: float | None
    """paired t-test; None with one seed or when untestable"""
    p_wilcoxon: float | None
    """Wilcoxon signed-rank (exact for small n); None with one seed"""
    n_resamples: int
    rng_seed: int
    warning: str | None
    """set when there are fewer than MIN_SEEDS seeds"""
    untestable: str | None = None
    """why the t-test has no answer although there are several seeds (no spread in Δ)"""


def no_spread(d, scores) -> bool:
    """Whether the paired differences `d` have no spread beyond float noise (`NO_SPREAD`, relative
    to the largest of `scores`, the values they are differences of)."""
    d, scores = np.asarray(d, float), np.asarray(scores, float)
    return bool(np.ptp(d) <= NO_SPREAD * max(1.0, float(np.abs(scores).max(initial=0.0))))


def seed_warning(n: int) -> str | None:
    if n >= MIN_SEEDS:
        return None
    if n == 1:
        return "1 seed: seed-to-seed variation is not measured"
    return f"{n} seeds (< {MIN_SEEDS}): an exact sign or Wilcoxon test cannot reach p < 0.05"


def across_seeds(a: dict[int, float], b: dict[int, float], n_resamples: int = 10_000, seed: int = 0) -> SeedResult:
    """Compare per-seed scores `b` against `a`; both must hold the same seeds."""
    if set(a) != set(b):
        raise ValueError(f"across-seed test needs paired seeds: only in a {sorted(set(a) - set(b))}, "
                         f"only in b {sorted(set(b) - set(a))}")
    if not a:
        raise ValueError("across-seed test needs at least one seed")
    seeds = tuple(sorted(a))
    xa, xb = np.array([a[s] for s in seeds], float), np.array([b[s] for s in seeds], float)
    d = xb - xa
    n = len(seeds)
    sd = (lambda x: float(np.std(x, ddof=1))) if n > 1 else (lambda x: None)
    ci_low = ci_high = p_t = p_w = untestable = None
    scores = np.concatenate([xa, xb])
    if n > 1:
        if no_spread(d, scores) and no_spread(np.append(d, 0.0), scores):
            # identical arms (Δ 0 on every seed, but for float noise): no change, and scipy would
            # answer 0/0 with nan
            ci_low = ci_high = 0.0
            p_t = p_w = 1.0
        elif no_spread(d, scores):
            # the same nonzero Δ on every seed (but for float noise): the t statistic is infinite or
            # divides by rounding (scipy answers p = 0, or 4e-74), which claims certainty from no
            # measured variation; Wilcoxon's exact p still holds
            untestable = f"Δ {d.mean():+.2f} on every seed: no spread, so no t-test"
            p_w = float(stats.wilcoxon(d).pvalue)
        else:
            ci_low, ci_high = mean_ci(d)
            p_t = float(stats.ttest_rel(xb, xa).pvalue)
            p_w = float(stats.wilcoxon(xb, xa).pvalue)
    return SeedResult(seeds=seeds, mean_a=float(xa.mean()), sd_a=sd(xa), mean_b=float(xb.mean()), sd_b=sd(xb),
                      delta=float(d.mean()), ci_low=ci_low, ci_high=ci_high, p_ttest=p_t, p_wilcoxon=p_w,
                      n_resamples=n_resamples, rng_seed=seed, warning=seed_warning(n), untestable=untestable)


def proportion_ci(k: int, n: int) -> tuple[float, float]:
    """Wilson 95% interval of k successes in n, in %."""
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=CONFIDENCE, method="wilson")
    return 100.0 * ci.low, 100.0 * ci.high


def mean_ci(values) -> tuple[float, float]:
    """Student-t 95% interval of a mean over seeds; (nan, nan) with one value."""
    x = np.asarray(values, float)
    if x.size < 2:
        return math.nan, math.nan
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, x.size - 1) * stats.sem(x)
    return float(x.mean() - half), float(x.mean() + half)


def percent_ci(values) -> tuple[float, float]:
    """`mean_ci` of accuracies in %, clipped to [0, 100]: a t interval over few seeds can pass the
    scale's ends (3 seeds of 91, 98 and 84 give [75, 107])."""
    low, high = np.clip(mean_ci(values), 0.0, 100.0)  # NaN (one value) stays NaN
    return float(low), float(high)


def ratio_ci(num, den, n_resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """Bootstrap (percentile) 95% CI of sum(num)/sum(den) in %, resampling the units in pairs
    (e.g. correct slots / slots, with the example as the unit)."""
    num, den = np.asarray(num, float), np.asarray(den, float)
    if num.size < 2 or np.all(num * den.sum() == den * num.sum()):
        value = 100.0 * num.sum() / den.sum()
        return value, value
    boot = stats.bootstrap((num, den), lambda x, y, axis=-1: x.sum(axis) / y.sum(axis), paired=True,
                           vectorized=True, n_resamples=n_resamples, confidence_level=CONFIDENCE,
                           batch=_batch(num.size),
                           method="percentile", rng=np.random.default_rng(seed))
    return 100.0 * boot.confidence_interval.low, 100.0 * boot.confidence_interval.high
