"""Sweep specifications: a YAML file → a typed, validated `SweepSpec`, before any trial starts.

A spec names TrainConfig fields by dotted keys (`lr`, `data.fold`, `model.hidden_size`,
`psedual.epsilon_decay`) plus one special key, `variant`: `base` (the solver alone) or
`gru`/`gcn` (PseDual with that expression encoder). `psedual.*` keys apply to PseDual
trials only. Every value a sweep can produce is checked by building its TrainConfig.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

from psedual.reexamine.config import BASE
from psedual.train.config import TrainConfig
from psedual.train.resources import Resources
from psedual.train.trackers import check_names

DISTRIBUTIONS = ("uniform", "loguniform", "int", "choice")
MODES = ("optuna", "grid")


class SpecError(ValueError):
    """A sweep file that cannot be run; the message names the file and the key."""


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
    """A YAML file's contents; a missing or unparsable file is a SpecError naming it."""
    if not path.is_file():
        raise SpecError(f"{path}: {what} not found")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise SpecError(f"{path}: not valid YAML ({err})") from None


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a sweep YAML; every problem is a SpecError naming the file."""
    return build_spec(read_yaml(Path(path), "sweep file"), str(path))


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
    try:
        spec = SweepSpec(**{**raw, "resources": Resources(**(raw.get("resources") or {}))})
    except TypeError as err:
        raise SpecError(f"{path}: {err}") from None
    except ValueError as err:
        raise SpecError(f"{path}: resources: {err}") from None
    _check(spec, path)
    return spec


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
