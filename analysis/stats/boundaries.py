"""Seeds until decided, the design: a group-sequential design for paired seed differences
(treatment − base, in points of accuracy) fixed before its first look, and its boundaries.

The design fixes, before the first look, the seed counts at which it looks (`looks`) and how it spends
each test's α over them (Lan–DeMets error spending, `SPENDING`: O'Brien–Fleming-type by default,
Pocock-type as an option; the information fraction of a look is its seeds over the planned maximum).
Each look runs three tests (`analysis.stats.decisions`), each with its own spending: the two-sided
**difference** test at `alpha`, the **equivalence** test at ±margin (TOST, each half at
`alpha_one_sided`) and the one-sided **below-target** test at `alpha_one_sided`.

Boundaries for t, not z. The normal-theory boundaries (`normal_boundaries`, gsDesign's recursive
integration from the `gsdesign` package, a brentq root per look) hold for z statistics; with 6-40
seeds the paired t statistic has heavier tails, and its values at different looks are not jointly
multivariate t (each look estimates the sd from its own seeds, with its own degrees of freedom). So the
boundaries are calibrated to the t statistics by simulating their exact joint null law (`null_t`:
normal differences; under the null the statistic's law does not depend on the sd or on the shifted
Δ, so one simulation serves every test): look by look, the boundary is the quantile of the statistic
over the simulated studies still running that spends exactly that look's α increment. A first look's
boundary is exact (the t quantile), and a look whose increment would leave fewer than `MIN_CROSSINGS`
simulated crossings takes the nominal level of the normal boundary at its own degrees of freedom
(the mass involved is below MIN_CROSSINGS / calibration_paths). `calibration` compares the
three boundaries' error rates on a fresh simulation.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from gsdesign import h1, hupdate
from scipy import optimize, stats

MIN_CROSSINGS = 50
"""simulated crossings below which a look's boundary takes the nominal level of the normal boundary"""
GRID_POINTS = 18
"""gsDesign's `r`: grid points of the recursive integration (its default; 6r − 1 points a look)"""


@dataclass(frozen=True)
class Spending:
    """An α-spending function: the cumulative α spent by information fraction t of a test at level α."""

    label: str
    """its name in a verdict, e.g. "O'Brien–Fleming" """
    cumulative: Callable[[np.ndarray, float], np.ndarray]
    """(t, α) → α spent by t, for t in (0, 1]; α at t = 1"""


def _obrien_fleming(t: np.ndarray, alpha: float) -> np.ndarray:
    """Lan–DeMets O'Brien–Fleming-type: 2 − 2Φ(z_{1−α/2} / √t) (gsDesign's sfLDOF): almost nothing spent
    early, so early looks stop only on large effects and the last look keeps nearly the fixed design's level."""
    return 2.0 * stats.norm.sf(stats.norm.isf(alpha / 2.0) / np.sqrt(t))


def _pocock(t: np.ndarray, alpha: float) -> np.ndarray:
    """Lan–DeMets Pocock-type: α ln(1 + (e − 1) t) (gsDesign's sfLDPocock): near-equal boundaries, more
    early stops, a stricter last look."""
    return alpha * np.log1p((math.e - 1.0) * t)


SPENDING: dict[str, Spending] = {
    "obrien-fleming": Spending("O'Brien–Fleming", _obrien_fleming),
    "pocock": Spending("Pocock", _pocock),
}
"""the spending functions by name (SequentialDesign.spending)"""

DECISIONS = {
    "difference": "better or worse (the two-sided difference test)",
    "equivalence": "equivalent within ±margin (both TOST halves at one look)",
    "target": "smaller than the target Δ (the one-sided below-target test)",
}
"""the decisions a study can stop on (SequentialDesign.stop_on)"""


def schedule(first: int, step: int, max_seeds: int, taken: Sequence[int] = ()) -> tuple[int, ...]:
    """The seed counts of each look: every `step` seeds from `first` (or, where looks were already
    `taken`, from the last of them) up to `max_seeds`, which is always the last look. `taken` counts
    looks a study already made (e.g. (16,): a study that has looked at its 16 seeds), in the schedule
    because their α was spent whether or not it was counted."""
    for name, value in (("first", first), ("step", step), ("max_seeds", max_seeds)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"schedule: {name} must be a whole number of seeds >= 1, got {value!r}")
    taken = tuple(sorted(int(n) for n in taken))
    start = taken[-1] + step if taken else first
    looks = [*taken, *range(start, max_seeds, step), max_seeds]
    return tuple(dict.fromkeys(n for n in looks if n <= max_seeds))


@dataclass(frozen=True)
class SequentialDesign:
    """A group-sequential design over paired seed differences, fixed before its first look."""

    looks: tuple[int, ...]
    """seed pairs at each look, increasing; the last is the most seeds the study runs (`schedule` makes one)"""
    alpha: float = 0.05
    """two-sided α of the difference test (α/2 spent on each side)"""
    alpha_one_sided: float = 0.05
    """one-sided α of each TOST half and of the below-target test (0.05: the usual 90% TOST interval)"""
    spending: str = "obrien-fleming"
    """the spending function, a name in SPENDING"""
    stop_on: tuple[str, ...] = ("difference", "equivalence", "target")
    """the decisions that stop the study, names in DECISIONS (each test's error rate holds whichever stop it)"""
    planned_max: int | None = None
    """the seed count the spending is planned over (None: the last look's); a last look that falls short
    of it spends all the remaining α, and the earlier looks keep their boundaries"""
    calibration_paths: int = 400_000
    """simulated null studies the t boundaries are calibrated on (boundary error on α about √(α / paths))"""
    calibration_seed: int = 20_261_128
    """seed of that simulation: the boundaries are a fixed function of the design"""

    def __post_init__(self) -> None:
        looks = tuple(self.looks)
        if not looks or any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) for n in looks):
            raise ValueError(f"looks must be whole seed counts, got {self.looks!r}")
        if looks[0] < 3:
            raise ValueError(f"the first look needs at least 3 seed pairs (a t statistic with 2 degrees of freedom), got {looks[0]}")
        if any(b <= a for a, b in zip(looks, looks[1:])):
            raise ValueError(f"looks must increase strictly, got {list(looks)}")
        object.__setattr__(self, "looks", tuple(int(n) for n in looks))
        object.__setattr__(self, "stop_on", tuple(self.stop_on))
        if self.planned_max is None:
            object.__setattr__(self, "planned_max", looks[-1])
        if isinstance(self.planned_max, bool) or not isinstance(self.planned_max, (int, np.integer)) \
                or self.planned_max < looks[0]:
            raise ValueError(f"planned_max must be a whole seed count >= the first look ({looks[0]}), "
                             f"got {self.planned_max!r}")
        for name in ("alpha", "alpha_one_sided"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0.0 < value < 0.5):
                raise ValueError(f"{name} must lie in (0, 0.5), got {value!r}")
        if self.spending not in SPENDING:
            raise ValueError(f"unknown spending {self.spending!r}: valid are {', '.join(SPENDING)}")
        unknown = [s for s in self.stop_on if s not in DECISIONS]
        if unknown or not self.stop_on:
            raise ValueError(f"stop_on {list(self.stop_on)!r}: give one or more of {', '.join(DECISIONS)}")
        if self.calibration_paths < 10_000:
            raise ValueError(f"calibration_paths must be >= 10000, got {self.calibration_paths}")

    @classmethod
    def from_rule(cls, first: int, step: int, max_seeds: int, taken: Sequence[int] = (), **fields) -> SequentialDesign:
        """The design whose looks are `schedule(first, step, max_seeds, taken)`."""
        return cls(looks=schedule(first, step, max_seeds, taken), **fields)

    def with_seeds(self, look_index: int, seeds: int) -> SequentialDesign:
        """The same design with look `look_index` (0-based) at `seeds` pairs: a look whose count fell
        short of the plan (failed trials are not seeds) is analysed at its actual count, which
        Lan–DeMets spending allows as long as the count does not depend on the data. The spending
        stays planned over `planned_max`, so the looks before it keep their boundaries."""
        looks = list(self.looks)
        looks[look_index] = seeds
        return dataclasses.replace(self, looks=tuple(looks))

    @property
    def label(self) -> str:
        """e.g. "O'Brien–Fleming spending, two-sided α 0.05" """
        return f"{SPENDING[self.spending].label} spending, two-sided α {self.alpha:g}"

    def describe(self) -> str:
        """One line: the spending, both α's and the looks."""
        return (f"{self.label} (one-sided α {self.alpha_one_sided:g} a TOST half and for the target); "
                f"looks at {', '.join(map(str, self.looks))} seeds; stops on {', '.join(self.stop_on)}")


@dataclass(frozen=True)
class Boundaries:
    """A design's boundaries, look by look (arrays over the looks)."""

    seeds: np.ndarray
    """seed pairs at each look"""
    fraction: np.ndarray
    """information fraction: seeds over the planned maximum"""
    spent_two_sided: np.ndarray
    """cumulative α of the difference test spent by each look (both sides together)"""
    spent_one_sided: np.ndarray
    """cumulative α of a one-sided test (a TOST half, the target test) spent by each look"""
    z_two_sided: np.ndarray
    """normal-theory boundary of |z| for the difference test"""
    z_one_sided: np.ndarray
    """normal-theory boundary of z for a one-sided test"""
    t_two_sided: np.ndarray
    """the boundary of |t| the difference test uses (calibrated to t at each look's seeds)"""
    t_one_sided: np.ndarray
    """the boundary of t each one-sided test uses (calibrated likewise)"""


def spent(design: SequentialDesign, alpha: float) -> np.ndarray:
    """Cumulative α spent by each look of a test at level `alpha` (one side's α): the spending
    function at each look's information fraction (`fraction`); the last look spends what is left."""
    cumulative = SPENDING[design.spending].cumulative(fraction(design), alpha)
    cumulative[-1] = alpha
    return cumulative


def fraction(design: SequentialDesign) -> np.ndarray:
    """Each look's information fraction: its seeds over the planned maximum, at most 1."""
    return np.minimum(np.asarray(design.looks, float) / design.planned_max, 1.0)


def _increments(cumulative: np.ndarray) -> np.ndarray:
    return np.diff(cumulative, prepend=0.0)


def normal_boundaries(seeds: Sequence[int], cumulative: np.ndarray, two_sided: bool) -> np.ndarray:
    """The z boundaries that spend `cumulative` (one side's cumulative α at each look) for a
    statistic with information proportional to `seeds`: gsDesign's recursive numerical integration
    (`gsdesign.h1`/`hupdate`), with each look's boundary the root of its upper-crossing probability.
    Two-sided: symmetric, a study that crossed the lower side stopped too."""
    info = np.asarray(seeds, float)
    boundaries = []
    grid = None
    for k, increment in enumerate(_increments(np.asarray(cumulative, float))):
        if increment <= 0.0:  # nothing left to spend (a look past the planned maximum): it cannot reject
            bound = math.inf
        elif k == 0:
            bound = float(stats.norm.isf(increment))
        else:
            z, _, h = grid
            now, before = info[k], info[k - 1]

            def excess(b: float) -> float:
                crossing = stats.norm.sf((b * math.sqrt(now) - z * math.sqrt(before)) / math.sqrt(now - before))
                return float(h @ crossing) - increment

            bound = float(optimize.brentq(excess, -10.0, 40.0, xtol=1e-10))
        lower = -bound if two_sided else -np.inf
        grid = (h1(GRID_POINTS, 0.0, info[0], lower, bound) if k == 0
                else hupdate(GRID_POINTS, 0.0, info[k], lower, bound, 0.0, info[k - 1], grid))
        boundaries.append(bound)
    return np.array(boundaries)


def null_t(seeds: Sequence[int], paths: int, seed: int) -> np.ndarray:
    """Paired t statistics (paths × looks) of `paths` null studies with normal differences, at each
    look's seed count, drawn from their exact joint law without drawing each seed: a look's new
    seeds add a normal sum and an independent chi-square within-sum of squares. Each look draws
    from its own stream (`seed`, look), so re-planning later looks leaves earlier looks' draws, and
    so their boundaries, as they were."""
    n = np.asarray(seeds, float)
    added = np.diff(n, prepend=0.0)
    sums = np.empty((paths, n.size))
    within = np.zeros((paths, n.size))
    for k, size in enumerate(added):
        rng = np.random.default_rng([seed, k])
        sums[:, k] = rng.standard_normal(paths) * math.sqrt(size)
        if size > 1:
            within[:, k] = rng.chisquare(size - 1, paths)
    total = np.cumsum(sums, axis=1)
    squares = np.cumsum(within + sums**2 / added, axis=1) - total**2 / n
    return total / np.sqrt(n * squares / (n - 1))


def _calibrate(t: np.ndarray, seeds: np.ndarray, cumulative: np.ndarray, z: np.ndarray, two_sided: bool) -> np.ndarray:
    """t boundaries spending `cumulative` (one side's) over the simulated null statistics `t`."""
    paths = t.shape[0]
    sides = 2.0 if two_sided else 1.0
    running = np.ones(paths, bool)
    boundaries = []
    for k, increment in enumerate(_increments(cumulative)):
        value = np.abs(t[:, k]) if two_sided else t[:, k]
        crossings = int(round(sides * increment * paths))
        if increment <= 0.0:
            bound = math.inf
        elif k == 0:  # nothing stopped before: the t quantile is exact
            bound = float(stats.t.isf(increment, seeds[0] - 1))
        elif crossings < MIN_CROSSINGS:
            bound = float(stats.t.isf(stats.norm.sf(z[k]), seeds[k] - 1))
        else:
            alive = np.sort(value[running])
            i = alive.size - crossings  # midway between the last value kept and the first crossing
            bound = float((alive[i - 1] + alive[i]) / 2.0) if i > 0 else float(alive[0])
        boundaries.append(bound)
        running &= value < bound
    return np.array(boundaries)


@functools.lru_cache(maxsize=64)
def boundaries(design: SequentialDesign) -> Boundaries:
    """The design's boundaries: normal theory, then calibrated to its t statistics (cached per design)."""
    seeds = np.asarray(design.looks, float)
    side_two = spent(design, design.alpha / 2.0)
    side_one = spent(design, design.alpha_one_sided)
    z_two = normal_boundaries(design.looks, side_two, two_sided=True)
    z_one = normal_boundaries(design.looks, side_one, two_sided=False)
    t = null_t(design.looks, design.calibration_paths, design.calibration_seed)
    return Boundaries(
        seeds=seeds, fraction=fraction(design), spent_two_sided=2.0 * side_two, spent_one_sided=side_one,
        z_two_sided=z_two, z_one_sided=z_one,
        t_two_sided=_calibrate(t, seeds, side_two, z_two, two_sided=True),
        t_one_sided=_calibrate(t, seeds, side_one, z_one, two_sided=False))


def calibration(design: SequentialDesign, paths: int = 400_000, seed: int = 1) -> dict[str, np.ndarray]:
    """The calibration shown: for each boundary set (normal z applied to t, the normal boundary's
    nominal level at each look's degrees of freedom, and the calibrated t), the cumulative null
    crossing rate by each look on a fresh simulation (`paths` studies, `seed`), beside the α spent."""
    b = boundaries(design)
    t = null_t(design.looks, paths, seed)
    nominal_two = stats.t.isf(stats.norm.sf(b.z_two_sided), b.seeds - 1)
    nominal_one = stats.t.isf(stats.norm.sf(b.z_one_sided), b.seeds - 1)
    out = {"seeds": b.seeds, "spent_two_sided": b.spent_two_sided, "spent_one_sided": b.spent_one_sided}
    for name, two, one in (("z", b.z_two_sided, b.z_one_sided), ("nominal", nominal_two, nominal_one),
                           ("t", b.t_two_sided, b.t_one_sided)):
        out[f"{name}_two_sided"] = np.mean(np.maximum.accumulate(np.abs(t) >= two, axis=1), axis=0)
        out[f"{name}_one_sided"] = np.mean(np.maximum.accumulate(t >= one, axis=1), axis=0)
    return out
