"""Adjusting p-values over a family of comparisons (e.g. every cell of an ablation grid).

Holm controls the family-wise error rate (statsmodels' `multipletests`); Benjamini-Hochberg the false discovery rate
(scipy's `false_discovery_control`). Comparisons without a p-value (an across-seed comparison whose
difference is the same on every seed: `untestable`) are not members of the family and keep None.
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
    """Adjust the non-None p-values together with `method` (holm, bh or none)."""
    if method not in METHODS:
        raise ValueError(f"unknown correction {method!r}; valid: {', '.join(METHODS)}")
    members = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = list(pvalues)
    if not members or method == "none":
        return out
    p = np.array([pvalues[i] for i in members], float)
    adjusted = holm(p) if method == "holm" else stats.false_discovery_control(p, method="bh")
    for i, value in zip(members, adjusted):
        out[i] = float(value)
    return out
