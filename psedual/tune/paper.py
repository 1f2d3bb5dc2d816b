"""The paper as one file: `search_spaces/paper.yaml` → one ordinary `SweepSpec` per part and profile.

A paper file has a `name`, `parts` (each the common body of a sweep file: the arms, the grid
axes every profile shares) and `profiles` (each overriding, per part, the keys that set the
scale: data sets, model sizes, seeds, resources). A profile's override is merged into the part's
body: mappings key by key (so `fixed` and `resources` add to the common ones), anything else
replaced (a list of seeds, the arms). Every merged part is checked as a sweep file is
(`space.build_spec`), so a paper file can hold nothing a sweep file could not.

`table2` (the LLM rows) is no sweep: its body is `llm:`, the test split a chat model solves,
with and without reexamination, run only when the job names an endpoint.

A grid part with `recipe: published` trains each trial at its solver's published recipe on its
data set (`psedual.tune.recipe_arms`), as a grid sweep file with that key does.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from psedual.data.registry import DATASETS
from psedual.tune.recipe_arms import RECIPE, with_recipe
from psedual.tune.space import SpecError, SweepSpec, build_spec, read_yaml

PARTS = ("table1", "table3", "figure1", "table2")
"""The parts a paper file may hold, in the order they run; the report reads them by these names
(Table 4 is read from table1's PseDual runs)."""
LLM_PART = "table2"
"""The part whose runs are `psedual llm`'s, not a sweep's."""
STORAGE_KINDS = ("local", "uri")



@dataclass(frozen=True)
class LLMPart:
    """Table 2: a chat model solves a test split zero-shot, once plain and once reexamining."""

    dataset: str = "svamp"
    """The data set whose test split is solved."""
    fold: int | None = None
    """Its test fold, if cross-validated."""
    limit: int | None = None
    """Solve only the first `limit` test problems (None: all)."""

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ValueError(f"unknown dataset {self.dataset!r}; valid: {', '.join(DATASETS)}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be positive, got {self.limit}")


@dataclass(frozen=True)
class Profile:
    """One scale of the whole paper."""

    name: str
    """The profile's name (`full`, `small`): `--profile NAME`."""
    about: str
    """What it is for, in one line (printed when it starts)."""
    storage: str = "local"
    """`uri`: its trials must be stored on a URI (s3://, gs://: a cluster's nodes share it);
    `local`: any storage."""
    parts: dict = field(default_factory=dict)
    """Part name → the keys overriding that part's common body."""

    def __post_init__(self) -> None:
        if self.storage not in STORAGE_KINDS:
            raise ValueError(f"storage: {self.storage!r}; valid: {', '.join(STORAGE_KINDS)}")
        unknown = sorted(set(self.parts) - set(PARTS))
        if unknown:
            raise ValueError(f"parts: unknown {unknown}; valid: {', '.join(PARTS)}")
        for part, body in self.parts.items():
            if not isinstance(body, dict):
                raise ValueError(f"parts.{part}: expected a mapping")


@dataclass(frozen=True)
class PaperSpec:
    """The paper's experiments: common part bodies and the profiles that scale them."""

    name: str
    """Prefix of the default experiment name: `<name>-<profile>` (then `-2`, `-3`, ... when taken)."""
    path: str
    """The file it was read from (every error names it)."""
    parts: dict
    """Part name → its common body (a sweep file's keys, or `llm:` for table2)."""
    profiles: dict
    """Profile name → Profile."""

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or "." in self.name:
            raise ValueError(f"name: {self.name!r}: a non-empty folder name without dots (parts are `<name>.<part>`)")
        unknown = sorted(set(self.parts) - set(PARTS))
        if unknown:
            raise ValueError(f"parts: unknown {unknown}; valid: {', '.join(PARTS)}")
        if not self.profiles:
            raise ValueError("profiles: give at least one")

    def profile(self, name: str) -> Profile:
        if name not in self.profiles:
            raise SpecError(f"{self.path}: no profile {name!r}; valid: {', '.join(self.profiles)}")
        return self.profiles[name]

    def part_names(self, only: tuple[str, ...] = ()) -> list[str]:
        """The parts to run, in PARTS order; `only` picks some (an unknown one is refused)."""
        unknown = sorted(set(only) - set(self.parts))
        if unknown:
            raise SpecError(f"{self.path}: --only {','.join(unknown)}: no such part; valid: {', '.join(self.parts)}")
        return [p for p in PARTS if p in self.parts and (not only or p in only)]

    def body(self, part: str, profile: str) -> dict:
        return merge(self.parts[part], self.profile(profile).parts.get(part, {}))

    def sweep(self, part: str, profile: str) -> SweepSpec:
        """The part as an ordinary sweep under this profile, checked as a sweep file is."""
        if part == LLM_PART:
            raise SpecError(f"{self.path}: {part} is the LLM part, not a sweep")
        where = f"{self.path}: parts.{part} (profile {profile})"
        body = self.body(part, profile)
        if RECIPE in body:
            body = with_recipe(body, where)
        return build_spec({"name": f"{self.name}.{part}", **body}, where)

    def llm(self, part: str, profile: str) -> LLMPart:
        body = self.body(part, profile)
        where = f"{self.path}: parts.{part} (profile {profile})"
        if set(body) != {"llm"} or not isinstance(body["llm"], dict):
            raise SpecError(f"{where}: the LLM part takes one key, `llm:`, a mapping of "
                            f"{', '.join(LLMPart.__dataclass_fields__)}")
        try:
            return LLMPart(**body["llm"])
        except (TypeError, ValueError) as err:
            raise SpecError(f"{where}: llm: {err}") from None


def merge(base: dict, override: dict) -> dict:
    """`override` on `base`: mappings merged key by key, anything else replaced."""
    out = dict(base)
    for key, value in override.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def is_paper_file(path: str | Path) -> bool:
    """Whether a YAML file is a paper file (it has `parts:`) rather than a sweep file. A file that
    is not UTF-8 YAML with each key once is a SpecError naming it, whichever it was meant to be; a
    missing one is not a paper file (load_spec says it is missing)."""
    path = Path(path)
    if not path.is_file():
        return False
    raw = read_yaml(path, "sweep file")
    return isinstance(raw, dict) and "parts" in raw


def load_paper(path: str | Path) -> PaperSpec:
    """Read a paper file and check every part under every profile; errors name the file and key."""
    path = Path(path)
    raw = read_yaml(path, "paper file")
    if not isinstance(raw, dict) or set(raw) != {"name", "parts", "profiles"}:
        got = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
        raise SpecError(f"{path}: a paper file has exactly the top-level keys name, parts, profiles; got {got}")
    for key in ("parts", "profiles"):
        if not isinstance(raw[key], dict):
            raise SpecError(f"{path}: {key}: expected a mapping")
    profiles = {}
    for name, body in raw["profiles"].items():
        try:
            profiles[name] = Profile(name=name, **(body or {}))
        except (TypeError, ValueError) as err:
            raise SpecError(f"{path}: profiles.{name}: {err}") from None
    try:
        paper = PaperSpec(str(raw["name"]), str(path), raw["parts"], profiles)
    except ValueError as err:
        raise SpecError(f"{path}: {err}") from None
    for profile in profiles:
        for part in paper.parts:
            paper.llm(part, profile) if part == LLM_PART else paper.sweep(part, profile)
    return paper


def missing_data(dataset: str, data_root: str | None = None, user_path: str | None = None) -> str | None:
    """Why a data set cannot run here (a user's file it needs is absent), or None. MathQA's
    training file is the user's to bring (`psedual data fetch` cannot)."""
    from psedual.data.root import find_data_root

    spec = DATASETS[dataset]
    if not spec.user_path:
        return None
    user = Path(user_path) if user_path else None
    if spec.user_files(find_data_root(data_root), user) or (user is not None and user.exists()):
        return None
    return (f"{dataset} needs {spec.user_path}: put it there, or set data.user_path in the part's fixed keys "
            f"(`psedual data stats {dataset} --user-path FILE` checks it)")


def runnable(spec: SweepSpec) -> tuple[SweepSpec | None, list[str]]:
    """The sweep without the data sets this machine lacks (arms or grid values naming one), and a
    line per data set left out; None when nothing is left."""
    fixed = spec.fixed
    why = {}

    def lacks(keys: dict) -> bool:
        merged = {**fixed, **keys}
        name = merged.get("data.dataset", "mawps")
        if name not in why:
            why[name] = missing_data(name, merged.get("data.data_root"), merged.get("data.user_path"))
        return why[name] is not None

    if lacks({}):
        return None, [f"{spec.name}: skipped: {why[fixed.get('data.dataset', 'mawps')]}"]
    arms = [a for a in spec.arms if not lacks(a)]
    grid = dict(spec.grid)
    if "data.dataset" in grid:
        grid["data.dataset"] = [d for d in grid["data.dataset"] if not lacks({"data.dataset": d})]
    lines = [f"{spec.name}: {name} skipped: {reason}" for name, reason in why.items() if reason]
    if (spec.arms and not arms) or any(not v for v in grid.values()):
        return None, lines
    return replace(spec, arms=arms, grid=grid), lines
