"""A grid sweep in rounds of seeds until its planned comparisons are decided (a sweep file's
`seeds` rule, `psedual.tune.seed_rule.SeedRule`): the design, the searcher's plan and judge, and
what `--plan` prints for it.

The searcher (`psedual.tune.rounds.SeedRounds`) runs the rounds; it knows no statistics. Here its
judge is `analysis.stats.sequential.decide` on the group-sequential design the rule fixes before
the first look (its looks `schedule(first, step, max, taken)`, its spending and α's, the
margin and the target), and its plan is the sweep's own planned comparisons (`comparisons.comparisons`):
each treatment arm against its base arm, in each cell of the sweep's other grid keys.
"""

from __future__ import annotations

import functools
import itertools
import math

from analysis.stats.sequential import SequentialDesign, check_margin, decide, default_margin, operating, schedule
from psedual.tune.rounds import Pair, RoundPlan, SeedRounds
from psedual.tune.seed_rule import SeedRule
from psedual.tune.space import SpecError, make_config

NO_GRID = ("seed", "data.fold")
"""Grid keys a sweep in rounds refuses: its seeds are the rule's, and folds pooled per seed are not
yet a unit of its looks."""
TARGET_FROM = {"rule": "the sweep file's", "paper": "the paper's"}
"""Where a claim's target Δ comes from, as its verdict names it."""


def design(rule: SeedRule) -> SequentialDesign:
    """The rule's design: looks every `step` seeds from `first` (or from the `taken` look) to `max`,
    spending planned over `max`."""
    taken = (rule.taken,) if rule.taken is not None else ()
    return SequentialDesign(looks=schedule(rule.first, rule.step, rule.max, taken), alpha=rule.alpha,
                            alpha_one_sided=rule.alpha_one_sided, spending=rule.spending, planned_max=rule.max)


def check(spec, path: str) -> None:
    """A sweep file's `seeds` rule against the rest of the file and the design: a SpecError in one
    line naming the file and the key (a margin's in points of accuracy)."""
    rule = spec.seeds
    if rule is None:
        return
    if spec.seeds_for is not None:
        raise SpecError(f"{path}: give seeds (rounds until decided) or seeds_for (a fixed count), not both")
    clash = [k for k in NO_GRID if k in spec.grid]
    if clash:
        raise SpecError(f"{path}: seeds: grid.{clash[0]} cannot be gridded in a sweep in rounds (the rule gives the "
                        f"seeds{'' if clash[0] == 'seed' else '; folds are not yet a unit of its looks: fix one'})")
    if spec.num_samples != 1:
        raise SpecError(f"{path}: seeds: num_samples must be 1 in a sweep in rounds (each seed is a trial)")
    try:
        design(rule)
    except ValueError as err:
        raise SpecError(f"{path}: seeds: {err}") from None
    margin = rule.margin if rule.margin is not None else default_margin(rule.target)[0]
    try:
        check_margin(margin, rule.target, TARGET_FROM["rule"])
    except ValueError as err:
        raise SpecError(f"{path}: seeds.{err}") from None


def _value(config, key: str):
    return config.variant if key == "variant" else config.flat().get(key)


def _matches(config, arm: str, value: str, where: tuple[str, ...]) -> bool:
    """Whether a trial's config is `arm`=`value` and meets each `KEY=VALUE` (`KEY=null|VALUE`: or none)."""
    if str(_value(config, arm)) != value:
        return False
    for w in where:
        key, _, want = w.partition("=")
        got = _value(config, key)
        if want.startswith("null|"):
            if got is not None and str(got) != want.removeprefix("null|"):
                return False
        elif str(got) != want:
            return False
    return True


def targets(spec, planned) -> dict[tuple, tuple[float | None, str]]:
    """Each (planned comparison, treatment) → its target Δ and where it comes from: the rule's,
    else the paper's for the cell, else none (no below-target test)."""
    from psedual.power_plan import target

    out = {}
    for p in planned:
        for t in p.treatments:
            if spec.seeds.target is not None:
                out[(p, t)] = (float(spec.seeds.target), TARGET_FROM["rule"])
                continue
            goal, source = target(spec, p.arm, p.base, t)
            out[(p, t)] = (goal, TARGET_FROM["paper"]) if source == "paper" else (None, "")
    return out


def round_plan(spec, planned, earlier: dict | None = None) -> tuple[RoundPlan, dict, dict]:
    """The searcher's plan (arms: every trial config without its seed that a claim needs; pairs:
    each treatment against its base in each cell), each claim's (target, where from), and each
    claim's (planned comparison, treatment)."""
    from psedual.power_plan import names

    cells_keys = [k for k in spec.grid if k not in NO_GRID]
    cells = [dict(zip(cells_keys, combo)) for combo in itertools.product(*(spec.grid[k] for k in cells_keys))]
    arms, pairs, goals, origin = {}, [], {}, {}
    found = targets(spec, planned)
    for p in planned:
        for t in p.treatments:
            for cell in cells:
                ids = {}
                for value in (p.base, t):
                    hits = [a for a in (spec.arms or [{}]) if _matches(make_config({**spec.fixed, **a, **cell}),
                                                                       p.arm, str(value), p.where)]
                    if len(hits) != 1:
                        raise SpecError(f"{spec.name}: {names(p.arm, p.base, t, p.label)}: {len(hits)} arms are "
                                        f"{p.arm}={value}{' ' + p.label if p.label else ''}; a sweep in rounds needs one")
                    words = {**hits[0], **cell}
                    ids[value] = ", ".join(f"{k}={v}" for k, v in words.items()) or "all"
                    arms[ids[value]] = {**spec.fixed, **words}
                claim = names(p.arm, p.base, t, p.label) + (f" [{', '.join(f'{k}={v}' for k, v in cell.items())}]"
                                                            if len(cells) > 1 else "")
                pairs.append(Pair(claim, ids[p.base], ids[t]))
                goals[claim] = found[(p, t)]
                origin[claim] = (p, t)
    looks = design(spec.seeds).looks
    return RoundPlan(arms, tuple(pairs), looks, dict(earlier or {})), goals, origin


def judge(rule: SeedRule, goals: dict, looks: tuple, pair: Pair, k: int, taken: tuple, diffs: list) -> dict:
    """The searcher's judge: look k of the schedule for `pair`, on the design whose looks so far are
    the pair counts it took (`taken`: a look short of its plan is analysed at its count) and whose
    later looks are the schedule's."""
    base = design(rule)
    later = tuple(n for n in looks[k + 1:] if n > taken[-1])
    d = SequentialDesign(looks=(*taken, *later), alpha=base.alpha, alpha_one_sided=base.alpha_one_sided,
                         spending=base.spending, planned_max=base.planned_max)
    target, source = goals.get(pair.claim, (None, ""))
    look = decide(d, diffs, len(taken) - 1, rule.margin, target, source or "the target")
    return {**look.row(pair.claim), "planned_look": k + 1, "design": d.describe()}


def earlier_scores(spec, plan: RoundPlan, storage: str) -> dict:
    """(arm id, seed) → score (points) of the completed trials of `continue_from` matching each arm,
    seeds below `taken`: the study's first look."""
    import polars as pl

    rule = spec.seeds
    path = f"{storage.rstrip('/')}/runs/experiment={rule.continue_from}"
    try:
        runs = pl.read_parquet(f"{path}/*.parquet")
    except (FileNotFoundError, OSError, pl.exceptions.ComputeError) as err:
        raise SpecError(f"{spec.name}: seeds.continue_from: no runs table at {path} ({err})") from None
    runs = runs.filter((pl.col("status") == "completed") & (pl.col("seed") < rule.taken))
    out = {}
    for arm, flat in plan.arms.items():
        for row in arm_rows(runs, flat).iter_rows(named=True):
            out[(arm, int(row["seed"]))] = 100.0 * float(row["test_value_acc"])
    for pair in plan.pairs:
        n = sum((pair.base, s) in out and (pair.treatment, s) in out for s in range(rule.taken))
        if n != rule.taken:
            raise SpecError(f"{spec.name}: seeds.continue_from {rule.continue_from}: {pair.claim} has {n} complete "
                            f"seed pairs below {rule.taken}, not the {rule.taken} of its taken look")
    return out


def arm_rows(runs, flat: dict):
    """The rows of a runs table whose config is `flat`'s in every column it has, but the seed and
    where it ran (device, threads)."""
    import polars as pl

    want = make_config(flat).flat()
    keys = [k for k in want if k in runs.columns and k not in ("seed", "device", "threads")]
    return runs.filter(pl.all_horizontal([pl.col(k).eq_missing(want[k]) for k in keys])) if keys else runs


def searcher(spec, planned, storage: str, experiment: str) -> SeedRounds:
    """The sweep's searcher: rounds of its comparisons' arms, judged by the rule's design, scored by
    testing each trial's checkpoint, its looks table written at every look."""
    from psedual.results.looks import write_looks
    from psedual.tune.rounds import CheckpointScore, TrialFailure
    from psedual.tune.sweep import OBJECTIVE

    plan, goals, _ = round_plan(spec, planned)
    if spec.seeds.continue_from is not None:
        plan = RoundPlan(plan.arms, plan.pairs, plan.looks, earlier_scores(spec, plan, storage))
    return SeedRounds(plan, functools.partial(judge, spec.seeds, goals, plan.looks),
                      CheckpointScore(storage, experiment),
                      functools.partial(write_looks, storage, experiment), spec.resources.max_concurrent,
                      metric=OBJECTIVE, mode="max", failure=TrialFailure(experiment))


def plan_lines(spec, planned, spread, hours: dict | None = None, studies: int = 20_000) -> list[str]:
    """`--plan` for a sweep in rounds: per claim, its expected and maximum seeds (and trial-hours,
    where `hours` gives an arm's hours per trial) under the rule at true Δ 0 and at its target (or 1
    point), beside the fixed design of the same power (statsmodels' paired t). `spread(planned,
    treatment)`: the sd of the per-seed Δ and its source (`power_plan.Spread`), or None."""
    from statsmodels.stats.power import TTestPower

    rule = spec.seeds
    d = design(rule)
    plan, goals, origin = round_plan(spec, planned)
    lines = [f"  rule: {rule.label}; {d.describe()}"]
    if rule.continue_from is not None:
        lines.append(f"  the first look is experiment {rule.continue_from}'s {rule.taken} seeds (counted, not rerun)")
    for pair in plan.pairs:
        target, where = goals[pair.claim]
        got = spread(*origin[pair.claim])
        if got is None:
            lines.append(f"  {pair.claim}: no spread to plan from (give --plan_sd POINTS or --plan_from EXPERIMENT)")
            continue
        sd, source = got.sd, got.source
        margin = rule.margin if rule.margin is not None else default_margin(target)[0]
        per_trial = None if hours is None else hours.get(pair.base, math.nan) + hours.get(pair.treatment, math.nan)
        lines.append(f"  {pair.claim}: margin ±{margin:g} points of accuracy"
                     + (f", target {target:+g} ({where})" if target is not None else ", no target")
                     + f"; sd of the per-seed Δ {sd:.2f} ({source})")
        for delta in dict.fromkeys((0.0, target if target is not None else 1.0)):
            o = operating(d, delta, sd, rule.margin, target, studies=studies)
            power = o.better if delta else o.below_target if target is not None else o.equivalent
            what = ("better" if delta else f"smaller than {target:+g}" if target is not None
                    else f"equivalent within ±{margin:g}")
            fixed = (_fixed_n(TTestPower(), delta, sd, power, rule.alpha, "two-sided") if delta
                     else _fixed_n(TTestPower(), target, sd, power, rule.alpha_one_sided, "larger")
                     if target is not None else None)
            done = rule.taken or 0  # seeds an earlier experiment ran: not run again, not paid again
            priced = per_trial is not None and not math.isnan(per_trial)
            cost = f"; {(o.expected_seeds - done) * per_trial:.1f} trial-hours expected, " \
                   f"{(o.max_seeds - done) * per_trial:.1f} at most" if priced else ""
            same = ("none at this power" if fixed is None else
                    f"{fixed} seeds" + (f", {max(fixed - done, 0) * per_trial:.1f} trial-hours" if priced else ""))
            lines.append(f"    true Δ {delta:+g}: P({what}) {power:.1%}, undecided at {o.max_seeds} {o.undecided:.1%}; "
                         f"expected seeds {o.expected_seeds:.1f} (max {o.max_seeds}){cost}; the fixed design of the same "
                         f"power: {same}")
    return lines


def _fixed_n(solver, delta: float, sd: float, power: float, alpha: float, alternative: str) -> int | None:
    """Seeds a fixed paired t-test at `alpha` (`alternative`: two-sided, or one-sided `larger`)
    needs for `power` at a distance `delta` from its null (None where no count has that power)."""
    if not 0.05 < power < 0.9999:
        return None
    return math.ceil(solver.solve_power(effect_size=abs(delta) / sd, alpha=alpha, power=power, alternative=alternative))


def arm_hours(spec, plan: RoundPlan, gpu: str) -> tuple[dict, str]:
    """Each arm's hours per trial (CPU- or GPU-hours) from the stored calibration of this machine
    (a GPU sweep: of the plan's `gpu`), and the machine; an arm without figures is left out."""
    from psedual.tune.cost import machine, plan_part, read_costs
    from psedual.tune.instances import gpu_machine

    costs = read_costs()
    where = gpu_machine(gpu) if spec.resources.gpus_per_worker > 0 else machine()
    out = {}
    for arm, flat in plan.arms.items():
        part = plan_part(arm, [make_config(flat)], spec.resources, costs, where)
        if not part.uncalibrated:
            out[arm] = part.hours
    return out, where


def plan_text(spec, job, planned) -> list[str]:
    """`--plan` of a sweep in rounds for the job's plan options (`plan_sd`, `plan_from`)."""
    from psedual.power_plan import Spread, observed

    def spread(p, t):
        if job.plan_from is not None:
            return observed(job.storage, job.plan_from, list(p.where), p.arm, p.base, t)
        return Spread(job.plan_sd, "--plan_sd") if job.plan_sd is not None else None

    plan, _, _ = round_plan(spec, planned)
    hours, where = arm_hours(spec, plan, job.prices.cluster_cost().gpu.gpu)
    unit = "GPU" if spec.resources.gpus_per_worker > 0 else "CPU"
    head = [f"  trial-hours: {unit}-hours per trial from the calibration of {where} (psedual/tune/costs.tsv)"]
    missing = sorted(set(plan.arms) - set(hours))
    measured = measured_hours(spec, plan, job.storage, job.plan_from, missing) if job.plan_from and missing else {}
    hours.update(measured)
    if measured:
        head.append(f"  trial-hours of {'; '.join(measured)}: measured by experiment {job.plan_from} (its completed "
                    f"trials' mean training seconds, not calibrated on {where})")
    if set(missing) - set(measured):
        head.append(f"  no trial-hours for {'; '.join(sorted(set(missing) - set(measured)))}: not calibrated on {where}")
    lines = plan_lines(spec, planned, spread, hours)
    return lines[:1] + head + lines[1:]


def looks_text(storage: str, experiment: str) -> list[str]:
    """After a sweep in rounds: each claim's last look, as its looks table holds it."""
    import polars as pl

    from psedual.results.looks import looks_path
    from psedual.storage import filesystem

    fs, _ = filesystem(storage)
    with fs.open_input_file(looks_path(storage, experiment)) as f:
        looks = pl.read_parquet(f)
    lines = [f"looks: {looks_path(storage, experiment)} ({looks.height} rows)"]
    for claim, rows in looks.group_by("claim", maintain_order=True):
        last = rows.row(rows.height - 1, named=True)
        figures = ("" if last["delta"] is None else
                   f": Δ {last['delta']:+.2f} [{last['ci_low']:+.2f}, {last['ci_high']:+.2f}] points")
        lost = f"; no seeds (a trial that failed, stopped or was lost): {last['not_seeds_list']}" \
            if last["not_seeds"] else ""
        lines.append(f"  {claim[0]}{figures}: {last['verdict']}{lost}")
    return lines


def measured_hours(spec, plan: RoundPlan, storage: str, experiment: str, arms: list[str]) -> dict:
    """Hours per trial of `arms` as an earlier experiment measured them: its completed trials' mean
    `train_seconds` (training only: the test after it is not counted) × the CPUs or GPUs a trial holds."""
    import polars as pl

    from psedual.tune.cost import plan_part

    try:
        runs = pl.read_parquet(f"{storage.rstrip('/')}/runs/experiment={experiment}/*.parquet")
    except (FileNotFoundError, OSError, pl.exceptions.ComputeError):
        return {}
    runs = runs.filter(pl.col("status") == "completed")
    units = plan_part("", [], spec.resources, {}, "").units
    out = {}
    for arm in arms:
        seconds = arm_rows(runs, plan.arms[arm])["train_seconds"].mean()
        if seconds is not None:
            out[arm] = float(seconds) * units / 3600
    return out
