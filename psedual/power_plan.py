"""What a grid sweep can detect before it runs (`psedual tune --space FILE --plan`), and the seeds a
target Δ needs (a sweep file's `seeds_for`).

Each comparison of the sweep (its `compare` entries, or every PseDual variant against base) is a
paired t-test over seeds, and a TOST at its equivalence margin (`analysis.stats.equivalence`); their
power depends on the sd of the per-seed Δ, which no sweep knows before it runs. The plan takes that
sd from an earlier experiment's runs of the same comparison (`--plan_from EXPERIMENT`, else the sweep's own
last experiment where it ran: the runs table's test value accuracy, paired by seed, folds averaged), or as stated (`--plan_sd`, or
`seeds_for.sd` in the file), and gives per comparison (named by its arms and its `where`) the seeds
the sweep has, the smallest Δ they detect (80% power, two-sided 0.05: `analysis.stats.power`,
statsmodels), the seeds the target Δ needs (the paper's for the cell, else 1 point), the seeds at
which the TOST shows equivalence within ±margin if the true Δ is 0, and so the seeds that decide
the comparison either way (significant if Δ is the target, equivalent if it is 0), at the level the
family's correction asks at worst (0.05 over the comparison's treatments).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analysis.stats import equivalence, power
from analysis.tables import paper, read
from analysis.tables.text import label


@dataclass(frozen=True)
class Spread:
    """The sd of one comparison's per-seed Δ, and where it comes from."""

    sd: float
    """sd (ddof 1, points) of the per-seed Δ (treatment − base, test value accuracy)."""
    source: str
    """Where it comes from, for the plan's line ("experiment converged, 10 paired seeds")."""

    def __post_init__(self) -> None:
        if not self.sd > 0:
            raise ValueError(f"a spread must be > 0 points, got {self.sd} ({self.source})")


def observed(storage: str, experiment: str, where: list[str], arm: str, base: str, treatment: str) -> Spread | None:
    """The spread of `treatment` − `base` over the seeds an earlier experiment ran both arms on
    (its runs matching `where`); None when it has fewer than 2 such seeds or no spread."""
    runs = read.select(read.scan(storage, "runs", [experiment]), read.parse_where(where)).collect()
    if runs.is_empty():
        return None
    column = read.column(arm, runs.columns)
    done = runs.filter(pl.col("status") == "completed") if "status" in runs.columns else runs
    per_seed = (done.filter(pl.col(column).cast(pl.String).is_in([base, treatment]))
                .group_by("seed", pl.col(column).cast(pl.String).alias("arm"))
                .agg((100.0 * pl.col("test_value_acc")).mean().alias("acc"))
                .pivot(on="arm", index="seed", values="acc"))
    if base not in per_seed.columns or treatment not in per_seed.columns:
        return None
    deltas = per_seed.drop_nulls([base, treatment]).select(pl.col(treatment) - pl.col(base)).to_series()
    if deltas.len() < 2 or not deltas.std():
        return None
    return Spread(float(deltas.std(ddof=1)), f"experiment {experiment}, {deltas.len()} paired seeds")


def target(spec, arm: str, base: str, treatment: str) -> tuple[float, str]:
    """The paper's Δ for the sweep's cell where it publishes both arms (value accuracy), else 1
    point: `analysis.stats.power.target_for` on the sweep's fixed dataset and solver."""
    return power.target_for(paper.load(), arm, base, treatment, "value", spec.fixed.get("data.dataset", ""),
                            spec.fixed.get("solver", ""), treatment)


def line(name: str, seeds: int, spread: Spread | None, goal: tuple[float, str], margin: float = 1.0,
         family: int = 1) -> str:
    """One comparison's plan: its seeds, the Δ they detect, the seeds the target needs, the seeds
    the TOST at ±margin needs if Δ is 0, and the seeds that decide it either way (at 0.05 / family,
    the family's correction at worst)."""
    if spread is None:
        return (f"  {name}: {seeds} seeds; no spread to plan from (give --plan_from EXPERIMENT that ran this "
                f"comparison on 2 or more seeds, or --plan_sd POINTS; once this sweep has run, --plan reads its "
                f"last experiment)")
    mde = power.mde(spread.sd, seeds)
    need = power.n_needed(goal[0], spread.sd)
    what = f"the paper's {goal[0]:+.1f}" if goal[1] == "paper" else f"a {abs(goal[0]):g}-point Δ"
    detect = f"detects |Δ| ≥ {mde:.2f} points" if mde is not None else "detects nothing (fewer than 2 seeds)"
    alpha = power.ALPHA / family
    significant = power.n_needed(goal[0], spread.sd, alpha)
    equivalent = equivalence.tost_n(0.0, spread.sd, margin, alpha)
    level = f"0.05 / {family}" if family > 1 else "0.05"
    if equivalent is None or significant > power.MAX_N:
        either = f"no count up to {power.MAX_N:,} seeds decides it either way"
    else:
        either = (f"decided either way by {max(significant, equivalent)} seeds (at {level}: {significant} for {what}, "
                  f"{equivalent} for equivalence within ±{margin:g} if Δ is 0)")
    return (f"  {name}: {seeds} seeds, sd of the per-seed Δ {spread.sd:.2f} ({spread.source}): {detect} "
            f"(80% power, two-sided 0.05, before correction); {_count(need)} seeds would detect {what}; {either}")


def _count(n: int) -> str:
    return f"more than {power.MAX_N:,}" if n > power.MAX_N else f"about {n}"


def seeds_for(delta: float, spreads: list[Spread], cap: int) -> tuple[int, str]:
    """The seeds the most demanding comparison needs to detect `delta`, capped at `cap`, and the
    sentence that says so."""
    sd = max(s.sd for s in spreads)
    need = power.n_needed(delta, sd)
    worst = next(s for s in spreads if s.sd == sd)
    said = (f"seeds_for: {need if need <= power.MAX_N else f'more than {power.MAX_N:,}'} seeds detect Δ {abs(delta):g} "
            f"at the largest sd of the per-seed Δ, {sd:.2f} ({worst.source})")
    if need > cap:
        return cap, f"{said}; capped at max {cap}: these seeds detect |Δ| ≥ {power.mde(sd, cap):.2f} points"
    return need, said


def names(arm: str, base: str, treatment: str, where: str = "") -> str:
    """A planned comparison's name in the plan: its arms, its arm column where it is not `variant`,
    and its `where` (`Planned.label`), so two comparisons of the same arms apart are told apart."""
    said = ", ".join(x for x in ("" if arm == "variant" else arm, where) if x)
    return f"{label(treatment)} vs {label(base)}" + (f" ({said})" if said else "")


def last_experiment(storage: str, name: str) -> str | None:
    """The sweep's own last experiment in `storage`: of `name`, `name-2`, ... (the names a sweep takes,
    `psedual.job.experiment_name`) the last whose runs table holds rows; None where it never ran there.
    `--plan` right after a sweep reads its spread (issue 61, item 5) without `--plan_from`."""
    import pyarrow.fs as pafs

    from psedual.storage import filesystem

    fs, base = filesystem(storage)
    last, k = None, 1
    while True:
        name_k = name if k == 1 else f"{name}-{k}"
        if fs.get_file_info(f"{base}/runs/experiment={name_k}").type == pafs.FileType.NotFound:
            return last
        last, k = name_k, k + 1


def resolve_seeds(spec, job, planned: list) -> tuple[object, list[str]]:
    """The spec with `seeds_for` resolved to `grid.seed` (unchanged without it), and what the plan
    says of each of `planned` (`comparisons.comparisons`) at those seeds; `job`: the TuneJob's plan options."""
    from psedual.tune.space import SpecError

    spreads = {}
    stated = job.plan_sd is not None or (spec.seeds_for is not None and spec.seeds_for.sd is not None)
    own = None if job.plan_from is not None or stated else last_experiment(job.storage, spec.name)
    for p in planned:
        for t in p.treatments:
            got = None
            if job.plan_from is not None:
                got = observed(job.storage, job.plan_from, list(p.where), p.arm, p.base, t)
            elif own is not None and (got := observed(job.storage, own, list(p.where), p.arm, p.base, t)):
                got = Spread(got.sd, f"{got.source}: this sweep's last experiment (--plan_from names another)")
            elif job.plan_sd is not None:
                got = Spread(job.plan_sd, "--plan_sd")
            elif spec.seeds_for is not None and spec.seeds_for.sd is not None:
                got = Spread(spec.seeds_for.sd, "seeds_for.sd")
            spreads[(p, t)] = got
    lines = []
    if spec.seeds_for is not None:
        known = [s for s in spreads.values() if s is not None]
        if not known:
            raise SpecError(f"{job.space}: seeds_for needs the spread of the per-seed Δ: give seeds_for.sd, "
                            f"--plan_sd POINTS, or --plan_from EXPERIMENT (one that ran these comparisons)")
        n, said = seeds_for(spec.seeds_for.delta, known, spec.seeds_for.max)
        spec = spec.with_seeds(list(range(n)))
        lines.append(said)
    seeds = len(spec.grid.get("seed", [spec.fixed.get("seed", 0)])) * spec.num_samples
    for p in planned:
        for t in p.treatments:
            lines.append(line(names(p.arm, p.base, t, p.label), seeds, spreads[(p, t)],
                              target(spec, p.arm, p.base, t), p.margin, len(p.treatments)))
    return spec, lines
