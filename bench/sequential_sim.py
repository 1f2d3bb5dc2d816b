"""Error rates of seeds-until-decided under its own stopping (issue 57), by simulation through the
platform's decision code (`analysis.stats.sequential.simulate`, the path `decide` takes).

    nice .venv/bin/python bench/sequential_sim.py              # 20,000 studies a setting
    nice .venv/bin/python bench/sequential_sim.py --studies 2000 --seed 7

Each setting draws paired seed differences (treatment − base, points of accuracy), runs the design
on them look by look, and counts what each study reached before it stopped. Beside each sequential
rate: naive repeated looks (scipy's paired t, or statsmodels' TOST, at 0.05 at every look of the same
schedule, stopping at the first p < 0.05) and one fixed look. Printed: (0) the calibration of the t
boundaries, (a) false better/worse at Δ = 0, (b) false "equivalent" at Δ = margin, (c) power and
expected seeds at Δ = target and Δ = 0 beside the fixed design of the same power, (d) heavy-tailed
differences (t, 3 df, scaled to the same sd) and one collapsed seed. Each rate carries its Monte Carlo
standard error √(p(1 − p)/studies); expected seeds carry sd/√studies.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
import warnings

import numpy as np
from scipy import stats
from statsmodels.stats.power import TTestPower

from analysis.stats import sequential as sq
from analysis.stats.equivalence import tost_n
from analysis.stats.power import n_needed

ISSUE_LOOKS = (6, 10, 16, 24, 32, 40)
"""the issue's schedule, at which naive looks give 16.6% false better/worse and 14.6% false equivalent"""
SD = 1.3
"""sd of a seed difference in points: the control study's (PseDual-GCN vs base, 16 seeds, about 1.3-2.0)"""
TARGET = 0.9
"""the paper's MAWPS Δ for PseDual-GCN"""
CONTROL_SD = 1.918
"""sd of the 16 seed differences of the control study's open claim, PseDual-GCN (scheduled fusion) vs base"""
CONTROL_DELTA = 0.173
"""its mean Δ in points (docs/control: +0.17 [-0.85, +1.20])"""
COLLAPSE = -40.0
"""a collapsed seed: the treatment run of one pair scores about 40 points below its base"""


def draw(rng: np.random.Generator, studies: int, seeds: int, delta: float, tails: str) -> np.ndarray:
    """studies × seeds paired differences with mean `delta` and sd SD: normal, t with 3 df scaled to
    sd SD, or normal with one pair (at a uniformly drawn seed) collapsed."""
    if tails == "normal":
        return rng.normal(delta, SD, (studies, seeds))
    if tails == "t3":
        return delta + rng.standard_t(3, (studies, seeds)) * SD / math.sqrt(3.0)
    x = rng.normal(delta, SD, (studies, seeds))
    x[np.arange(studies), rng.integers(0, seeds, studies)] = delta + COLLAPSE
    return x


def naive(x: np.ndarray, looks, margin: float | None) -> tuple[np.ndarray, np.ndarray]:
    """First p < 0.05 over the looks, unadjusted: (reached, seeds at stop). With a margin the TOST
    (both one-sided paired t's at 0.05, statsmodels' ttost_paired rule), else the two-sided paired t."""
    reached = np.zeros(x.shape[0], bool)
    seeds = np.full(x.shape[0], looks[-1])
    for n in looks:
        part = x[:, :n]
        if margin is None:
            p = stats.ttest_1samp(part, 0.0, axis=1).pvalue
        else:
            p = np.maximum(stats.ttest_1samp(part + margin, 0.0, axis=1, alternative="greater").pvalue,
                           stats.ttest_1samp(part - margin, 0.0, axis=1, alternative="less").pvalue)
        new = ~reached & (p < 0.05)
        seeds[new] = n
        reached |= new
    return reached, seeds


def header(columns: str) -> None:
    """A Markdown table's header row and its rule (`columns` is the header row, `| a | b |`)."""
    print(columns)
    print("|" + "---|" * (columns.count("|") - 1))


def rate(hits: np.ndarray) -> str:
    p = float(np.mean(hits))
    return f"{100 * p:6.2f}% ± {100 * math.sqrt(p * (1 - p) / hits.size):.2f}"


def mean_seeds(seeds: np.ndarray) -> str:
    return f"{seeds.mean():5.1f} ± {seeds.std(ddof=1) / math.sqrt(seeds.size):.2f}"


def one_sided_n(effect: float, power: float) -> int:
    """Fixed seeds for the one-sided paired t at 0.05 to show Δ < target with `power` (statsmodels)."""
    with warnings.catch_warnings():  # statsmodels warns while its root finder brackets
        warnings.simplefilter("ignore")
        n = TTestPower().solve_power(effect_size=effect, nobs=None, alpha=0.05, power=power, alternative="larger")
    return math.ceil(float(np.squeeze(n)))


def only(design: sq.SequentialDesign, decision: str) -> sq.SequentialDesign:
    """The design stopping on `decision` alone: every look stays open to that test, its worst case."""
    return dataclasses.replace(design, stop_on=(decision,))


def calibration_table(design: sq.SequentialDesign) -> None:
    b, c = sq.boundaries(design), sq.calibration(design)
    print(f"\n(0) calibration, {design.describe()}")
    print("    boundaries: normal z (gsDesign recursion), the z's nominal level at the look's df, t calibrated "
          "by simulation; cumulative null crossing rate of each on 400,000 fresh null studies (MC se about 0.03%)")
    header("| look | seeds | α spent (2-sided) | z | nominal t | t | cum. rate z | nominal | t "
           "| α spent (1-sided) | z | t | cum. rate z | t |")
    nominal = stats.t.isf(stats.norm.sf(b.z_two_sided), b.seeds - 1)
    for k, n in enumerate(design.looks):
        print(f"| {k + 1} | {n} | {b.spent_two_sided[k]:.4f} | {b.z_two_sided[k]:.3f} | {nominal[k]:.3f} | "
              f"{b.t_two_sided[k]:.3f} | {100 * c['z_two_sided'][k]:.2f}% | {100 * c['nominal_two_sided'][k]:.2f}% | "
              f"{100 * c['t_two_sided'][k]:.2f}% | {b.spent_one_sided[k]:.4f} | {b.z_one_sided[k]:.3f} | "
              f"{b.t_one_sided[k]:.3f} | {100 * c['z_one_sided'][k]:.2f}% | {100 * c['t_one_sided'][k]:.2f}% |")


def plan(margin: float) -> None:
    """(e) The open claim of the control study continued: its 16 seeds counted as look 1, then every
    4 seeds to 40, at that claim's own sd; each true Δ's decisions and expected seeds (`operating`)."""
    design = sq.SequentialDesign.from_rule(first=6, step=4, max_seeds=40, taken=(16,))
    print(f"\n(e) the control study's PseDual-GCN vs base continued: {design.describe()}; sd {CONTROL_SD} "
          f"(its 16 seeds), target {TARGET:+g}, margin ±{margin:g}; 20,000 studies a Δ")
    header("| true Δ | better | worse | equivalent | smaller than the target | undecided at 40 | expected seeds |")
    for delta in (0.0, CONTROL_DELTA, TARGET):
        o = sq.operating(design, delta, CONTROL_SD, margin, TARGET, studies=20_000, seed=58)
        print(f"| {delta:+.2f} | {100 * o.better:.1f}% | {100 * o.worse:.1f}% | {100 * o.equivalent:.1f}% | "
              f"{100 * o.below_target:.1f}% | {100 * o.undecided:.1f}% | {o.expected_seeds:.1f} ± "
              f"{o.expected_seeds_se:.2f} |")
    print(f"fixed design: the paired t needs {n_needed(TARGET, CONTROL_SD)} seeds for 80% power at {TARGET:+g}; "
          f"the TOST at ±{margin:g} needs {tost_n(0.0, CONTROL_SD, margin, 0.05)} at Δ 0 (80%)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=20_000, help="simulated studies a setting")
    parser.add_argument("--seed", type=int, default=57, help="seed of the simulated studies")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    n = args.studies
    print("$ " + " ".join(["python", "bench/sequential_sim.py", *(sys.argv[1:] if argv is None else argv)]))
    margin, why = sq.default_margin(TARGET)
    print(f"settings: {n:,} studies a setting, seed {args.seed}; seed differences sd {SD} points; target Δ "
          f"{TARGET:+g}; default margin {why}")
    issue = sq.SequentialDesign(looks=ISSUE_LOOKS)
    rule = sq.SequentialDesign.from_rule(first=6, step=4, max_seeds=40)
    taken = sq.SequentialDesign.from_rule(first=6, step=4, max_seeds=40, taken=(16,))
    pocock = sq.SequentialDesign(looks=ISSUE_LOOKS, spending="pocock")
    designs = {"issue looks, O'Brien–Fleming": issue, "issue looks, Pocock": pocock,
               "first 6, step 4, max 40": rule, "taken 16, step 4, max 40": taken}
    for name, design in designs.items():
        print(f"design {name}: {design.describe()}")
    calibration_table(issue)

    print("\n(a) Δ = 0, normal differences: P(better or worse), nominal 5%; the worst case stops on the difference "
          "test alone (every look open to it), the full rule on any decision (target, margin as above)")
    header("| design | sequential, worst case | expected seeds | sequential, full rule | expected seeds | "
           "naive repeated looks (paired t at 0.05) | fixed look |")
    x = draw(rng, n, 40, 0.0, "normal")
    for name, design in designs.items():
        alone = sq.simulate(only(design, "difference"), x, margin, TARGET)
        out = sq.simulate(design, x, margin, TARGET)
        hit, _ = naive(x, design.looks, None)
        fixed = stats.ttest_1samp(x[:, :design.looks[-1]], 0.0, axis=1).pvalue < 0.05
        print(f"| {name} | {rate(alone.better | alone.worse)} | {mean_seeds(alone.seeds)} | "
              f"{rate(out.better | out.worse)} | {mean_seeds(out.seeds)} | {rate(hit)} | "
              f"{design.looks[-1]} seeds: {rate(fixed)} |")
    fixed16 = stats.ttest_1samp(x[:, :16], 0.0, axis=1).pvalue < 0.05
    print(f"one fixed look at 16 seeds: {rate(fixed16)}")

    print("\n(b) Δ = margin: P(equivalent), nominal 5% (true Δ +1, margin ±1, no target test); worst case: stops "
          "on equivalence alone; full rule: on difference or equivalence")
    header("| design | sequential, worst case | sequential, full rule | naive repeated TOST at 0.05 | "
           "fixed TOST at the last look |")
    x = draw(rng, n, 40, 1.0, "normal")
    for name, design in designs.items():
        alone = sq.simulate(only(design, "equivalence"), x, 1.0, None)
        out = sq.simulate(design, x, 1.0, None)
        hit, _ = naive(x, design.looks, 1.0)
        fixed, _ = naive(x, design.looks[-1:], 1.0)
        print(f"| {name} | {rate(alone.equivalent)} | {rate(out.equivalent)} | {rate(hit)} | {rate(fixed)} |")
    alone = sq.simulate(only(issue, "equivalence"), -x, 1.0, None)
    print(f"true Δ −1 (the other TOST half), issue looks, worst case: {rate(alone.equivalent)}")
    x = draw(rng, n, 40, TARGET, "normal")
    alone = sq.simulate(only(issue, "target"), x, margin, TARGET)
    print(f"true Δ = target {TARGET:+g}: P(smaller than the target), issue looks, worst case (stops on it alone): "
          f"{rate(alone.below_target)}")

    print(f"\n(c) power and expected seeds, beside the fixed design of the same power (target {TARGET:+g}, "
          f"margin ±{margin:g}, sd {SD})")
    header("| design | true Δ | decision | sequential power | expected seeds | fixed design of that power | "
           "expected / fixed |")
    at_target, at_zero = draw(rng, n, 40, TARGET, "normal"), draw(rng, n, 40, 0.0, "normal")
    for name in ("issue looks, O'Brien–Fleming", "first 6, step 4, max 40", "issue looks, Pocock"):
        design = designs[name]
        out = sq.simulate(design, at_target, margin, TARGET)
        power = float(out.better.mean())
        fixed = n_needed(TARGET, SD, power=power)
        print(f"| {name} | {TARGET:+g} | better | {rate(out.better)} | {mean_seeds(out.seeds)} | "
              f"{fixed} seeds (paired t) | {out.seeds.mean() / fixed:.2f} |")
        out = sq.simulate(design, at_zero, margin, TARGET)
        power = float(out.below_target.mean())
        fixed = one_sided_n(TARGET / SD, power)
        print(f"| {name} | 0 | smaller than {TARGET:+g} (stops on any) | {rate(out.below_target)} | "
              f"{mean_seeds(out.seeds)} | {fixed} seeds (one-sided t) | {out.seeds.mean() / fixed:.2f} |")
        tost = dataclasses.replace(design, stop_on=("difference", "equivalence"))
        out = sq.simulate(tost, at_zero, margin, None)
        power = float(out.equivalent.mean())
        fixed = tost_n(0.0, SD, margin, 0.05, goal=power)
        print(f"| {name} | 0 | equivalent within ±{margin:g} (no target test) | {rate(out.equivalent)} | "
              f"{mean_seeds(out.seeds)} | {fixed} seeds (TOST) | {out.seeds.mean() / fixed:.2f} |")

    print("\n(d) heavy tails and a collapsed seed, issue looks, O'Brien–Fleming (nominal 5%; rates in the worst case, "
          "power under the full rule)")
    header("| differences | P(better or worse), Δ = 0 | naive | P(equivalent ±1), Δ = +1 | naive | "
           f"P(better), Δ = {TARGET:+g} | expected seeds at {TARGET:+g} |")
    for tails, label in (("normal", "normal"), ("t3", "t, 3 df, sd 1.3"),
                         ("collapsed", f"normal, one pair at {COLLAPSE:+g}")):
        null, edge, effect = (draw(rng, n, 40, delta, tails) for delta in (0.0, 1.0, TARGET))
        a = sq.simulate(only(issue, "difference"), null, margin, TARGET)
        b = sq.simulate(only(issue, "equivalence"), edge, 1.0, None)
        c = sq.simulate(issue, effect, margin, TARGET)
        print(f"| {label} | {rate(a.better | a.worse)} | {rate(naive(null, ISSUE_LOOKS, None)[0])} | "
              f"{rate(b.equivalent)} | {rate(naive(edge, ISSUE_LOOKS, 1.0)[0])} | {rate(c.better)} | "
              f"{mean_seeds(c.seeds)} |")
    plan(margin)
    print("a collapsed seed makes every test conservative (its sd swamps the mean: t near ±1) and costs the power "
          "to detect the target; heavy tails (t, 3 df) keep the rates at or below nominal")
    print(f"\nwall time {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
