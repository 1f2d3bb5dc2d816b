"""The comparisons a sweep file plans (`Planned`), as `psedual analyze compare` options
(`compare_options`) and as the command line that reruns each (`command_line`): what the main job
judges after its sweep (`psedual.job`), what a sweep in rounds judges at each look
(`psedual.seed_rounds`) and what `psedual analyze study` reports of a finished study (`study_plan`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # an annotation only: analysis is imported when a comparison is made
    from analysis.options import CompareOptions


CELLS = ("data.dataset", "solver")
"""The comparison's cells, as in `analyze compare`; a sweep's other grid keys are added to them."""
NOT_CELLS = ("variant", "seed", "data.fold")
"""Grid keys that are no cell: the arm, and the units it pairs over (MAWPS's folds pool)."""


@dataclass(frozen=True)
class Planned:
    """One comparison the job makes after a sweep, as `analyze compare` is given it."""

    arm: str
    """The column whose values are the arms."""
    base: str
    """The reference arm."""
    treatments: tuple[str, ...]
    """The arms compared with `base`."""
    where: tuple[str, ...]
    """`--where` filters (`KEY=VALUE`; `KEY=null|VALUE` where a base trial has no such value)."""
    cells: tuple[str, ...]
    """`--by` columns."""
    family: str | None
    """The claims family's name (`--name`); none: analyze's default."""
    margin: float = 1.0
    """The equivalence margin in points (`--margin`; the compare entry's `margin`)."""

    @property
    def label(self) -> str:
        """What the plan and the reports call this comparison's claims apart from the arms: its
        `where`, as written ('where psedual.control=other_problem'), or '' without one."""
        shown = [w.replace("=null|", "=") for w in self.where]
        return f"where {', '.join(shown)}" if shown else ""


def comparisons(spec, variants: list[str], name: str) -> list[Planned]:
    """The sweep's `compare` entries, or (none given) every PseDual arm against base, per cell of
    the sweep's other grid keys; none when the sweep has no base arm and PseDual arm to compare."""
    from psedual.reexamine.config import BASE, EXPRESSION_ENCODERS
    from psedual.tune.space import PSEDUAL_PREFIX, SweepComparison, arm_values

    if not spec.compare:
        treatments = [v for v in EXPRESSION_ENCODERS if v in variants]
        if BASE not in variants or not treatments:
            return []
        entries, named = [SweepComparison(treatments=tuple(treatments))], False
    else:
        entries, named = spec.compare, True
    arms = [c.arm for c in entries]
    out = []
    for i, c in enumerate(entries):
        # the arms' own keys and the units a claim pairs over are no cells
        cells = (*CELLS, *(k for k in spec.grid if k not in (*CELLS, *NOT_CELLS, c.arm, *c.where)))
        treatments = c.treatments or tuple(v for v in arm_values(spec, c.arm) if v is not None and v != c.base)
        # a base trial has no psedual.* values: it matches any (`analyze`'s null)
        where = tuple(f"{k}=null|{v}" if k.startswith(PSEDUAL_PREFIX) and c.arm == "variant" else f"{k}={v}"
                      for k, v in c.where.items())
        family = f"compare_{name}_{c.arm}" + (f"_{i + 1}" if arms.count(c.arm) > 1 else "") if named else None
        out.append(Planned(c.arm, str(c.base), tuple(map(str, treatments)), where, cells, family, float(c.margin)))
    return out


def compare_options(spec, variants: list[str], storage: str, name: str) -> list[CompareOptions]:
    """`analyze compare`'s options (`analysis.options.CompareOptions`) for each of `comparisons`."""
    from analysis.options import CompareOptions

    planned = comparisons(spec, variants, name)
    margins = {}
    if spec.seeds is not None:  # a sweep in rounds: claims at its looks' margin (the rule's, or half the target)
        from analysis.stats.margins import default_margin
        from psedual.seed_rounds import targets

        goals = targets(spec, planned)
        margins = {p: spec.seeds.margin if spec.seeds.margin is not None else
                   min(default_margin(goals[(p, t)][0])[0] for t in p.treatments) for p in planned}
    # a sweep in rounds that continues an earlier experiment judged its seeds too (its first look):
    # so do its claims, or they would compare the later seeds alone
    continued = spec.seeds is not None and spec.seeds.continue_from is not None
    experiments = (spec.seeds.continue_from, name) if continued else (name,)
    allowed = continued_allowances(storage, spec.seeds.continue_from) if continued else ()
    return [CompareOptions(root=storage, experiment=experiments, arm=p.arm, base=p.base, treatment=p.treatments,
                           where=p.where, by=p.cells, name=p.family, margin=margins.get(p, p.margin),
                           allow_diff=allowed) for p in planned]


def continued_allowances(storage: str, earlier: str) -> tuple[str, ...]:
    """What a study continuing experiment `earlier` pools across, each claim flagged: the code versions
    (by design: the earlier seeds ran on earlier code) and the config columns added since `earlier`'s
    runs table was written (null in its rows; an option added later defaults to the behaviour before
    it, which is how `seed_rounds.arm_rows` matched those runs to the arms)."""
    import polars as pl

    from psedual.results.schema import config_columns

    try:
        had = set(pl.scan_parquet(f"{storage.rstrip('/')}/runs/experiment={earlier}/*.parquet").collect_schema())
    except (FileNotFoundError, OSError, pl.exceptions.ComputeError):
        return ("code_version",)  # no table to read: the comparison says what else differs
    return ("code_version", *sorted(f.name for f in config_columns() if f.name not in had))


def study_plan(space: str, storage: str, name: str) -> list[CompareOptions]:
    """The comparisons a finished study's sweep file plans, as `compare_options` gave its job (over
    the variants the file names): what `psedual analyze study` reports (`analysis.study_report`)."""
    from psedual.tune.space import arm_values, load_spec

    spec = load_spec(space)
    return compare_options(spec, arm_values(spec, "variant"), storage, name)


def command_line(options: CompareOptions) -> str:
    """The `psedual analyze compare` command that reruns a comparison of `compare_options`."""
    words = ["psedual", "analyze", "compare", "--root", options.root,
             *(w for e in options.experiment for w in ("--experiment+", e)), "--arm", options.arm,
             "--base", options.base, *(w for t in options.treatment for w in ("--treatment+", t)),
             *(w for k in options.where for w in ("--where+", k)), *(w for k in options.by for w in ("--by+", k)),
             *(["--name", options.name] if options.name else []), "--margin", f"{options.margin:g}"]
    return " ".join(words)
