"""A report's claims as one forest plot: each claim's Δ with its 95% CI, the paper's Δ beside it where
the paper has one, the equivalence margin shaded, and each verdict written beside its row.

Planned claims are filled markers; exploratory pairs (`analysis.claims.exploratory`, no verdict) hollow
grey ones below a rule, so a signal nobody planned is seen without reading as a claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from analysis.checks import arms
from analysis.report import report
from analysis.stats import power
from analysis.tables.claim import claims_of

PLANNED, EXPLORATORY = "planned", "exploratory"


@dataclass(frozen=True)
class Row:
    """One line of the forest plot."""

    label: str
    """The comparison ('PseDual-GCN vs base')."""
    delta: float
    """Δ, treatment − base, in points."""
    low: float | None
    """The 95% CI's lower end (None where the claim has none)."""
    high: float | None
    """The 95% CI's upper end (None with `low`)."""
    margin: float | None
    """The claim's equivalence margin in points (None: exploratory rows carry none of their own)."""
    kind: str
    """`planned` (a claim with a verdict) or `exploratory`."""
    verdict: str
    """What is written beside the row: the verdict, or the exploratory pair's adjusted p."""
    paper: float | None = None
    """The paper's Δ for the same comparison, where it publishes one."""

    def __post_init__(self) -> None:
        if self.kind not in (PLANNED, EXPLORATORY):
            raise ValueError(f"kind is {PLANNED} or {EXPLORATORY}, got {self.kind!r}")
        if not math.isfinite(self.delta) or (self.low is None) != (self.high is None):
            raise ValueError(f"a row needs a finite Δ and both CI ends or neither: {self}")
        if self.margin is not None and not self.margin > 0:
            raise ValueError(f"a margin is > 0 points, got {self.margin}")


def planned_rows(claims, numbers, labels: list[str] | None = None) -> list[Row]:
    """A claims frame's rows as forest rows: each claim's Δ, CI, margin and verdict, the paper's Δ
    beside it where the paper publishes one (`analysis.stats.power.target`), named by `labels` where
    given, else by its arms and (where the claims span several cells) its cell's group."""
    several = claims["cell"].n_unique() > 1
    out = []
    for i, c in enumerate(claims_of(claims)):
        got = power.target(numbers, c)
        name = arms.comparison(c)
        where = " / ".join(x for x in (c.dataset, c.group) if x)
        name = labels[i] if labels else f"{where}: {name}" if several else name
        if c.controls and "control" not in name:  # a study's arm names may leave the control unsaid
            name += " [control]"
        out.append(Row(name, c.delta, c.ci_low, c.ci_high, c.margin, PLANNED, c.verdict,
                       got[0] if got[1] == "paper" else None))
    return out


def _short(verdict: str) -> str:
    """A verdict cut to fit beside its row: its first clause ('undecided: about 17 more seeds would decide'),
    before what `targets` adds after a `;`."""
    return verdict.split(";", 1)[0].split(" (", 1)[0]


def figure(rows: list[Row], path: str, title: str) -> str:
    """Draw `rows` top to bottom to `path` (PNG); returns the path."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a cluster or in CI
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.transforms import offset_copy

    if not rows:
        raise ValueError("a forest plot needs at least one row")
    planned = [r for r in rows if r.kind == PLANNED]
    ordered = planned + [r for r in rows if r.kind == EXPLORATORY]
    ys = list(range(len(ordered)))[::-1]  # the first row on top
    fig, ax = plt.subplots(figsize=(6.0, 1.2 + 0.48 * len(ordered)), dpi=150)
    margins = {r.margin for r in planned if r.margin is not None}
    for m in margins:  # the equivalence band: a claim whose CI lies inside it can read `equivalent`
        ax.axvspan(-m, m, color="#9ecae1", alpha=0.35, zorder=0, lw=0)
    ax.axvline(0.0, color="#555555", lw=0.8, zorder=1)
    for y, r in zip(ys, ordered):
        colour = "#08519c" if r.kind == PLANNED else "#7f7f7f"
        if r.low is not None:
            ax.plot([r.low, r.high], [y, y], color=colour, lw=2.0, zorder=2, solid_capstyle="butt")
        ax.plot([r.delta], [y], marker="o", ms=7, color=colour, zorder=3,
                markerfacecolor=colour if r.kind == PLANNED else "white", markeredgewidth=1.5)
        if r.paper is not None:
            ax.plot([r.paper], [y + 0.22], marker="D", ms=6, color="#d94801", zorder=3)
    if planned and len(planned) < len(ordered):  # the rule between the claims and the exploratory pairs
        ax.axhline(ys[len(planned) - 1] - 0.5, color="#999999", lw=0.8, ls="--")
    ax.set_yticks(ys, [r.label for r in ordered], fontsize=8.5)
    ends = [v for r in ordered for v in (r.low, r.high, r.delta, r.paper) if v is not None] + [-m for m in margins]
    ends += list(margins)
    span = max(abs(v) for v in ends) * 1.15 or 1.0
    ax.set_xlim(-span, span)
    ax.set_ylim(-0.7, len(ordered) - 0.3)
    ax.set_xlabel("Δ = treatment − base (points of test value accuracy), 95% CI")
    ax.grid(axis="x", alpha=0.3)
    # each row's verdict in the right margin, on the row's own line (never over the data)
    for y, r in zip(ys, ordered):
        ax.annotate(_short(r.verdict), xy=(1.01, y), xycoords=("axes fraction", "data"), va="center", fontsize=8,
                    color="#222222" if r.kind == PLANNED else "#7f7f7f", annotation_clip=False)
    handles = [Line2D([], [], marker="o", color="#08519c", lw=2, label="planned claim: Δ and 95% CI")]
    if len(planned) < len(ordered):
        handles.append(Line2D([], [], marker="o", color="#7f7f7f", markerfacecolor="white", lw=2,
                              label="exploratory pair (no verdict; p Holm over all pairs)"))
    if any(r.paper is not None for r in ordered):
        handles.append(Line2D([], [], marker="D", color="#d94801", lw=0, label="the paper's Δ"))
    handles += [Patch(color="#9ecae1", alpha=0.6, label=f"equivalence margin ±{m:g}") for m in sorted(margins)]
    ax.set_title(title, fontsize=10)
    # the labels on the left and the verdicts on the right lie outside the axes: the saved image's
    # tight box grows to hold them, whatever their length
    # below the figure (the saved image grows to hold it): never over a row
    # under the x label, a fixed distance below the axes whatever the rows: never over a row
    below = offset_copy(ax.transAxes, fig=fig, y=-34, units="points")
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=below,
              ncol=min(len(handles), 2), fontsize=8, frameon=False)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path
