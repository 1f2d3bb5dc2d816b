"""A claim's verdict: what its tests decide, and the guardrails that hold it back.

A verdict is one of four answers, `better`, `worse`, `equivalent within ±m` or `undecided: about N
more seeds would decide`, unless a guardrail stops it first (in this order):

| verdict | when |
|---|---|
| `untestable (...)` | the same nonzero Δ on every seed (no spread for a t-test) |
| `untested` | no p-value |
| `too few test examples (n < 30): no verdict` | below `stats.MIN_TEST_EXAMPLES` |
| `untestable (...: no spread, so no t-test)` | Δ 0 on every seed, or one seed's two runs answering every example alike: no TOST either |
| `inconclusive (the 95% CI and TEST disagree)` | the interval excludes 0 but the unadjusted p ≥ α, or the reverse |
| `inconclusive (n seeds)` | a decided claim (difference or equivalence) over 2-5 seeds, or one seed of trained arms |
| `better` / `worse` | the adjusted difference p < α |
| `equivalent within ±m` | the adjusted TOST p < α (and the difference p not) |
| `undecided: about N more seeds would decide (...)` | neither |

Each kind of p is adjusted over the family by its correction, apart: the difference p's together,
the TOST p's together (within one claim the two nulls, Δ = 0 and |Δ| ≥ m, exclude each other, so
at most one of them is true). N comes from `equivalence.to_decide` at the level the correction asks
of a claim at worst (α over the family's size), never fewer than the guardrail's seeds.
"""

from __future__ import annotations

from analysis.stats.equivalence import MAX_N, to_decide
from analysis.stats.power import spread
from analysis.stats.stats import MIN_SEEDS, MIN_TEST_EXAMPLES


DIFFERENCE = ("better", "worse")
"""The verdicts that say the arms differ: the only ones a significance mark may stand beside."""


def says_differ(verdict: str | None) -> bool:
    """Whether a verdict says the arms differ (`better` or `worse`): a claim whose verdict refuses
    the test (too few test examples, untestable) or holds it back (inconclusive) gets no star, whatever
    its p."""
    return verdict in DIFFERENCE


def level(alpha: float, correction: str, members: int) -> float:
    """The level a claim of a family of `members` must reach at worst: α / members (Holm's first
    step, Benjamini-Hochberg's smallest), α without a correction."""
    return alpha if correction == "none" else alpha / max(members, 1)


def _held_back(row: dict) -> bool:
    """Whether the seeds guardrail keeps a decided claim from a verdict: 2-5 seeds, or one seed of
    trained arms (a zero-shot LLM run trains nothing: its one run is the method)."""
    return row["n_seeds"] < MIN_SEEDS and (row["n_seeds"] > 1 or row.get("trainable", True))


def _undecided(row: dict, alpha: float, correction: str, members: int, margin: float) -> str:
    """'undecided: about 12 more seeds would decide (TOST at ±1, 22 in all)'."""
    seeds = row["n_seeds"] > 1
    unit, n = ("seeds", row["n_seeds"]) if seeds else ("test examples", row["n_examples"])
    decision = to_decide(row["delta"], spread(row), margin, level(alpha, correction, members))
    if decision.n is None:
        said = f"undecided: more than {MAX_N:,} {unit} would be needed to decide at this Δ and spread"
    else:
        total = max(decision.n, MIN_SEEDS if seeds else 0, n + 1)
        test = "the difference test" if decision.by == "difference" else f"TOST at ±{margin:g}"
        said = f"undecided: about {total - n} more {unit} would decide ({test}, {total} in all)"
    return said if seeds else f"{said}; 1 seed: the seeds needed are not measurable"


def verdict(row: dict, p_adjusted: float | None, p_tost_adjusted: float | None, alpha: float, correction: str,
            members: int) -> str:
    """The claim row's verdict (the table above); `members`: the family's claims, a testable one or not."""
    margin = row["margin"]
    if row.get("untestable"):
        return f"untestable ({row['untestable']})"
    if p_adjusted is None:
        return "untested"
    if row["n_examples"] < MIN_TEST_EXAMPLES:
        return f"too few test examples ({row['n_examples']} < {MIN_TEST_EXAMPLES}): no verdict"
    if spread(row) == 0:  # identical arms: a t statistic of 0/0, and no TOST either
        what = (f"Δ {row['delta']:+.2f} on every seed" if row["n_seeds"] > 1 else
                "the two runs answer every test example alike")
        return f"untestable ({what}: no spread, so no t-test)"
    excludes = row["ci_low"] is not None and (row["ci_low"] > 0 or row["ci_high"] < 0)
    if row["ci_low"] is not None and excludes != (row["p"] < alpha):
        return f"inconclusive (the 95% CI and {row['test']} disagree)"
    decided = p_adjusted < alpha or (p_tost_adjusted is not None and p_tost_adjusted < alpha)
    if decided and _held_back(row):
        return f"inconclusive ({row['n_seeds']} seed{'s' if row['n_seeds'] > 1 else ''})"
    if p_adjusted < alpha:
        return "better" if row["delta"] > 0 else "worse"
    if decided:
        return f"equivalent within ±{margin:g}"
    said = _undecided(row, alpha, correction, members, margin)
    return f"{said} (the unadjusted 95% CI excludes 0; not after {correction})" if excludes else said
