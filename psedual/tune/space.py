"""Sweep specifications: a YAML file → a typed, validated `SweepSpec`, before any trial starts.

A spec names TrainConfig fields by dotted keys (`lr`, `data.fold`, `model.hidden_size`,
`psedual.epsilon_decay`) plus one special key, `variant`: `base` (the solver alone) or
`gru`/`gcn` (PseDual with that expression encoder). `psedual.*` keys apply to PseDual
trials only. Every value a sweep can produce is checked by building its TrainConfig.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from pathlib import Path

from psedual.reexamine.config import BASE
from psedual.train.config import TrainConfig
from psedual.train.trackers import check_names
from psedual.tune import yaml_file
from psedual.tune.errors import SpecError
from psedual.tune.recipe_arms import RECIPE, with_recipe
from psedual.tune.space_values import value_problems
from psedual.tune.spec_types import (ARM, DISTRIBUTIONS, KEYS, MODES, PSEDUAL_PREFIX, SWEEPABLE, SeedsFor,
                                     SweepComparison, SweepSpec, expand)
from psedual.tune.value_types import dataclass_problems, fits, problem, shown, unknown, words

__all__ = ["ARM", "PSEDUAL_PREFIX", "SWEEPABLE", "SeedsFor", "SpecError", "SweepComparison", "SweepSpec",
           "arm_values", "build_spec", "expand", "load_spec", "make_config", "read_yaml"]
"""What the sweep's modules import from here (the spec's types live in spec_types.py)."""


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
    extra = set(raw) - set(KEYS)
    if extra:
        raise SpecError(f"{path}: {unknown(extra, sorted(KEYS), 'top-level key')}")
    # an empty section (`fixed:` with every line commented out) says nothing: as if absent
    raw = {name: value for name, value in raw.items() if not (value is None and KEYS[name].rules.section)}
    missing = [name for name, k in KEYS.items() if k.default is MISSING and name not in raw]
    if missing:
        raise SpecError(f"{path}: give {', '.join(missing)} (no default)")
    _check_mode_keys(raw, path)  # first: a key of the other searcher is wrong whatever its value
    _check_types(raw, path)
    values = {name: _record(KEYS[name].nested, value, f"{path}: {name}") if KEYS[name].nested else value
              for name, value in raw.items()}
    values["compare"] = [_record(SweepComparison, c, f"{path}: compare[{i}]")
                         for i, c in enumerate(values.get("compare", []))]
    spec = SweepSpec(**values)
    _check(spec, path)
    return spec


def _record(cls: type, value: object, where: str) -> object:
    """`cls` (SweepComparison, SeedsFor, Resources) built from a sweep file's mapping: an unknown key
    names the nearest valid ones, a value `cls` refuses says why, each after `where`."""
    if value is None or isinstance(value, cls):
        return value
    names = [f.name for f in fields(cls)]
    if not isinstance(value, dict):
        raise SpecError(f"{where}: expected a mapping (keys: {', '.join(names)}), got {shown(value)}")
    extra = set(value) - set(names)
    if extra:
        raise SpecError(f"{where}: {unknown(extra, names)}")
    said = dataclass_problems(cls, value)
    if said:
        raise SpecError(f"{where}: {said[0]}")
    required = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]
    if set(required) - set(value):
        raise SpecError(f"{where}: give {', '.join(n for n in required if n not in value)}")
    try:
        return cls(**value)
    except ValueError as err:
        raise SpecError(f"{where}: {err}") from None


def _check_types(raw: dict, path: str) -> None:
    """Each top-level value of its key's type (`KEYS`): a setting's in one line naming the key and
    what it takes (`num_samples must be a whole number, got 'eight'`), a section's shape with what
    its entries are (`fixed: expected a mapping of config keys to values, got [1]`), a nested
    record's fields (`resources.max_concurrent must be a whole number, got '2'`)."""
    said: list[str] = []
    for name, value in raw.items():
        k = KEYS[name]
        if k.rules.entries:  # a section's entries are `_check`'s, each in its own words
            if not fits(value, k.annotation):
                said.append(f"{name}: expected {words(k.annotation)} {k.rules.entries}, got {shown(value)}")
            continue
        line = problem(name, value, k.annotation)
        if line:
            said.append(line)
        elif k.nested and isinstance(value, dict):
            said += [f"{name}.{line}" for line in dataclass_problems(k.nested, value)]
    if said:
        raise SpecError(f"{path}: {said[0]}")


def _check_mode_keys(raw: dict, path: str) -> None:
    """Refuse a key that acts only in the other searcher (its `Rules.only`): written, it reads as if
    it acted."""
    mode = raw.get("mode", KEYS["mode"].default)
    if mode not in MODES:
        return  # `_check` names the valid ones
    for name, k in KEYS.items():
        if k.rules.only not in (None, mode) and raw.get(name) not in (None, [], {}):
            article = "an" if mode[0] in "aeiou" else "a"
            raise SpecError(f"{path}: {name}: {k.rules.why}; it has no effect in {article} {mode} sweep (mode: {mode}): "
                            f"remove it, or make the sweep mode: {k.rules.only}")


def _check(spec: SweepSpec, path: str) -> None:
    try:
        check_names(spec.loggers, f"{path}: loggers")
    except ValueError as err:
        raise SpecError(str(err)) from None
    if spec.mode not in MODES:
        raise SpecError(f"{path}: unknown mode {spec.mode!r}; valid: {', '.join(MODES)}")
    for name, k in KEYS.items():
        if k.rules.least is not None and getattr(spec, name) < k.rules.least:
            raise SpecError(f"{path}: {name} must be >= {k.rules.least}, got {getattr(spec, name)}")
    if spec.asha_by and spec.asha_by not in SWEEPABLE:
        raise SpecError(f"{path}: asha_by: {unknown([spec.asha_by], sorted(SWEEPABLE))}; or '' for one ranking "
                        "over all trials")
    section = "grid" if spec.mode == "grid" else "search"
    for where, keys in (("fixed", spec.fixed), (section, getattr(spec, section))):
        extra = set(keys) - set(SWEEPABLE)
        if extra:
            raise SpecError(f"{path}: {where}: {unknown(extra, sorted(SWEEPABLE))}")
    for i, point in enumerate(spec.points):
        # a base point's psedual.* values would be ignored (`sweep.define_by_run`): it may leave them out
        needed = {k for k in spec.search if not (k.startswith(PSEDUAL_PREFIX) and
                                                 isinstance(point, dict) and point.get("variant") == BASE)}
        if not isinstance(point, dict) or not needed <= set(point) or not set(point) <= set(spec.search):
            raise SpecError(f"{path}: points[{i}]: give a value for each search key ({', '.join(spec.search)}; "
                            f"a base point may leave out the psedual.* keys)")
    for i, arm in enumerate(spec.arms):
        if not isinstance(arm, dict) or not arm:
            raise SpecError(f"{path}: arms[{i}]: expected a non-empty mapping of keys to values")
        extra = set(arm) - set(SWEEPABLE)
        if extra:
            raise SpecError(f"{path}: arms[{i}]: {unknown(extra, sorted(SWEEPABLE))}")
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
    if spec.seeds_for is not None and "seed" in spec.grid:
        raise SpecError(f"{path}: give grid.seed or seeds_for, not both")
    for i, c in enumerate(spec.compare):
        for key in (c.arm, *c.where):
            if key not in SWEEPABLE:
                raise SpecError(f"{path}: compare[{i}]: {unknown([key], sorted(SWEEPABLE))}")
        values = [v for v in arm_values(spec, c.arm) if v is not None]
        missing = [v for v in (c.base, *c.treatments) if v not in values]
        if missing:
            raise SpecError(f"{path}: compare[{i}]: {c.arm} {missing} never trained by this sweep; it has "
                            f"{', '.join(map(str, values))}")
        if c.arm in c.where:
            raise SpecError(f"{path}: compare[{i}]: {c.arm} is the arm: it cannot also be in where")
