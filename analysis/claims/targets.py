"""A claim's verdict against its target Δ and its margin (issue 57): the words `verdicts.verdict`
adds to once the claim knows its target (`power.annotate`: the paper's Δ for the cell, or the one
`--target_delta` gives; the platform's default 1 point is no claim's target and gets no test).

- **Smaller than the target?** A one-sided paired t-test of H0 Δ ≥ target against Δ < target (a
  negative target: Δ ≤ target against Δ > target) at the claim's own n and spread
  (`margins.below_target`, scipy's t law), its p adjusted over the family by the family's correction,
  apart from the difference and TOST p's: "smaller than the paper's +0.9 points of accuracy
  (one-sided t at the target, p 0.002, holm 0.004)", or "not shown smaller than ...".
- **A margin that cannot test the target** is said: "±1 points of accuracy includes the paper's
  +0.8: this does not test it" (an effect of the paper's size would read "equivalent").
- **A real difference inside the margin** says both: "better; equivalent within ±1 points of
  accuracy too: real, and smaller than the margin".

Only a judged verdict (better, worse, equivalent, undecided) gets these words: a guardrail that
holds a claim back (inconclusive, untestable, too few examples) holds its target test back too.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from analysis.claims.verdicts import DIFFERENCE, verdict
from analysis.stats.margins import UNIT, below_target, points, said_against
from analysis.stats.multiple import adjust
from analysis.stats.power import spread
from analysis.tables.claim import Claim, claims_of
from analysis.tables.text import p_value

SOURCES = {"paper": "the paper's", "given": "the given"}
"""Where a target comes from (`power.annotate`'s `target_from`) → how a verdict names it; a source
not here (the default 1 point) is no claim's target."""
JUDGED = (*DIFFERENCE, "equivalent", "undecided")
"""The verdicts (their first word) the target and margin words are added to."""
COLUMNS = {"p_target": pl.Float64, "p_target_adjusted": pl.Float64}
"""The columns `judge` adds: the one-sided p at the target, and adjusted over the family."""


def _judged(verdict: str | None) -> bool:
    return verdict is not None and verdict.split(" ", 1)[0].rstrip(":;") in JUDGED


def _p_target(claim: Claim, target: float | None, source: str | None) -> float | None:
    if source not in SOURCES or target is None or not _judged(claim.verdict):
        return None
    n = claim.n_seeds if claim.n_seeds > 1 else claim.n_examples
    return below_target(claim.delta, spread(claim), n, target)


def words(claim: Claim, target: float | None, source: str | None, p: float | None,
          p_adjusted: float | None) -> list[str]:
    """What a judged claim's verdict adds (none for another): a real difference inside its margin,
    a margin that cannot test its target, and its answer to "smaller than the target?"."""
    if not _judged(claim.verdict):
        return []
    out = []
    alpha = claim.alpha
    if claim.verdict in DIFFERENCE and claim.p_tost_adjusted is not None and claim.p_tost_adjusted < alpha:
        out.append(f"equivalent within ±{points(claim.margin)} {UNIT} too: real, and smaller than the margin")
    if source in SOURCES and target is not None:
        said = said_against(claim.margin, target, SOURCES[source])
        if said:
            out.append(said)
        if p is not None:
            shown = p_adjusted is not None and p_adjusted < alpha
            adjusted = "" if claim.correction == "none" else f", {claim.correction} {p_value(p_adjusted)}"
            out.append(f"{'' if shown else 'not shown '}smaller than {SOURCES[source]} {target:+g} {UNIT} "
                       f"(one-sided t at the target, p {p_value(p)}{adjusted})")
    return out


def judge(rows: pl.DataFrame) -> pl.DataFrame:
    """The claim rows of one family (annotated: `target_delta`, `target_from`) with each judged
    verdict's target and margin words added, and the target test's p and adjusted p (`COLUMNS`)."""
    if rows.is_empty() or "target_delta" not in rows.columns:
        return rows
    found = list(zip(claims_of(rows), rows["target_delta"].to_list(), rows["target_from"].to_list()))
    ps = [_p_target(c, t, s) for c, t, s in found]
    correction = found[0][0].correction
    adjusted = adjust(ps, correction) if any(p is not None for p in ps) else ps
    verdicts = []
    for (c, t, s), p, q in zip(found, ps, adjusted):
        verdicts.append("; ".join([c.verdict, *words(c, t, s, p, q)]) if c.verdict is not None else None)
    return rows.drop([k for k in COLUMNS if k in rows.columns]).with_columns(
        pl.Series("p_target", ps, dtype=pl.Float64), pl.Series("p_target_adjusted", adjusted, dtype=pl.Float64),
        pl.Series("verdict", verdicts, dtype=pl.String))


def margin_line(rows: pl.DataFrame, default: float | None = None) -> str:
    """The margin these claims read and why, in one line under them: `default` is the command's own
    (analyze's --margin default; None: the margins are the sweep file's comparisons'), and where a
    claim has a target, the default a sweep in rounds takes instead and why."""
    margins = sorted({m for m in rows["margin"].to_list() if m is not None}) if "margin" in rows.columns else []
    shown = ", ".join(f"±{points(m)}" for m in margins) or "none"
    why = ("its sweep file's comparisons'" if default is None else
           "--margin, at analyze's default" if margins == [default] else "as --margin gives it")
    targets = []
    if "target_from" in rows.columns:
        targets = sorted({abs(t) for t, s in zip(rows["target_delta"].to_list(), rows["target_from"].to_list())
                          if s in SOURCES and t is not None})
    tail = ""
    if targets:
        half = ", ".join(f"±{points(t / 2)} for {points(t)}" for t in targets)
        tail = (f"; a margin at or above a claim's target cannot test it (an effect of the target's size would read "
                f"'equivalent'): half the target ({half}) is the default a sweep in rounds takes, so that "
                f"'equivalent' refutes the target with as much room as 'better' refutes no effect")
    return f"margin: {shown} {UNIT} ({why}){tail}."


def again(row: dict) -> str | None:
    """A stored claim row's verdict judged again from its own row: `verdicts.verdict`, then the words
    its stored target and target p's give (a row from before issue 57, without them: none)."""
    claim = Claim.from_row(row)
    judged = replace(claim, verdict=verdict(claim))
    if "p_target" not in row:  # a table written before the target test: its verdicts had no such words
        return judged.verdict
    said = words(judged, row.get("target_delta"), row.get("target_from"), row.get("p_target"),
                 row.get("p_target_adjusted"))
    return "; ".join([judged.verdict, *said])
