"""A claim's verdict: what its tests decide, and the guardrails that hold it back.

The rule in words is `verdict_rule.md`, beside this file: `rule()` gives its short form (every
report's footer, the study report, the README's demo) and `rule_table()` its table (docs/analysis.md),
both with this code's constants; `make readme` renders the docs' copies and a test fails while they differ.
Change the rule here and there together.

Each kind of p is adjusted over the family by its correction, apart: the difference p's together,
the TOST p's together (within one claim the two nulls, Δ = 0 and |Δ| ≥ m, exclude each other, so
at most one of them is true). N comes from `equivalence.to_decide` at the level the correction asks
of a claim at worst (α over the family's size), never fewer than the guardrail's seeds.
"""

from __future__ import annotations

import re
from pathlib import Path

from analysis.checks.protocol import TEST_PROBLEMS
from analysis.stats.equivalence import MAX_N, to_decide
from analysis.stats.power import spread
from analysis.stats.stats import MIN_SEEDS, MIN_TEST_EXAMPLES
from analysis.tables.claim import Claim


RULE = Path(__file__).with_name("verdict_rule.md")
"""The verdict rule in words: its `## short` paragraph and its `## table`."""


def _rule_part(name: str) -> str:
    text = re.sub(r"<!--.*?-->\n*", "", RULE.read_text(encoding="utf-8"), flags=re.S)
    parts = dict(re.findall(r"^## (\w+)\n\n(.*?)\n*(?=^## |\Z)", text, flags=re.S | re.M))
    return parts[name].format(min_seeds=MIN_SEEDS, max_held=MIN_SEEDS - 1, min_examples=MIN_TEST_EXAMPLES)


def rule() -> str:
    """The verdict rule in one paragraph (a report's footer, the study report, the README)."""
    return _rule_part("short")


def rule_table() -> str:
    """The verdict rule as its table of verdicts, in the order they are tried (docs/analysis.md)."""
    return _rule_part("table")


DIFFERENCE = ("better", "worse")
"""The verdicts that say the arms differ: the only ones a significance mark may stand beside."""


def says_differ(verdict: str | None) -> bool:
    """Whether a verdict says the arms differ (`better` or `worse`, alone or before what `targets`
    adds after a `;`): a claim whose verdict refuses the test (too few test examples, untestable) or
    holds it back (inconclusive) gets no star, whatever its p."""
    return verdict is not None and verdict.split(";", 1)[0] in DIFFERENCE


def level(alpha: float, correction: str, members: int) -> float:
    """The level a claim of a family of `members` must reach at worst: α / members (Holm's first
    step, Benjamini-Hochberg's smallest), α without a correction."""
    return alpha if correction == "none" else alpha / max(members, 1)


def _held_back(claim: Claim) -> bool:
    """Whether the seeds guardrail keeps a decided claim from a verdict: 2-5 seeds, or one seed of
    trained arms (a zero-shot LLM run trains nothing: its one run is the method)."""
    return claim.n_seeds < MIN_SEEDS and (claim.n_seeds > 1 or claim.trainable)


def _undecided(claim: Claim) -> str:
    """'undecided: about 12 more seeds would decide (TOST at ±1, 22 in all)'. Only advice the rules could
    then follow: one seed of trained (or sampled) arms reads `inconclusive (1 seed)` at any number of
    examples, so it is told the seeds a claim on the method needs; examples never beyond the benchmark's
    test problems (`protocol.TEST_PROBLEMS`)."""
    seeds = claim.n_seeds > 1
    if not seeds and claim.trainable:
        return (f"undecided: 1 seed: a claim on the method needs at least {MIN_SEEDS} seeds ({MIN_SEEDS - 1} more), "
                f"whatever the test examples; the spread over seeds, not measurable from one, says how many decide")
    unit, n = ("seeds", claim.n_seeds) if seeds else ("test examples", claim.n_examples)
    decision = to_decide(claim.delta, spread(claim), claim.margin,
                         level(claim.alpha, claim.correction, claim.n_family))
    benchmark = None if seeds else sum(TEST_PROBLEMS.get(claim.dataset, {}).values()) or None
    if decision.n is None:
        said = f"undecided: more than {MAX_N:,} {unit} would be needed to decide at this Δ and spread"
    else:
        total = max(decision.n, MIN_SEEDS if seeds else 0, n + 1)
        test = "the difference test" if decision.by == "difference" else f"TOST at ±{claim.margin:g}"
        said = f"undecided: about {total - n} more {unit} would decide ({test}, {total} in all)"
        if benchmark is not None and total > benchmark:
            said = (f"undecided: more test examples than the benchmark's {benchmark:,} would be needed to decide at "
                    f"this Δ and spread ({test}: about {total:,})")
    return said if seeds else f"{said}; 1 seed: the seeds needed are not measurable"


def verdict(claim: Claim) -> str:
    """The claim's verdict (the table above), from its own fields: its statistics, its adjusted p's
    (`p_adjusted`, `p_tost_adjusted`), its `alpha`, and its family's correction and size (`n_family`,
    every claim of the family, a testable one or not)."""
    alpha, p_adjusted, p_tost_adjusted = claim.alpha, claim.p_adjusted, claim.p_tost_adjusted
    if claim.untestable:
        return f"untestable ({claim.untestable})"
    if p_adjusted is None:
        return "untested"
    if claim.n_examples < MIN_TEST_EXAMPLES:
        return f"too few test examples ({claim.n_examples} < {MIN_TEST_EXAMPLES}): no verdict"
    if spread(claim) == 0:  # identical arms: a t statistic of 0/0, and no TOST either
        what = (f"Δ {claim.delta:+.2f} on every seed" if claim.n_seeds > 1 else
                "the two runs answer every test example alike")
        return f"untestable ({what}: no spread, so no t-test)"
    excludes = claim.ci_low is not None and (claim.ci_low > 0 or claim.ci_high < 0)
    if claim.ci_low is not None and excludes != (claim.p < alpha):
        return f"inconclusive (the 95% CI and {claim.test} disagree)"
    decided = p_adjusted < alpha or (p_tost_adjusted is not None and p_tost_adjusted < alpha)
    if decided and _held_back(claim):
        return f"inconclusive ({claim.n_seeds} seed{'s' if claim.n_seeds > 1 else ''})"
    if p_adjusted < alpha:
        return "better" if claim.delta > 0 else "worse"
    if decided:
        return f"equivalent within ±{claim.margin:g}"
    said = _undecided(claim)
    return f"{said} (the unadjusted 95% CI excludes 0; not after {claim.correction})" if excludes else said
