"""Sweep specifications: a YAML file → a typed, validated `SweepSpec`, before any trial starts.

A spec names TrainConfig fields by dotted keys (`lr`, `data.fold`, `model.hidden_size`,
`psedual.epsilon_decay`) plus one special key, `variant`: `base` (the solver alone) or
`gru`/`gcn` (PseDual with that expression encoder). `psedual.*` keys apply to PseDual
trials only. Every value a sweep can produce is checked by building its TrainConfig.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from psedual.reexamine.config import BASE
from psedual.train.config import TrainConfig
from psedual.train.resources import Resources
from psedual.train.trackers import check_names
from psedual.tune import yaml_file
from psedual.tune.errors import SpecError
from psedual.tune.recipe_arms import RECIPE, with_recipe
from psedual.tune.space_values import value_problems
from psedual.tune.value_types import dataclass_problems, shown

DISTRIBUTIONS = ("uniform", "loguniform", "int", "choice")
MODES = ("optuna", "grid")


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
            raise ValueError(f"seeds_for: delta must be a nonzero Δ in points, max 2..1000 seeds, sd > 0; got {self}")


PSEDUAL_PREFIX = "psedual."
"""Keys of PseDual's knobs: they apply to trials whose variant is not `base`."""
SWEEPABLE = TrainConfig.flat_keys()
"""Dotted keys a sweep file may set."""


@dataclass(frozen=True)
class SweepSpec:
    """One experiment: fixed values, what is searched (or gridded), how, and where it runs."""

    name: str
    """Experiment name: the results partition and the `--resume` handle."""
    mode: str = "optuna"
    """`optuna` (TPE, seeded, with ASHA) or `grid` (every combination, no sampler, no early stop)."""
    num_samples: int = 1
    """optuna: number of trials; grid: repeats of the whole grid."""
    seed: int = 0
    """Seed of the Optuna sampler."""
    grace_period: int = 1
    """ASHA: epochs every trial gets before it may be stopped."""
    reduction_factor: int = 2
    """ASHA: keep the top 1/reduction_factor at each rung."""
    asha_by: str = "variant"
    """ASHA: rank a trial at a rung only against trials with the same value of this key. The
    default, `variant`, ranks each arm against itself: PseDual arms start slower than the base
    solver, and a shared rung would stop them for that (psedual/tune/asha.py). An empty string
    ranks all trials together (plain ASHA)."""
    fixed: dict = field(default_factory=dict)
    """Dotted TrainConfig keys → values shared by all trials."""
    search: dict = field(default_factory=dict)
    """optuna: key → {uniform|loguniform|int: [low, high]} or {choice: [values]}."""
    grid: dict = field(default_factory=dict)
    """grid: key → list of values; every combination is a trial."""
    arms: list = field(default_factory=list)
    """grid: the arms compared, each a mapping of dotted keys (`{variant: base}`, `{variant: gcn,
    psedual.fusion: teacher_forcing}`), crossed with `grid`. Arms that differ in more than one key
    need this: a grid over each key would repeat the base solver once per PseDual setting."""
    points: list = field(default_factory=list)
    """optuna: trials to run first, each a mapping of every `search` key to a value (e.g. the
    base solver, so that a sweep always has its baseline); the sampler takes over after."""
    loggers: list = field(default_factory=list)
    """Trackers the trials log to, besides the result tables: any of `tensorboard`, `mlflow`,
    `wandb` (psedual/train/trackers.py; Ray's callbacks, psedual/tune/trackers.py)."""
    resources: Resources = field(default_factory=Resources)
    compare: list = field(default_factory=list)
    """grid: the comparisons the main job makes after the sweep, each a `SweepComparison` mapping
    (`{arm: psedual.fusion, base: teacher_forcing, where: {variant: gcn}}`); none: every PseDual
    variant against base."""
    seeds_for: SeedsFor | None = None
    """grid: instead of `grid.seed`, the seeds a target Δ needs (`{delta: 1.0, max: 20, sd: 2.0}`),
    resolved at plan and run time (`SeedsFor`)."""

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
        for key, dist in self.search.items():
            (kind, values), = dist.items()
            points += [{**self.fixed, key: v} for v in values]
        return points


ARM = "arm"
"""The key under which a grid sweep's `arms` reach a trial (one arm's mapping)."""


def expand(flat: dict) -> dict:
    """A trial's config with its arm's keys in place of the `arm` key."""
    if ARM not in flat:
        return flat
    return {**{k: v for k, v in flat.items() if k != ARM}, **flat[ARM]}


def make_config(flat: dict) -> TrainConfig:
    """The TrainConfig of one trial from its flat dotted keys, its arm's expanded (unknown keys fail)."""
    return TrainConfig.from_flat(expand(flat))


def read_yaml(path: Path, what: str) -> object:
    """A YAML file's contents; a missing or unreadable file, bytes that are not UTF-8, text that is
    not YAML and a key given twice in one mapping are each a SpecError naming the file."""
    if not path.is_file():
        raise SpecError(f"{path}: {what} not found")
    try:
        return yaml_file.load(path)
    except yaml_file.YamlFileError as err:
        raise SpecError(str(err)) from None
    except OSError as err:  # unreadable: permissions, a vanished file
        raise SpecError(f"{path}: {what} unreadable ({err.strerror or err})") from None


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a sweep YAML; every problem is a SpecError naming the file. A grid sweep
    with `recipe: published` trains each solver at its own recipe (`recipe_arms`)."""
    raw = read_yaml(Path(path), "sweep file")
    if isinstance(raw, dict) and RECIPE in raw:
        raw = with_recipe(raw, str(path))
    return build_spec(raw, str(path))


def build_spec(raw: object, where: str) -> SweepSpec:
    """A validated SweepSpec from a sweep file's mapping; `where` (the file, and the key inside a
    paper file) begins every SpecError."""
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: expected a mapping at the top level")
    path = where
    allowed = {f.name for f in fields(SweepSpec)}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise SpecError(f"{path}: unknown top-level keys {unknown}; valid: {', '.join(sorted(allowed))}")
    # an empty section (`fixed:` with every line commented out) says nothing: as if absent
    raw = {key: value for key, value in raw.items() if not (value is None and key in SECTIONS)}
    _check_types(raw, path)
    _check_mode_keys(raw, path)
    try:
        resources = Resources(**(raw.get("resources") or {}))
    except (TypeError, ValueError) as err:
        raise SpecError(f"{path}: resources: {err}") from None
    compare = raw.get("compare") or []
    if not isinstance(compare, list):
        raise SpecError(f"{path}: compare: expected a list of comparisons")
    comparisons = []
    for i, c in enumerate(compare):
        if not isinstance(c, dict):
            raise SpecError(f"{path}: compare[{i}]: expected a mapping (keys: arm, base, treatments, where, "
                            f"margin), got {shown(c)}")
        try:
            comparisons.append(SweepComparison(**c))
        except (TypeError, ValueError) as err:
            raise SpecError(f"{path}: compare[{i}]: {err} (keys: arm, base, treatments, where, margin)") from None
    seeds_for = raw.get("seeds_for")
    if seeds_for is not None:
        try:
            seeds_for = SeedsFor(**seeds_for)
        except (TypeError, ValueError) as err:
            raise SpecError(f"{path}: seeds_for: {err} (keys: delta, max, sd)") from None
    try:
        spec = SweepSpec(**{**raw, "resources": resources, "compare": comparisons, "seeds_for": seeds_for})
    except TypeError as err:
        raise SpecError(f"{path}: {err}") from None
    _check(spec, path)
    return spec


SECTIONS = ("fixed", "search", "grid", "arms", "points", "loggers", "resources", "compare", "seeds_for")
"""Top-level keys that hold a section (a mapping or a list): left empty, they say nothing."""
SHAPED = ("fixed", "search", "grid", "arms", "points", "loggers", "compare")
"""Sections whose shape `_check` and `check_names` check, each in its own words."""
OPTUNA_ONLY = {
    "seed": "the Optuna sampler's seed (a trial's seed is grid.seed or fixed.seed)",
    "grace_period": "ASHA's, which stops Optuna trials early (a grid trains every trial to its last epoch)",
    "reduction_factor": "ASHA's, which stops Optuna trials early (a grid trains every trial to its last epoch)",
    "asha_by": "ASHA's, which stops Optuna trials early (a grid trains every trial to its last epoch)",
    "points": "the trials Optuna's sampler runs first (a grid runs every combination of grid and arms)",
}
"""Top-level keys that act in an Optuna sweep only, and what each is: `sweep._tune_config` gives the
sampler and ASHA to an Optuna sweep alone, and a grid's trials are its param_space's. (The keys
that act in a grid only, `grid`, `arms`, `compare` and `seeds_for`, and `search` in a grid, are
refused by `_check` and `_check_compare`, each in its own words.)"""


def _check_types(raw: dict, path: str) -> None:
    """The sweep's own settings, its resources and seeds_for, each of its field's type: one line
    naming the key and what it takes (`num_samples must be a whole number, got 'eight'`)."""
    nested = ((Resources, "resources"), (SeedsFor, "seeds_for"))
    # the sections spec checks itself ("fixed: expected a mapping") are left to it
    settings = {key: value for key, value in raw.items() if key not in SHAPED}
    said = [*dataclass_problems(SweepSpec, settings), *(f"{key}.{line}" for cls, key in nested
                                                    if isinstance(raw.get(key), dict)
                                                    for line in dataclass_problems(cls, raw[key]))]
    if said:
        raise SpecError(f"{path}: {said[0]}")


def _check_mode_keys(raw: dict, path: str) -> None:
    """Refuse a key that would do nothing in this sweep's mode: written, it reads as if it acted."""
    mode = raw.get("mode", SweepSpec.mode)
    if mode != "grid":
        return
    idle = [key for key in OPTUNA_ONLY if raw.get(key) not in (None, [], {})]
    if idle:
        key = idle[0]
        raise SpecError(f"{path}: {key}: {OPTUNA_ONLY[key]}; it has no effect in a grid sweep (mode: grid): "
                        f"remove it, or make the sweep mode: optuna")


def _check(spec: SweepSpec, path: str) -> None:
    try:
        check_names(spec.loggers, f"{path}: loggers")
    except ValueError as err:
        raise SpecError(str(err)) from None
    if spec.mode not in MODES:
        raise SpecError(f"{path}: unknown mode {spec.mode!r}; valid: {', '.join(MODES)}")
    if spec.num_samples < 1 or spec.grace_period < 1 or spec.reduction_factor < 2:
        raise SpecError(f"{path}: num_samples, grace_period must be >= 1 and reduction_factor >= 2")
    if spec.asha_by and spec.asha_by not in SWEEPABLE:
        raise SpecError(f"{path}: asha_by: unknown key {spec.asha_by!r}; valid: a sweepable key (variant, "
                        "solver, ...) or '' for one ranking over all trials")
    section = "grid" if spec.mode == "grid" else "search"
    other = spec.search if spec.mode == "grid" else spec.grid
    if other:
        raise SpecError(f"{path}: mode {spec.mode} takes `{section}:`, not `{'search' if section == 'grid' else 'grid'}:`")
    for where, keys in (("fixed", spec.fixed), (section, getattr(spec, section))):
        if not isinstance(keys, dict):
            raise SpecError(f"{path}: {where}: expected a mapping")
        unknown = sorted(set(keys) - set(SWEEPABLE))
        if unknown:
            raise SpecError(f"{path}: {where}: unknown keys {unknown}; valid: {', '.join(sorted(SWEEPABLE))}")
    for i, point in enumerate(spec.points):
        # a base point's psedual.* values would be ignored (`sweep.define_by_run`): it may leave them out
        needed = {k for k in spec.search if not (k.startswith(PSEDUAL_PREFIX) and
                                                 isinstance(point, dict) and point.get("variant") == BASE)}
        if not isinstance(point, dict) or not needed <= set(point) or not set(point) <= set(spec.search):
            raise SpecError(f"{path}: points[{i}]: give a value for each search key ({', '.join(spec.search)}; "
                            f"a base point may leave out the psedual.* keys)")
    if spec.arms and spec.mode != "grid":
        raise SpecError(f"{path}: arms: only grid sweeps take arms")
    for i, arm in enumerate(spec.arms):
        if not isinstance(arm, dict) or not arm:
            raise SpecError(f"{path}: arms[{i}]: expected a non-empty mapping of keys to values")
        unknown = sorted(set(arm) - set(SWEEPABLE))
        if unknown:
            raise SpecError(f"{path}: arms[{i}]: unknown keys {unknown}; valid: {', '.join(sorted(SWEEPABLE))}")
        clash = sorted(set(arm) & (set(spec.grid) | set(spec.fixed)))
        if clash:
            raise SpecError(f"{path}: arms[{i}]: {clash} also set in fixed or grid")
    for key, values in spec.grid.items():
        if not isinstance(values, list) or not values:
            raise SpecError(f"{path}: grid.{key}: expected a non-empty list of values")
    said = value_problems(spec)  # before any TrainConfig is built from them (its checks compare)
    if said:
        raise SpecError(f"{path}: {said[0]}")
    for key, dist in spec.search.items():
        if not isinstance(dist, dict) or len(dist) != 1 or next(iter(dist)) not in DISTRIBUTIONS:
            raise SpecError(f"{path}: search.{key}: expected one of {', '.join(DISTRIBUTIONS)} with its values")
        (kind, values), = dist.items()
        if kind == "choice":
            if not isinstance(values, list) or not values:
                raise SpecError(f"{path}: search.{key}: choice needs a non-empty list")
        elif not (isinstance(values, list) and len(values) == 2 and all(isinstance(v, (int, float)) for v in values)
                  and values[0] < values[1] and (kind != "loguniform" or values[0] > 0)):
            raise SpecError(f"{path}: search.{key}: {kind} needs [low, high] with low < high"
                            f"{' and low > 0' if kind == 'loguniform' else ''}, got {values}")
    for flat in spec.trial_configs():
        try:
            make_config(flat)
        except (ValueError, TypeError) as err:
            raise SpecError(f"{path}: a trial config is invalid ({err}): {flat}") from None
    _check_compare(spec, path)


def arm_values(spec: SweepSpec, key: str) -> list:
    """The values `key` takes over the sweep's trials, defaults filled in (`psedual.fusion` is
    `scheduled` where no arm sets it; a base trial's `psedual.*` values are None)."""
    values = []
    for flat in spec.trial_configs():
        config = make_config(flat)
        values.append(config.variant if key == "variant" else config.flat()[key])
    return list(dict.fromkeys(values))


def _check_compare(spec: SweepSpec, path: str) -> None:
    """`compare` and `seeds_for` name keys and values the sweep has: a comparison of arms it never
    trains would be refused only after hours of training."""
    if (spec.compare or spec.seeds_for) and spec.mode != "grid":
        raise SpecError(f"{path}: compare and seeds_for are for grid sweeps (a paired ablation)")
    if spec.seeds_for is not None and "seed" in spec.grid:
        raise SpecError(f"{path}: give grid.seed or seeds_for, not both")
    for i, c in enumerate(spec.compare):
        for key in (c.arm, *c.where):
            if key not in SWEEPABLE:
                raise SpecError(f"{path}: compare[{i}]: unknown key {key!r}; valid: {', '.join(sorted(SWEEPABLE))}")
        values = [v for v in arm_values(spec, c.arm) if v is not None]
        missing = [v for v in (c.base, *c.treatments) if v not in values]
        if missing:
            raise SpecError(f"{path}: compare[{i}]: {c.arm} {missing} never trained by this sweep; it has "
                            f"{', '.join(map(str, values))}")
        if c.arm in c.where:
            raise SpecError(f"{path}: compare[{i}]: {c.arm} is the arm: it cannot also be in where")
