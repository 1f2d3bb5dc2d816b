"""Seeds until decided: a group-sequential design for paired seed differences (treatment − base, in
points of accuracy) whose error rates hold when a study looks after each round of seeds and stops at
the first decision.

The design fixes, before the first look, the seed counts at which it looks (`looks`) and how it spends
each test's α over them (Lan–DeMets error spending, `SPENDING`: O'Brien–Fleming-type by default,
Pocock-type as an option; the information fraction of a look is its seeds over the last look's). Each
look runs three tests on the paired differences so far, each with its own spending:
- the **difference** test, two-sided at `alpha` (α/2 spent on each side): "better" or "worse";
- the **equivalence** test at ±margin, two one-sided tests (TOST), each half spending its own
  `alpha_one_sided`: "equivalent" when both halves reject at the same look (the repeated
  1 − 2α interval lies inside ±margin);
- the **below-target** test, one-sided at `alpha_one_sided`: "smaller than the target Δ".
Stopping early only removes chances to reject, so each test keeps its error rate under any stopping
rule that uses the data (`stop_on` says which decisions stop a study).

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
three boundaries' error rates on a fresh simulation; bench/sequential_sim.py checks the decisions
themselves; docs/analysis.md ("Seeds until decided") states the rules.
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

from analysis.stats.equivalence import DEFAULT_MARGIN

UNIT = "points of accuracy"
"""the unit of every Δ, margin and target here: percentage points of accuracy (1 = one percent)"""
MARGIN_FLOOR = 0.05
"""margins below this many points are refused: no seed budget resolves them, and 0.01 is usually 1% typed as a fraction"""
MARGIN_CEILING = 50.0
"""margins at or above this many points are refused: a band of ±50 points admits almost any accuracy difference"""
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


def _points(x: float) -> str:
    return f"{x:g}"


def check_margin(margin: float, target: float | None = None, target_from: str = "the target") -> str | None:
    """Refuse, in one line naming the unit, a margin no user could mean; return the note a verdict
    carries where the margin cannot test the target (None where it can or there is no target)."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float, np.integer, np.floating)) or not math.isfinite(margin):
        raise ValueError(f"margin {margin!r} is not a finite number of {UNIT}")
    if margin <= 0:
        raise ValueError(f"margin {margin:g} {UNIT} must be above 0: it is the half-width of the equivalence band ±margin")
    if margin >= MARGIN_CEILING:
        raise ValueError(f"margin {margin:g} {UNIT} is refused: a band of ±{margin:g} points admits almost any "
                         f"accuracy difference; give one below {MARGIN_CEILING:g} points")
    if margin < MARGIN_FLOOR:
        meant = margin * 100
        hint = f"; did you mean {meant:g} (a percent)?" if MARGIN_FLOOR <= meant < MARGIN_CEILING else ""
        raise ValueError(f"margin {margin:g} {UNIT} is refused: below {MARGIN_FLOOR:g} points no seed budget "
                         f"could show it{hint}")
    if target is not None and math.isfinite(target) and margin >= abs(target):
        return f"±{_points(margin)} includes {target_from} {target:+g}: this does not test it"
    return None


def default_margin(target: float | None) -> tuple[float, str]:
    """The margin where none is given, and why: half the target Δ where there is one, else the
    platform's default (analysis.stats.equivalence.DEFAULT_MARGIN)."""
    if target is None or not math.isfinite(target) or abs(target) < 2 * MARGIN_FLOOR:
        return DEFAULT_MARGIN, f"±{_points(DEFAULT_MARGIN)} {UNIT}: the platform's default where no target Δ is stated"
    margin = abs(target) / 2.0
    return margin, (f"±{_points(margin)} {UNIT}, half the target {target:+g}: a margin at or above the target "
                    f"would call an effect of the target's size equivalent, and at half of it an equivalence "
                    f"verdict refutes the target with as much room as a difference verdict refutes no effect")


@dataclass(frozen=True)
class Decisions:
    """The decisions at one look, over one or many studies (arrays of the same shape)."""

    better: np.ndarray
    """the difference test's upper side rejected: Δ > 0"""
    worse: np.ndarray
    """its lower side rejected: Δ < 0"""
    equivalent: np.ndarray
    """both TOST halves rejected at this look: |Δ| < margin"""
    below_target: np.ndarray
    """the below-target test rejected: Δ < target (all False without a target)"""
    statistic: np.ndarray
    """t of Δ = 0"""
    stop: np.ndarray
    """a decision the design stops on was reached"""


def decisions(design: SequentialDesign, look_index: int, mean, sd, margin: float,
              target: float | None = None) -> Decisions:
    """The decisions at look `look_index` (0-based) for studies with these mean and sd of their
    paired differences at that look's seeds (arrays or scalars): the one decision path, used by
    `decide` and by the simulations."""
    b = boundaries(design)
    n = design.looks[look_index]
    mean, sd = np.asarray(mean, float), np.asarray(sd, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = sd / math.sqrt(n)
        spread = se > 0  # no spread: no t statistic, nothing decided
        t = np.where(spread, mean / se, np.nan)
        c, e = b.t_two_sided[look_index], b.t_one_sided[look_index]
        better = spread & (t >= c)
        worse = spread & (t <= -c)
        equivalent = spread & ((mean + margin) / se >= e) & ((mean - margin) / se <= -e)
        below = spread & ((mean - target) / se <= -e) if target is not None else np.zeros(mean.shape, bool)
    stop = np.zeros(mean.shape, bool)
    for name, reached in (("difference", better | worse), ("equivalence", equivalent), ("target", below)):
        if name in design.stop_on:
            stop |= reached
    return Decisions(better, worse, equivalent, below, t, stop)


@dataclass(frozen=True)
class Look:
    """One look of a claim: its figures, boundaries and verdict (a row of the looks table)."""

    look: int
    """1-based look number"""
    of: int
    """looks the design plans"""
    seeds: int
    """seed pairs at this look"""
    delta: float
    """mean paired difference, treatment − base, in points of accuracy"""
    ci: tuple[float, float]
    """repeated (1 − α) confidence interval of Δ: Δ ± boundary × se, valid across all looks together"""
    statistic: float
    """t of Δ = 0 (nan without spread)"""
    boundary: float
    """the difference test's |t| boundary at this look (calibrated to t)"""
    spent_alpha: float
    """the difference test's α spent by this look, both sides"""
    margin: float
    """the equivalence margin ±margin, in points of accuracy"""
    equivalence_ci: tuple[float, float]
    """repeated (1 − 2α one-sided) interval: inside ±margin means equivalent"""
    equivalence_boundary: float
    """each one-sided test's t boundary at this look"""
    spent_alpha_one_sided: float
    """a one-sided test's α spent by this look"""
    target: float | None
    """the target Δ in points of accuracy (None: no below-target test)"""
    better: bool
    """Δ > 0 shown"""
    worse: bool
    """Δ < 0 shown"""
    equivalent: bool
    """|Δ| < margin shown"""
    below_target: bool
    """Δ < target shown"""
    decided: bool
    """a decision the design stops on was reached: the study stops here"""
    verdict: str
    """e.g. "better at look 3 of 6 (16 seeds; O'Brien–Fleming spending, two-sided α 0.05)" """

    def row(self, claim: str) -> dict:
        """The look as a row of a looks table, under `claim`'s name (flat: the intervals in two columns)."""
        row = {"claim": claim, **dataclasses.asdict(self)}
        row["ci_low"], row["ci_high"] = row.pop("ci")
        row["equivalence_low"], row["equivalence_high"] = row.pop("equivalence_ci")
        return row

    def __post_init__(self) -> None:
        if not 1 <= self.look <= self.of:
            raise ValueError(f"look {self.look} outside 1..{self.of}")
        if self.better and self.worse:
            raise ValueError("a look cannot be both better and worse")


def _diffs(values) -> np.ndarray:
    """A flat array of paired differences from either the current differences or one array per look."""
    if isinstance(values, (list, tuple)) and values and all(np.ndim(v) == 1 for v in values):
        values = np.concatenate([np.asarray(v, float) for v in values])
    d = np.asarray(values, float)
    if d.ndim != 1:
        raise ValueError(f"paired differences must be one array (or one per look), got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError(f"paired differences must be finite {UNIT}; got {d[~np.isfinite(d)][:3].tolist()}")
    return d


def _verdict(design: SequentialDesign, look: int, seeds: int, d: Decisions, margin: float,
             target: float | None, target_from: str, note: str | None) -> str:
    of = len(design.looks)
    where = f"at look {look} of {of} ({seeds} seeds; {design.label})"
    one = f"one-sided α {design.alpha_one_sided:g}"
    found = []
    if bool(d.better[()]) or bool(d.worse[()]):
        found.append(("better " if bool(d.better[()]) else "worse ") + where)
    if bool(d.equivalent[()]):
        inside = f"equivalent within ±{_points(margin)} {UNIT}"
        found.append(f"{inside} ({one} a half): real, and smaller than the margin" if found
                     else f"{inside} at look {look} of {of} ({seeds} seeds; "
                          f"{SPENDING[design.spending].label} spending, {one} a half)")
    if bool(d.below_target[()]):
        below = f"smaller than {target_from} {target:+g} {UNIT}"
        found.append(f"{below} ({one})" if found else
                     f"{below} at look {look} of {of} ({seeds} seeds; {SPENDING[design.spending].label} spending, {one})")
    if not found:
        if look < of:
            found.append(f"undecided at look {look} of {of} ({seeds} seeds): the next look at {design.looks[look]} seeds")
        else:
            found.append(f"undecided at {seeds} seeds (look {look} of {of}; {design.label})")
    if note:
        found.append(note)
    return "; ".join(found)


def decide(design: SequentialDesign, diffs, look_index: int, margin: float | None = None,
           target: float | None = None, target_from: str = "the target") -> Look:
    """The look `look_index` (0-based) of a claim: `diffs` are its paired differences (treatment −
    base, points of accuracy) so far, flat or one array per look, exactly the look's planned seed
    count (`design.with_seeds` analyses a look that fell short); `margin` in points (None: the
    `default_margin` for the target); `target` the Δ the claim is tested against (None: no
    below-target test), named `target_from` in the verdict (e.g. "the paper's")."""
    if not 0 <= look_index < len(design.looks):
        raise ValueError(f"look_index {look_index} outside 0..{len(design.looks) - 1} (the design has {len(design.looks)} looks)")
    if target is not None and not math.isfinite(target):
        raise ValueError(f"target {target!r} is not a finite number of {UNIT}")
    if margin is None:
        margin = default_margin(target)[0]
    note = check_margin(margin, target, target_from)
    d = _diffs(diffs)
    seeds = design.looks[look_index]
    if d.size != seeds:
        raise ValueError(f"look {look_index + 1} of the design is at {seeds} seed pairs, got {d.size}: "
                         f"analyse the actual count with design.with_seeds({look_index}, {d.size})")
    b = boundaries(design)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    found = decisions(design, look_index, mean, sd, margin, target)
    se = sd / math.sqrt(seeds)
    c, e = float(b.t_two_sided[look_index]), float(b.t_one_sided[look_index])
    return Look(
        look=look_index + 1, of=len(design.looks), seeds=seeds, delta=mean, ci=(mean - c * se, mean + c * se),
        statistic=float(found.statistic), boundary=c, spent_alpha=float(b.spent_two_sided[look_index]),
        margin=float(margin), equivalence_ci=(mean - e * se, mean + e * se), equivalence_boundary=e,
        spent_alpha_one_sided=float(b.spent_one_sided[look_index]), target=target,
        better=bool(found.better), worse=bool(found.worse), equivalent=bool(found.equivalent),
        below_target=bool(found.below_target), decided=bool(found.stop),
        verdict=_verdict(design, look_index + 1, seeds, found, margin, target, target_from, note))


def run_looks(design: SequentialDesign, diffs, margin: float | None = None, target: float | None = None,
              target_from: str = "the target") -> list[Look]:
    """Every look the differences reach, in seed order, up to and including the first decided one:
    the study as the design runs it (its last Look is its verdict so far)."""
    d = _diffs(diffs)
    out: list[Look] = []
    for k, n in enumerate(design.looks):
        if n > d.size:
            break
        out.append(decide(design, d[:n], k, margin, target, target_from))
        if out[-1].decided:
            break
    return out


@dataclass(frozen=True)
class Outcomes:
    """Many studies run by a design (arrays over the studies): what each reached before it stopped."""

    seeds: np.ndarray
    """seed pairs each study ran: those of its first decided look, else the last look's"""
    look: np.ndarray
    """1-based look it stopped at"""
    better: np.ndarray
    """reached "better" at some look up to its stop"""
    worse: np.ndarray
    """reached "worse" likewise"""
    equivalent: np.ndarray
    """reached "equivalent" likewise"""
    below_target: np.ndarray
    """reached "smaller than the target" likewise"""
    decided: np.ndarray
    """stopped on a decision before running out of looks (or at the last one)"""


def simulate(design: SequentialDesign, diffs: np.ndarray, margin: float | None = None,
             target: float | None = None) -> Outcomes:
    """Run the design on many studies at once: `diffs` (studies × at least the last look's seeds)
    are each study's paired differences in seed order; every look goes through `decisions`, the
    path `decide` takes. For simulations (bench/sequential_sim.py) and the expected seeds of a plan."""
    x = np.asarray(diffs, float)
    if x.ndim != 2 or x.shape[1] < design.looks[-1]:
        raise ValueError(f"simulate needs studies × at least {design.looks[-1]} seeds, got shape {x.shape}")
    if margin is None:
        margin = default_margin(target)[0]
    check_margin(margin, target)
    studies = x.shape[0]
    total, squares = np.cumsum(x, axis=1), np.cumsum(x**2, axis=1)
    running = np.ones(studies, bool)
    seeds = np.full(studies, design.looks[-1])
    look = np.full(studies, len(design.looks))
    ever = {name: np.zeros(studies, bool) for name in ("better", "worse", "equivalent", "below_target", "decided")}
    for k, n in enumerate(design.looks):
        mean = total[:, n - 1] / n
        sd = np.sqrt(np.maximum(squares[:, n - 1] - n * mean**2, 0.0) / (n - 1))
        found = decisions(design, k, mean, sd, margin, target)
        for name, reached in (("better", found.better), ("worse", found.worse), ("equivalent", found.equivalent),
                              ("below_target", found.below_target), ("decided", found.stop)):
            ever[name] |= running & reached
        stopping = running & found.stop
        seeds[stopping], look[stopping] = n, k + 1
        running &= ~found.stop
    return Outcomes(seeds=seeds, look=look, **ever)


@dataclass(frozen=True)
class Operating:
    """A design's operating characteristics at one true Δ and sd, by simulation (for a plan)."""

    delta: float
    """the true Δ simulated, in points of accuracy"""
    sd: float
    """the sd of a seed difference simulated, in points of accuracy"""
    studies: int
    """simulated studies"""
    better: float
    """P(better reached)"""
    worse: float
    """P(worse reached)"""
    equivalent: float
    """P(equivalent reached)"""
    below_target: float
    """P(smaller than the target reached)"""
    undecided: float
    """P(no stopping decision by the last look)"""
    expected_seeds: float
    """mean seed pairs run"""
    expected_seeds_se: float
    """its Monte Carlo standard error"""
    max_seeds: int
    """the most seed pairs the design runs (its last look)"""


def operating(design: SequentialDesign, delta: float, sd: float, margin: float | None = None,
              target: float | None = None, studies: int = 20_000, seed: int = 0) -> Operating:
    """Simulate `studies` studies with normal seed differences (mean `delta`, sd `sd`) through the
    design: the probabilities of each decision and the expected seeds (what a plan prints beside
    the fixed design; multiply by trial-hours for its cost)."""
    if not (math.isfinite(sd) and sd > 0):
        raise ValueError(f"sd {sd!r} must be a positive number of {UNIT}")
    x = np.random.default_rng(seed).normal(delta, sd, (studies, design.looks[-1]))
    out = simulate(design, x, margin, target)
    return Operating(
        delta=float(delta), sd=float(sd), studies=studies, better=float(out.better.mean()),
        worse=float(out.worse.mean()), equivalent=float(out.equivalent.mean()),
        below_target=float(out.below_target.mean()), undecided=float(1.0 - out.decided.mean()),
        expected_seeds=float(out.seeds.mean()), expected_seeds_se=float(out.seeds.std(ddof=1) / math.sqrt(studies)),
        max_seeds=design.looks[-1])
