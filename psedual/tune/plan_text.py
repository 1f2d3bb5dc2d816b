"""The cost plan as text (`psedual tune --plan`): a line per part and the total, the cluster's
costs, which steps sample, what is extrapolated, and the GPU-hours before and after issue 59's
speed-ups. The figures are `cost.plan_part`'s; this file only words them."""

from __future__ import annotations

from pathlib import Path

from psedual.tune.cost import (COSTS, NOT_APPLIED, OLD_ROW, PRECISION_SPEEDUP, SPEEDUP_SESSION, PartPlan,
                               recalibrate_command)
from psedual.tune.instances import ClusterCost, gpu_machine
from psedual.tune.sampling import MEASURED_SOURCE


def _hms(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def render(plans: list[PartPlan], where: str, price_cpu_hour: float, price_gpu_hour: float,
           skipped: list[str], cluster: ClusterCost | None = None, costs: Path = COSTS,
           profile: str = "PROFILE") -> str:
    """The plan as text: a line per part and the total; uncalibrated shapes listed, not priced. With
    `cluster` and GPU parts: the head's hours, the GPU nodes' setup, and which figures are
    calibrated and which extrapolated; `profile` names the profile in the command that recalibrates."""
    gpu = (f" = {cluster.gpu.name} at ${cluster.gpu.price_hour:g}/h for {cluster.gpu.gpus} {cluster.gpu.gpu}; GPU "
           f"parts from the calibration of {gpu_machine(cluster.gpu.gpu)}") if cluster is not None else ""
    lines = [f"plan on {where} (calibration: {costs.name}; ${price_cpu_hour:g}/CPU-hour, "
             f"${price_gpu_hour:g}/GPU-hour{gpu})",
             f"{'part':<9}{'trials':>7}{'epochs':>8}{'steps':>10}{'hours':>14}{'wall':>18}{'dollars':>10}"]
    total_wall = total_dollars = 0.0
    known = True
    for p in plans:
        kind = "GPU-h" if p.gpu else "CPU-h"
        price = price_gpu_hour if p.gpu else price_cpu_hour
        if p.uncalibrated or p.part_s is None:
            known = False
            lines.append(f"{p.part:<9}{p.trials:>7}{p.epochs:>8}{p.steps:>10}{'not calibrated':>42}")
            continue
        total_wall += p.wall_s
        total_dollars += p.hours * price
        lines.append(f"{p.part:<9}{p.trials:>7}{p.epochs:>8}{p.steps:>10}{p.hours:>8.2f} {kind}"
                     f"{_hms(p.wall_s):>12} at {p.concurrency}{p.hours * price:>9.2f}")
    lines.append(f"{'total':<9}{sum(p.trials for p in plans):>7}{sum(p.epochs for p in plans):>8}"
                 f"{sum(p.steps for p in plans):>10}" + (f"{'':>14}{_hms(total_wall):>18}{total_dollars:>10.2f}"
                                                         if known else "   (parts without calibration left out)"))
    if cluster is not None and any(p.gpu for p in plans):
        lines += _cluster_lines(plans, cluster, total_wall, total_dollars, known)
    if any(p.gpu for p in plans):
        lines += before_after(plans)
    for p in plans:
        if p.part_s is None:
            lines.append(f"  {p.part}: no per-part overhead measured on {p.machine or where} at concurrency "
                         f"{p.concurrency}")
        if p.uncalibrated:
            lines.append(f"  {p.part}: {len(p.uncalibrated)} trial shapes without calibration on "
                         f"{p.machine or where}, e.g. {p.uncalibrated[0]}")
        lines += _sampling(p, profile)
        lines += _extrapolated(p)
    if any(p.uncalibrated or p.part_s is None for p in plans):
        lines.append("  (measure them where they run: the same command with --calibrate; a GPU part's on the "
                     "cluster, with --address auto)")
    lines += [f"  {line}" for line in skipped]
    return "\n".join(lines)


def _cluster_lines(plans: list[PartPlan], cluster: ClusterCost, wall: float, dollars: float, known: bool) -> list[str]:
    """The cluster's costs beside the trials', and what is calibrated and what extrapolated."""
    nodes = cluster.nodes(plans)
    node_hours = nodes * (cluster.node_setup_minutes + cluster.node_idle_minutes) / 60
    setup = node_hours * cluster.gpu.price_hour
    lines = [f"  GPU nodes: {nodes} {cluster.gpu.name} brought up once each, {cluster.node_setup_minutes:g} min setup + "
             f"{cluster.node_idle_minutes:g} min idle each: {node_hours:.2f} node-h at ${cluster.gpu.price_hour:g}/h = "
             f"${setup:.2f} (setup: an estimate, not measured)"]
    if known:
        head = wall / 3600 * cluster.price_head_hour
        lines += [f"  head: {cluster.head.name} for the run's wall time, {wall / 3600:.2f} h at "
                  f"${cluster.price_head_hour:g}/h = ${head:.2f}",
                  f"  total on the cluster: ${dollars + head + setup:.2f} (trials ${dollars:.2f}, head ${head:.2f}, "
                  f"node setup and idle ${setup:.2f})"]
    else:
        lines.append(f"  head: {cluster.head.name} at ${cluster.price_head_hour:g}/h for the run's wall time (not "
                     "known until every part is calibrated)")
    for p in plans:
        if p.uncalibrated or p.part_s is None or not p.shapes:
            continue
        commits = ", ".join(sorted(set(p.shapes.values()) | {p.part_commit} - {""})) or "unknown"
        lines.append(f"  {p.part}: calibrated: the start, step and per-problem seconds of {len(p.shapes) - len(p.borrowed)} "
                     f"of its {len(p.shapes)} shape(s) and the part's overhead, measured on {p.machine} (commit "
                     f"{commits}); extrapolated: {p.epochs // max(1, p.trials)} epochs a trial from the steps timed per "
                     "shape (two epochs, three for a shape that samples; fewer steps where a shape's note says)"
                     + ("; a Train-worker trial's start (about 20 s each) is not in them" if p.gpu else ""))
    return lines


def _sampling(p: PartPlan, profile: str) -> list[str]:
    """How the part's steps were priced by what they sample, and the rows that could not price them."""
    lines = []
    if p.sampled:
        extra = p.sampling_s * p.units / 3600
        lines.append(f"  {p.part}: {p.sampled:,} of its priced trials' {p.priced_steps:,} steps sample an expression "
                     f"(ε < 1 by each trial's schedule), priced at its shape's sampled step; the others at its step "
                     f"without one (teacher-forced, or a base solver's); the sampling adds {extra:.2f} "
                     f"{'GPU-h' if p.gpu else 'CPU-h'} of its {p.hours:.2f}")
    if p.bench_sampled:
        key, solver = next(iter(sorted(p.bench_sampled.items())))
        gru = any(" variant=gru " in k for k in p.bench_sampled)
        lines.append(f"  {p.part}: extrapolated: {len(p.bench_sampled)} shapes' rows were {OLD_ROW} (they timed "
                     f"teacher-forced steps): their sampled steps priced at {MEASURED_SOURCE}, {solver}'s for {key}"
                     + ("; PseDual-GRU's at PseDual-GCN's" if gru else "")
                     + f"; to measure them: {recalibrate_command(p.gpu, profile)}")
    if p.old_rows:
        key, row = next(iter(sorted(p.old_rows.items())))
        lines.append(f"  {p.part}: not priced: {len(p.old_rows)} shapes whose trials sample an expression have a row "
                     f"{OLD_ROW} (its one step figure is a mix of teacher-forced and sampled steps the plan cannot "
                     f"tell apart), e.g. the row of {p.machine}, {row}: {key}; recalibrate: "
                     f"{recalibrate_command(p.gpu, profile)}")
    return lines


def _extrapolated(p: PartPlan) -> list[str]:
    """The part's figures that were not measured as its shapes name them, each kind in one line."""
    lines = []
    if p.borrowed:
        key, dataset = next(iter(sorted(p.borrowed.items())))
        lines.append(f"  {p.part}: extrapolated: {len(p.borrowed)} of its {len(p.shapes)} shapes priced from the "
                     f"same solver, variant and sizes timed on another data set (seconds per step and per problem "
                     f"taken as equal; steps and problems counted on their own data), e.g. {dataset} for {key}")
    if p.notes:
        note = sorted(set(p.notes.values()))
        lines.append(f"  {p.part}: extrapolated: {len(p.notes)} shapes timed with {'; '.join(note)}")
    return lines


def before_after(plans: list[PartPlan]) -> list[str]:
    """The GPU parts' hours from their calibrated shapes, before and after the measured speed-ups,
    and the speed-ups not applied for want of a GPU figure."""
    gpu = [p for p in plans if p.gpu]
    sessions = sorted({c for p in gpu for c in p.shapes.values()})
    lines = [f"GPU-hours before and after issue 59's speed-ups (the trials with calibrated figures, rows of "
             f"{', '.join(sessions) or 'no session'}; the speed-ups measured beside {SPEEDUP_SESSION}'s rows apply "
             f"to those alone: rows calibrated since were timed with them):",
             f"  {'part':<9}{'trials priced':>15}{'before':>14}{'after':>14}"]
    for p in gpu:
        lines.append(f"  {p.part:<9}{f'{p.priced} of {p.trials}':>15}{p.hours:>8.2f} GPU-h"
                     f"{p.after_seconds * p.units / 3600:>8.2f} GPU-h")
    before, after = sum(p.hours for p in gpu), sum(p.after_seconds * p.units / 3600 for p in gpu)
    lines.append(f"  {'total':<9}{f'{sum(p.priced for p in gpu)} of {sum(p.trials for p in gpu)}':>15}"
                 f"{before:>8.2f} GPU-h{after:>8.2f} GPU-h")
    from psedual.train.recipe_table import PRECISIONS_MEASURED

    bf16 = ", ".join(m.solver for m in PRECISIONS_MEASURED.values() if m.precision == "bf16") or "no solver"
    applied = sum(p.sped_up.get(PRECISION_SPEEDUP, 0) for p in gpu)
    lines.append(f"  applied: {PRECISION_SPEEDUP} (bf16 where measured faster on the H100 for base and GCN: {bf16}; "
                 f"the measured step ratio, to those variants' steps) to {applied} priced trial(s)"
                 + ("" if applied else ": none of the priced trials trains in bf16" if SPEEDUP_SESSION in sessions
                    else f": no priced trial has {SPEEDUP_SESSION}'s rows (the others were timed at their recipe's "
                         f"precision)"))
    lines += [f"  not applied: {line}" for line in NOT_APPLIED]
    return lines
