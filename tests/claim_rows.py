"""A whole claim row for tests that craft claims (power, the curve's stars, the claim record)."""

from __future__ import annotations

from analysis.tables.claim import Claim


def claim_row(**change) -> dict:
    """A whole claim row (every `Claim` field), 6 seeds and a `better` unless `change` says otherwise; a
    given `n_seeds` brings its seeds (0, 1, ...). Other tests build their crafted claims with it."""
    if "n_seeds" in change and "seeds" not in change:
        change["seeds"] = tuple(range(change["n_seeds"]))
    fields = dict(family="f", correction="holm", n_family=1, cell="mawps, gts", group="gts", dataset="mawps",
                  solver="gts", metric="value", arm="variant", base_arm="base", treatment_arm="gcn",
                  n_examples=400, n_seeds=6, seeds=tuple(range(6)), folds=(0,), base_trials=("x/b",) * 6,
                  treatment_trials=("x/g",) * 6, base_budget=1, treatment_budget=1, base=80.0, treatment=82.0,
                  delta=2.0, delta_sd=0.5, ci_low=1.5, ci_high=2.5, test="paired_t_seeds", p=0.001,
                  p_adjusted=0.001, n_resamples=200, rng_seed=0, margin=1.0, p_tost=0.9, p_tost_adjusted=0.9)
    return Claim(**(fields | change)).row()
