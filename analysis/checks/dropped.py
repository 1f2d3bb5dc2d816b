"""The seeds a claim drops, shown with what they score (issue 60, class 4).

A claim pairs the seeds both arms ran; the others are dropped. Seeds 0-9 against 4-13 compare the six
shared, and a reader who sees only "seeds dropped" cannot tell whether the dropped runs scored like the
kept ones: a selection, or a cherry-pick. Each arm's dropped runs are scored beside its kept ones (test
value accuracy, a seed's folds pooled by their test problems), and where one arm's dropped seeds differ
from its kept seeds beyond noise (Student's two-sample t-test, scipy, p < ALPHA) the claim is refused
unless `--allow_diff+ seed` names it (then flagged).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
from scipy import stats

from analysis.checks.guardrails import SEED, GuardrailError

ALPHA = 0.05
"""the level at which an arm's dropped seeds differ from its kept ones beyond noise"""
ALLOW = SEED
"""the `--allow_diff` name that lets a claim stand on seeds whose dropped runs scored apart"""


def seed_scores(runs: pl.DataFrame) -> dict[int, float]:
    """Each seed's test value accuracy (points), its folds pooled by their test problems."""
    weight = pl.col("n_test").fill_null(1) if "n_test" in runs.columns else pl.lit(1.0)
    per = runs.group_by(SEED).agg((100.0 * (pl.col("test_value_acc") * weight).sum() / weight.sum()).alias("acc"))
    return {int(s): float(a) for s, a in per.rows() if a is not None and math.isfinite(a)}


def check(cell: str, arm_runs: dict[str, pl.DataFrame], kept: list[int], allowed: set[str]) -> list[str]:
    """The flag that names the dropped seeds with each arm's dropped and kept scores ([] where none is
    dropped); a GuardrailError where one arm's dropped seeds score apart from its kept ones (p < ALPHA)
    and `allowed` lacks `seed`."""
    parts, apart = [], []
    every = sorted({s for runs in arm_runs.values() for s in runs[SEED].to_list()} - set(kept))
    if not every:
        return []
    for arm, runs in arm_runs.items():
        scores = seed_scores(runs)
        gone = [scores[s] for s in sorted(scores) if s not in kept]
        stay = [scores[s] for s in kept if s in scores]
        if not gone:
            continue
        p = None
        if len(stay) >= 2 and len(gone) + len(stay) >= 3 and np.ptp([*gone, *stay]) > 0:
            with warnings.catch_warnings():  # scipy warns where one group has no spread
                warnings.simplefilter("ignore")
                p = float(stats.ttest_ind(gone, stay).pvalue)
            p = p if math.isfinite(p) else None
        said = "p not testable" if p is None else f"t-test p {p:.3g}"
        parts.append(f"{arm}: {len(gone)} dropped run(s) score {np.mean(gone):.2f} vs {np.mean(stay):.2f} kept ({said})")
        if p is not None and p < ALPHA:
            apart.append((arm, sorted(s for s in scores if s not in kept), np.mean(gone), np.mean(stay), len(stay), p))
    flag = f"unpaired seeds dropped: {every}" + (f"; {'; '.join(parts)}" if parts else "")
    if apart and ALLOW not in allowed:
        arm, seeds, gone, stay, n, p = apart[0]
        raise GuardrailError(f"{cell}: {arm}'s {len(seeds)} dropped run(s) (seeds {seeds}) score {gone:.2f} against "
                             f"{stay:.2f} for its {n} kept (Student t-test p {p:.3g} < {ALPHA}): the shared seeds are "
                             f"not a fair sample of the arm's runs; run the missing seeds, or pass --allow_diff+ "
                             f"{ALLOW} to compare anyway (flagged)")
    return [flag + (" (allowed by --allow_diff)" if apart else "")]
