"""A grid sweep's `seeds` rule: seeds run in rounds until every planned comparison is decided.

`seeds: {until: decided, first: 6, step: 4, max: 40}` replaces `grid.seed`: the sweep runs seeds
0..first-1 of every arm, looks at each planned comparison (`compare`) on its complete seed pairs,
and runs the next `step` seeds only of the arms whose comparisons are still undecided, up to `max`
(`psedual/tune/rounds.py` is the searcher; `psedual/seed_rounds.py` the design and its decisions,
`analysis.stats.sequential`). The rule is checked here for what it is alone; its margin against its
target and its spending name are checked by the design when the job loads the file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

UNTIL = {"decided": "every planned comparison decided, or at max seeds"}
"""When a rule stops adding seeds: the only one so far."""


@dataclass(frozen=True)
class SeedRule:
    """Seeds in rounds until decided (a grid sweep's `seeds`)."""

    until: Literal["decided"] = "decided"
    """When to stop: `decided` (every planned comparison decided, or `max` seeds run)."""
    first: int = 6
    """Seeds of the first round (its look at `first` seed pairs); at least 3 (a t statistic needs 2
    degrees of freedom)."""
    step: int = 4
    """Seeds each later round adds to the arms still needed."""
    max: int = 40
    """The most seeds an arm runs: the last look."""
    spending: str = "obrien-fleming"
    """How each test's α is spent over the looks: `obrien-fleming` (Lan–DeMets, the default) or
    `pocock` (`analysis.stats.sequential.SPENDING`)."""
    alpha: float = 0.05
    """Two-sided α of the difference test ("better"/"worse")."""
    alpha_one_sided: float = 0.05
    """One-sided α of each TOST half and of the below-target test."""
    target: float | None = None
    """The Δ (points of accuracy) each comparison is also tested against ("smaller than the
    target?"); none: no below-target test, and the margin defaults to the platform's ±1."""
    margin: float | None = None
    """The equivalence margin ±margin in points of accuracy; none: half the target (or ±1
    without one). A margin at or above the target is said in every verdict."""
    continue_from: str | None = None
    """An earlier experiment in the same storage whose completed seeds of the same arms count as
    this study's first look (`taken`): they are never rerun, and the next round starts after them."""
    taken: int | None = None
    """With continue_from: the seed pairs of the look that experiment already took (16: its 16
    seeds were compared once), counted in the schedule because their α was spent."""

    def __post_init__(self) -> None:
        if self.until not in UNTIL:
            raise ValueError(f"until: unknown rule {self.until!r}; valid: {', '.join(UNTIL)}")
        for name in ("first", "step", "max"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of seeds >= 1, got {value!r}")
        if self.first < 3:
            raise ValueError(f"first must be >= 3 seeds (a t statistic needs 2 degrees of freedom), got {self.first}")
        if not self.first <= self.max <= 1000:
            raise ValueError(f"max must lie in first ({self.first})..1000 seeds, got {self.max}")
        for name in ("target", "margin"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number of points of accuracy, got {value!r}")
        if (self.continue_from is None) != (self.taken is None):
            raise ValueError("give continue_from (the earlier experiment) and taken (the seed pairs of its look) "
                             "together")
        if self.taken is not None and not 3 <= self.taken < self.max:
            raise ValueError(f"taken must lie in 3..max-1 ({self.max - 1}) seed pairs, got {self.taken}")

    @property
    def label(self) -> str:
        """The rule in one line, as a sweep file writes it."""
        said = f"until {self.until}: {self.first} seeds, then {self.step} a round, at most {self.max}"
        if self.continue_from is not None:
            said = (f"until {self.until}: {self.taken} seeds of experiment {self.continue_from} as the first look, "
                    f"then {self.step} a round, at most {self.max}")
        return said
