"""Adjusting p-values over a family of comparisons (e.g. every cell of an ablation grid).

Holm controls the family-wise error rate (statsmodels' `multipletests`); Benjamini-Hochberg the false discovery rate
(scipy's `false_discovery_control`). A comparison without a p-value (an across-seed comparison whose
difference is the same on every seed: `untestable`) is still a member of the family: it was made, and
dropping it would adjust its siblings over fewer comparisons than were looked at (a p of 0.032 beside
an untestable sibling read 0.032, not 0.064). It counts as p = 1, the least it could have shown, and
keeps None as its own adjusted p.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

Correction = Literal["holm", "bh", "none"]
"""`holm` (family-wise error rate), `bh` (Benjamini-Hochberg: false discovery rate) or `none`."""
METHODS = get_args(Correction)


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the input order (statsmodels' `multipletests`)."""
    p = np.asarray(pvalues, float)
    if np.any((p < 0) | (p > 1)) or np.any(np.isnan(p)):
        raise ValueError(f"p-values must lie in [0, 1]: {p.tolist()}")
    return multipletests(p, method="holm")[1]


def adjust(pvalues: list[float | None], method: str) -> list[float | None]:
    """Adjust the p-values together with `method` (holm, bh or none) over the whole family: a None
    (no p-value) counts as a member at p = 1 and stays None."""
    if method not in METHODS:
        raise ValueError(f"unknown correction {method!r}; valid: {', '.join(METHODS)}")
    tested = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = list(pvalues)
    if not tested or method == "none":
        return out
    p = np.array([1.0 if v is None else v for v in pvalues], float)
    adjusted = holm(p) if method == "holm" else stats.false_discovery_control(p, method="bh")
    for i in tested:
        out[i] = float(adjusted[i])
    return out
