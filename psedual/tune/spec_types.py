"""A sweep file's types: `SweepSpec` and the records inside it, each top-level key declared once.

A top-level key of a sweep file is a field of `SweepSpec`, and that field is its only declaration:
its annotation is the type its value must have (a section's shape: a mapping or a list), its
docstring says what it does, and its `rules` (`Rules`) say whether it is a section (left empty,
it says nothing), what a section's entries are, and in which searcher it acts (a key that acts
only in an Optuna sweep is refused in a grid, and the other way round, with its `why`). `KEYS`
reads them back, in order; the loader (`space.py`) and the value checks (`space_values.py`) both
import this module and name keys from it, never from a list of their own.
"""

from __future__ import annotations

import itertools
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Literal, get_type_hints

from psedual.reexamine.config import BASE
from psedual.train.config import TrainConfig
from psedual.train.resources import Resources
from psedual.train.trackers import TRACKERS
from psedual.tune.seed_rule import SeedRule

MODES = ("optuna", "grid")
"""The searchers: `optuna` (TPE, seeded, with ASHA) or `grid` (every combination, no early stop)."""
Mode = Literal[MODES]
DISTRIBUTIONS = ("uniform", "loguniform", "int", "choice")
"""What an Optuna sweep's `search` key draws from."""
PSEDUAL_PREFIX = "psedual."
"""Keys of PseDual's knobs: they apply to trials whose variant is not `base`."""
SWEEPABLE = TrainConfig.flat_keys()
"""Dotted keys a sweep file may set."""
ARM = "arm"
"""The key under which a grid sweep's `arms` reach a trial (one arm's mapping)."""


@dataclass(frozen=True)
class Rules:
    """How a top-level key is read, beside its field's type."""

    section: bool = False
    """A mapping or list of entries: left empty (`fixed:` with every line commented out) it says
    nothing, as if absent."""
    entries: str = ""
    """A section's entries, in words (`of config keys to values`): said when its shape is wrong."""
    only: Mode | None = None
    """The searcher the key acts in (`optuna`, `grid`); None: both. Given in the other, it is
    refused: written, it would read as if it acted."""
    why: str = ""
    """What the key is, said when it is refused in the other searcher (`only`)."""
    least: int | None = None
    """The smallest number the key takes (`num_samples`: 1), said when a smaller one is given."""

    def __post_init__(self) -> None:
        if self.only is not None and (self.only not in MODES or not self.why):
            raise ValueError(f"rules: only must be one of {', '.join(MODES)} and say why, got {self}")
        if self.entries and not self.section:
            raise ValueError(f"rules: entries are a section's, got {self}")


def key(default: object = MISSING, *, factory: object = MISSING, **rules: object):
    """A SweepSpec field with its `Rules` (`rules` are Rules' fields)."""
    return field(default=default, default_factory=factory, metadata={"rules": Rules(**rules)})


@dataclass(frozen=True)
class Key:
    """One top-level key of a sweep file, as `SweepSpec`'s field declares it."""

    name: str
    """The key."""
    annotation: object
    """Its value's type (a section's shape: a mapping or a list)."""
    rules: Rules
    """Its section, entries and searcher rules."""
    default: object
    """Its value when the file leaves it out (`MISSING`: it must be given)."""

    @property
    def nested(self) -> type | None:
        """The record a mapping value is built into (`resources`, `seeds_for`), if any."""
        kinds = [self.annotation, *getattr(self.annotation, "__args__", ())]
        return next((k for k in kinds if isinstance(k, type) and hasattr(k, "__dataclass_fields__")), None)


ASHA_ONLY = "ASHA's, which stops Optuna trials early (a grid trains every trial to its last epoch)"
"""Why ASHA's keys act in an Optuna sweep only."""
PAIRED = "a grid sweep (a paired ablation: every arm at every seed)"
"""Why the comparisons' keys act in a grid only."""


@dataclass(frozen=True)
class SweepComparison:
    """One comparison the main job makes after the sweep (`psedual analyze compare`): `treatments`
    against `base`, the arms being the values of `arm`, over the trials that match `where`."""

    arm: str = "variant"
    """The key whose values are the arms (`variant`, `psedual.fusion`, `psedual.epsilon_schedule`)."""
    base: str = BASE
    """The reference arm's value."""
    treatments: tuple = ()
    """The arms compared with `base`; none: every other value of `arm` the sweep has."""
    where: dict = field(default_factory=dict)
    """Keep only the trials with these values (`{psedual.fusion: scheduled}`); a base trial has no
    `psedual.*` values and matches any."""
    margin: float = 1.0
    """The equivalence margin in points (`analyze compare --margin`): a claim whose TOST shows
    |Δ| < margin reads `equivalent within ±margin`."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "treatments", tuple(self.treatments if isinstance(self.treatments, (list, tuple))
                                                     else [self.treatments]))
        if not isinstance(self.where, dict):
            raise ValueError(f"where: expected a mapping of keys to values, got {self.where!r}")
        if isinstance(self.margin, bool) or not isinstance(self.margin, (int, float)) or not 0 < self.margin < 100:
            raise ValueError(f"margin: expected a positive number of points below 100, got {self.margin!r}")
        if self.base in self.treatments:
            raise ValueError(f"treatments {list(self.treatments)} must exclude base {self.base!r}")


@dataclass(frozen=True)
class SeedsFor:
    """A grid's seeds chosen for what they must detect: as many as a paired t-test over seeds needs
    to detect `delta` with 80% power at a two-sided 0.05, at the spread of the per-seed Δ (`sd`, or
    an earlier experiment's: `--plan_from`), capped at `max`; resolved when the job plans or starts."""

    delta: float
    """The Δ (points) the comparisons must detect."""
    max: int = 20
    """The most seeds the sweep may run (the plan says when the cap binds)."""
    sd: float | None = None
    """The sd (points) of the per-seed Δ expected; none: `--plan_from` or `--plan_sd` must give it."""

    def __post_init__(self) -> None:
        if not 0 < abs(self.delta) < 100 or not 2 <= self.max <= 1000 or (self.sd is not None and self.sd <= 0):
            raise ValueError(f"delta must be a nonzero Δ in points, max 2..1000 seeds, sd > 0; got {self}")


@dataclass(frozen=True)
class SweepSpec:
    """One experiment: fixed values, what is searched (or gridded), how, and where it runs."""

    name: str = key()
    """Experiment name: the results partition and the `--resume` handle."""
    mode: str = key("optuna")
    """`optuna` (TPE, seeded, with ASHA) or `grid` (every combination, no sampler, no early stop)."""
    num_samples: int = key(1, least=1)
    """optuna: number of trials; grid: repeats of the whole grid."""
    seed: int = key(0, only="optuna", why="the Optuna sampler's seed (a trial's seed is grid.seed or fixed.seed)")
    """Seed of the Optuna sampler."""
    grace_period: int = key(1, only="optuna", why=ASHA_ONLY, least=1)
    """ASHA: epochs every trial gets before it may be stopped."""
    reduction_factor: int = key(2, only="optuna", why=ASHA_ONLY, least=2)
    """ASHA: keep the top 1/reduction_factor at each rung."""
    asha_by: str = key("variant", only="optuna", why=ASHA_ONLY)
    """ASHA: rank a trial at a rung only against trials with the same value of this key. The
    default, `variant`, ranks each arm against itself: PseDual arms start slower than the base
    solver, and a shared rung would stop them for that (psedual/tune/asha.py). An empty string
    ranks all trials together (plain ASHA)."""
    fixed: dict = key(factory=dict, section=True, entries="of config keys to values")
    """Dotted TrainConfig keys → values shared by all trials."""
    search: dict = key(factory=dict, section=True, entries="of config keys to distributions", only="optuna",
                       why="the ranges Optuna's sampler draws from (a grid takes `grid:`, a list of values per key)")
    """optuna: key → {uniform|loguniform|int: [low, high]} or {choice: [values]}."""
    grid: dict = key(factory=dict, section=True, entries="of config keys to lists of values", only="grid",
                     why="every combination of its values is a trial (an Optuna sweep takes `search:`, a range or "
                     "choice per key)")
    """grid: key → list of values; every combination is a trial."""
    arms: list = key(factory=list, section=True, entries="of mappings, one per arm", only="grid",
                     why="the arms a grid crosses with `grid:` (an Optuna sweep draws variant and psedual.* from "
                     "`search:`)")
    """grid: the arms compared, each a mapping of dotted keys (`{variant: base}`, `{variant: gcn,
    psedual.fusion: teacher_forcing}`), crossed with `grid`. Arms that differ in more than one key
    need this: a grid over each key would repeat the base solver once per PseDual setting."""
    points: list = key(factory=list, section=True, entries="of mappings, one per trial", only="optuna",
                       why="the trials Optuna's sampler runs first (a grid runs every combination of grid and arms)")
    """optuna: trials to run first, each a mapping of every `search` key to a value (e.g. the
    base solver, so that a sweep always has its baseline); the sampler takes over after."""
    loggers: list = key(factory=list, section=True, entries=f"of tracker names ({', '.join(TRACKERS)})")
    """Trackers the trials log to, besides the result tables: any of `tensorboard`, `mlflow`,
    `wandb` (psedual/train/trackers.py; Ray's callbacks, psedual/tune/trackers.py)."""
    resources: Resources = key(factory=Resources, section=True)
    """How each trial is placed and how many run at once (psedual/train/resources.py)."""
    compare: list = key(factory=list, section=True, entries="of comparisons (mappings of arm, base, treatments, "
                        "where, margin)", only="grid", why=f"the comparisons the main job makes after {PAIRED}")
    """grid: the comparisons the main job makes after the sweep, each a `SweepComparison` mapping
    (`{arm: psedual.fusion, base: teacher_forcing, where: {variant: gcn}}`); none: every PseDual
    variant against base."""
    seeds_for: SeedsFor | None = key(None, section=True, only="grid",
                                     why=f"the seeds the comparisons of {PAIRED} need to detect a Δ")
    """grid: instead of `grid.seed`, the seeds a target Δ needs (`{delta: 1.0, max: 20, sd: 2.0}`),
    resolved at plan and run time (`SeedsFor`)."""
    seeds: SeedRule | None = key(None, section=True, only="grid",
                                 why=f"the seeds in rounds until the comparisons of {PAIRED} are decided")
    """grid: instead of `grid.seed`, seeds in rounds until every planned comparison is decided
    (`{until: decided, first: 6, step: 4, max: 40}`: `SeedRule`, psedual/tune/rounds.py)."""

    def with_seeds(self, seeds: list[int]) -> "SweepSpec":
        """This spec with `grid.seed` set (the resolution of `seeds_for`)."""
        return replace(self, grid={**self.grid, "seed": list(seeds)}, seeds_for=None)

    def trial_configs(self) -> list[dict]:
        """Representative flat configs: every grid combination, or each range's ends and each choice."""
        if self.mode == "grid":
            keys = list(self.grid)
            return [{**self.fixed, **arm, **dict(zip(keys, combo))} for arm in (self.arms or [{}])
                    for combo in itertools.product(*self.grid.values())]
        points = [dict(self.fixed)] + [{**self.fixed, **p} for p in self.points]
        for name, dist in self.search.items():
            (kind, values), = dist.items()
            points += [{**self.fixed, name: v} for v in values]
        return points


def keys(spec: type) -> dict[str, Key]:
    """The top-level keys of a sweep file as the spec class (`SweepSpec`) declares them."""
    hints = get_type_hints(spec)
    return {f.name: Key(f.name, hints[f.name], f.metadata["rules"],
                        f.default_factory() if f.default_factory is not MISSING else f.default)
            for f in fields(spec)}


KEYS: dict[str, Key] = keys(SweepSpec)
"""Each top-level key of a sweep file, in SweepSpec's order: its type, section and searcher rules."""


def expand(flat: dict) -> dict:
    """A trial's config with its arm's keys in place of the `arm` key."""
    if ARM not in flat:
        return flat
    return {**{k: v for k, v in flat.items() if k != ARM}, **flat[ARM]}
