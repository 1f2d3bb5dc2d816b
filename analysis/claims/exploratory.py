"""Every pair of arms no comparison planned: shown, and not over-claimed (issue 48).

A study plans its comparisons before it runs; the data may hold a signal between arms nobody
planned to compare (the converged study's teacher forcing vs base: +1.01, p 0.008). Such pairs are
built as claims are (`claims.build`: the same pairing, guardrails and tests), then marked
exploratory: no verdict, and their p adjusted by Holm over every pair of arms at once, the planned
ones included, so a pair that would be significant alone reads as what it is, one of many looks.

Two arms that differ in more than one setting (an arm of one comparison against an arm of another)
are compared over the first setting that tells them apart (`variant` first), the others allowed
and flagged (`config differs (allowed by --allow_diff)`); a pair the guardrails refuse is named in a
note, not dropped in silence.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import polars as pl

from analysis.checks import guardrails
from analysis.checks.guardrails import GuardrailError
from analysis.checks.selection import FOLD, SEED
from analysis.claims import claims as claims_mod
from analysis.stats.equivalence import DEFAULT_MARGIN
from analysis.stats.multiple import adjust
from analysis.tables import text

VERDICT = "exploratory (no verdict)"
PREFERRED = "variant"
"""the setting two arms are compared over when it tells them apart: the tables' main arm column"""


@dataclass(frozen=True)
class Arm:
    """One arm of a study: what a report calls it, and the runs it is."""

    name: str
    """Its name in the report ('PseDual-GCN (fusion scheduled, ...)')."""
    trials: frozenset[str]
    """Its runs, as `experiment/trial`."""

    def __post_init__(self) -> None:
        if not self.name or not self.trials:
            raise ValueError(f"an arm needs a name and runs, got {self.name!r} with {len(self.trials)} run(s)")


def unplanned(arms: list[Arm], planned: set[frozenset[frozenset[str]]]) -> list[tuple[Arm, Arm]]:
    """Every pair of `arms` (the earlier one as the base) whose run sets no planned claim paired."""
    return [(a, b) for a, b in combinations(arms, 2) if frozenset((a.trials, b.trials)) not in planned]


def _key(runs: pl.DataFrame) -> pl.Expr:
    return pl.col("experiment") + "/" + pl.col("trial")


def differing(runs: pl.DataFrame, base: Arm, treat: Arm) -> list[str]:
    """The config columns (as `guardrails.config_columns` compares them) whose values differ between
    the two arms' runs, `variant` first, then in the table's order."""
    mine = {a: runs.filter(_key(runs).is_in(list(a.trials))) for a in (base, treat)}
    out = []
    for col in guardrails.config_columns(runs.columns, [SEED, FOLD, "experiment"]):
        values = [set(map(str, mine[a][col].to_list())) for a in (base, treat)]
        if values[0] != values[1]:
            out.append(col)
    return sorted(out, key=lambda c: c != PREFERRED)


def pair(runs: pl.DataFrame, epochs: pl.LazyFrame, predictions: pl.LazyFrame, base: Arm, treat: Arm,
         by: tuple[str, ...], n_resamples: int, rng_seed: int, margin: float = DEFAULT_MARGIN) -> pl.DataFrame:
    """One unplanned pair as claim rows (`claims.build`, uncorrected: `adjust_all` corrects them
    with the planned ones), each named by its arms and marked exploratory, its TOST at `margin` (the
    planned claims' margin, not a fixed ±1); a GuardrailError where the arms cannot be paired."""
    cols = differing(runs, base, treat)
    if not cols:
        raise GuardrailError(f"{treat.name} and {base.name}: no config column tells them apart")
    arm = cols[0]
    mine = runs.filter(_key(runs).is_in(list(base.trials | treat.trials)))
    values = {a: mine.filter(_key(mine).is_in(list(a.trials)))[arm].drop_nulls().unique().to_list()
              for a in (base, treat)}
    if any(len(v) != 1 for v in values.values()):
        raise GuardrailError(f"{treat.name} vs {base.name}: {arm} is not one value per arm ({values})")
    # a column null throughout one arm is that arm's lacking it (psedual.* on base): not allowed, not refused
    allowed = tuple(c for c in cols[1:] if all(mine.filter(_key(mine).is_in(list(a.trials)))[c].null_count() == 0
                                                for a in (base, treat)))
    cmp = claims_mod.Comparison(family="exploratory", arm=arm, base=str(values[base][0]),
                                treatments=(str(values[treat][0]),), by=tuple(c for c in by if c not in cols),
                                correction="none", n_resamples=n_resamples, rng_seed=rng_seed, allow_diff=allowed,
                                margin=margin)
    rows = claims_mod.build(mine, epochs, predictions, cmp).rows
    return rows.with_columns(pl.lit(f"{treat.name} vs {base.name}").alias("comparison"), pl.lit(VERDICT).alias("verdict"))


def margin_of(claims: pl.DataFrame) -> float:
    """The margin an unplanned pair takes from the planned claims it sits among: theirs, the smallest
    where they differ (the strictest), DEFAULT_MARGIN where none is recorded."""
    margins = [m for m in claims["margin"].to_list() if m is not None] if "margin" in claims.columns else []
    return min(margins, default=DEFAULT_MARGIN)


def margin_near(claims: pl.DataFrame, base: Arm, treat: Arm) -> float:
    """The margin of an unplanned pair of a study: `margin_of` the planned claims either arm is in
    (all of them where neither is)."""
    near = [i for i, r in enumerate(claims.iter_rows(named=True))
            if {frozenset(r["base_trials"]), frozenset(r["treatment_trials"])} & {base.trials, treat.trials}]
    return margin_of(claims[near] if near else claims)


def adjust_all(planned: list[float | None], rows: pl.DataFrame, correction: str = "holm") -> pl.DataFrame:
    """The exploratory rows with `p_all`: their p adjusted together with the planned claims' p's
    (`planned`), every pair of arms one family."""
    everything = adjust([*planned, *rows["p"].to_list()], correction)
    return rows.with_columns(pl.Series("p_all", everything[len(planned):], dtype=pl.Float64))


def write(rows: pl.DataFrame, root: str, family: str) -> str:
    """The exploratory rows in their own table, `<root>/exploratory/<family>.parquet`: not beside the
    planned claims, whose columns they do not share (`comparison`, `p_all`; no power), so that a
    Polars glob over `<root>/claims` still reads. Their `family` is the planned claims' and their
    `verdict` says they are exploratory; `p_all` is their p adjusted over every pair (their
    `p_adjusted` is their p: no family of their own). Returns the path."""
    return claims_mod.write(rows.with_columns(pl.lit(family).alias("family")), root, family, "exploratory")


def table(rows: pl.DataFrame, fmt: str = "markdown") -> str:
    """The exploratory rows: comparison, seeds, each arm's score, Δ, its CI, the test's p, the p
    adjusted over all pairs, the second test's p, the TOST's p at the claims' margin (unadjusted), and
    the flags that say how the arms differ."""
    header = ["comparison (exploratory)", "seeds", "base", "treatment", "Δ", "95% CI", "p", "p holm (all pairs)",
              "second test", "TOST p at ±m (points of accuracy)", "how the arms differ"]
    body = []
    for r in rows.iter_rows(named=True):
        why = text.untested(r)  # every "–" says why (issue 60, class 6)
        ci = text.dash(why) if r["ci_low"] is None else f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]"
        second = text.dash(why) if r["p_secondary"] is None else f"{r['test_secondary']} p {text.p_value(r['p_secondary'])}"
        # 'config differs (allowed by --allow_diff): COLUMN: ...': the other settings the arms differ in
        also = [f.split(": ", 2)[1] for f in r["flags"] if f.startswith("config differs")]
        body.append([r["comparison"], str(r["n_seeds"]), text.score(r["base"], r["base_sd"]),
                     text.score(r["treatment"], r["treatment_sd"]), f"{r['delta']:+.2f}", ci,
                     text.dash(why) if r["p"] is None else text.p_value(r["p"]),
                     text.dash(why) if r["p_all"] is None else text.p_value(r["p_all"]), second,
                     text.dash(why) if r.get("p_tost") is None else f"{text.p_value(r['p_tost'])} at ±{r['margin']:g}",
                     ", ".join([r["arm"], *also])])
    return text.render(header, body, fmt)


def among_treatments(runs: pl.DataFrame, epochs: pl.LazyFrame, predictions: pl.LazyFrame, planned: pl.DataFrame,
                     by: tuple[str, ...], n_resamples: int, rng_seed: int) -> tuple[pl.DataFrame, list[str]]:
    """`analyze compare`'s unplanned pairs: in each cell of its `planned` claims, each two of their
    treatment arms (the earlier the base), built by `pair` from the very runs the claims paired and
    adjusted with them (`adjust_all`), at the margin of the cell's claims; and a note per pair the
    guardrails refuse."""
    frames, notes = [], []
    for cell in planned["cell"].unique(maintain_order=True).to_list():
        mine = planned.filter(pl.col("cell") == cell).unique("treatment_arm", maintain_order=True)
        found = [Arm(text.label(r["treatment_arm"]), frozenset(r["treatment_trials"]))
                 for r in mine.iter_rows(named=True)]
        for base, treat in combinations(found, 2):
            try:
                rows = pair(runs, epochs, predictions, base, treat, by, n_resamples, rng_seed, margin_of(mine))
            except GuardrailError as err:  # named, not dropped: the planned claims stand without it
                notes.append(f"exploratory {treat.name} vs {base.name} ({cell}): not compared: {err}")
                continue
            frames.append(rows.with_columns((pl.lit(f"{cell}: ") + pl.col("comparison")).alias("comparison")))
    if not frames:
        return pl.DataFrame(), notes
    return adjust_all(planned["p"].to_list(), pl.concat(frames, how="diagonal_relaxed")), notes
