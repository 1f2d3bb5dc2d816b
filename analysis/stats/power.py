"""What each claim could have detected, and what it would take: statsmodels' power analysis of
the claim's own test at its own n, from the observed spread of its paired differences.

- Several seeds (paired t-test over seeds): the unit is the seed; the spread is the sd of the
  per-seed Δ; `TTestPower` at n = the seeds.
- One seed (exact McNemar over examples): the unit is the example; the spread is the sd of the
  per-example difference (−1, 0 or +1); `TTestPower` at n = the examples, the large-sample form of
  McNemar's test (statsmodels has no exact McNemar power). The seeds needed are not measurable
  from one seed: the examples needed at this spread are given instead.

Both at 80% power and a two-sided 0.05 (unadjusted: the family's correction asks for more).
The target Δ is the paper's for the cell where it publishes both arms (`paper.delta`), else 1 point.
"""

from __future__ import annotations

import math
import warnings

import polars as pl
from statsmodels.stats.power import TTestPower

from analysis.stats.stats import MIN_SEEDS
from analysis.tables import paper
from analysis.tables.claim import Claim, claims_of

POWER = 0.8
ALPHA = 0.05
DEFAULT_TARGET = 1.0
"""the target Δ in points where the paper has none for the cell"""
MAX_N = 100_000
"""seeds (or examples) beyond which the count is given as `> MAX_N`"""
PAPER_TABLES = {("variant", "base"): "table1", ("psedual.fusion", "teacher_forcing"): "table3",
                ("variant", "llm"): "table2"}
"""(arm column, base arm) → the paper's table whose Δ is the target"""
COLUMNS = {"mde": pl.Float64, "target_delta": pl.Float64, "target_from": pl.String, "n_needed": pl.Int64,
           "needed_unit": pl.String}
"""the columns `annotate` adds to the claim rows"""


def mde(sd: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest |Δ| (in sd's units times `sd`) a two-sided one-sample t-test over n paired
    differences detects with `power`; None without spread or below 2 units."""
    if n < 2 or not sd or not math.isfinite(sd):
        return None
    with warnings.catch_warnings():  # statsmodels warns while its root finder brackets
        warnings.simplefilter("ignore")
        d = TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power, alternative="two-sided")
    d = float(d[0] if hasattr(d, "__len__") else d)
    return d * sd if math.isfinite(d) and d > 0 else None


def n_needed(target: float, sd: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """The fewest paired units (at least 2) whose two-sided t-test detects |target| with `power`
    at this spread: statsmodels' `solve_power` for nobs, rounded up; MAX_N + 1 beyond MAX_N; None
    without spread or target."""
    if not sd or not math.isfinite(sd) or not target:
        return None
    with warnings.catch_warnings():  # statsmodels warns while its root finder brackets
        warnings.simplefilter("ignore")
        n = TTestPower().solve_power(effect_size=abs(target) / sd, nobs=None, alpha=alpha, power=power,
                                     alternative="two-sided")
    n = float(n[0] if hasattr(n, "__len__") else n)
    if not math.isfinite(n) or n > MAX_N:
        return MAX_N + 1
    return max(math.ceil(n), 2)


def example_sd(only_base: int, only_treatment: int, n: int) -> float | None:
    """The sd (ddof 1, in points) of the per-example difference treatment − base, from the
    discordant counts: each is +1 (only the treatment right), −1 (only the base) or 0."""
    if n < 2:
        return None
    mean = (only_treatment - only_base) / n
    var = ((only_base + only_treatment) / n - mean ** 2) * n / (n - 1)
    return 100.0 * math.sqrt(max(var, 0.0))


def spread(claim: Claim) -> float | None:
    """The sd (points) of a claim's paired differences: per seed (`delta_sd`), or (one seed) per
    example from the discordant counts (`example_sd`); None where neither is known."""
    if claim.n_seeds > 1:
        return claim.delta_sd
    if claim.only_base is None:
        return None
    return example_sd(claim.only_base, claim.only_treatment, claim.n_examples)


def target(numbers: pl.DataFrame, claim: Claim) -> tuple[float, str]:
    """A claim's target Δ and where it comes from (`target_for` its cell and arms)."""
    return target_for(numbers, claim.arm, claim.base_arm, claim.treatment_arm, claim.metric, claim.dataset,
                      claim.solver, claim.group, claim.controls)


def target_for(numbers: pl.DataFrame, arm: str, base_arm: str, treatment_arm: str, metric: str, dataset: str,
               solver: str, group: str, controls: str | None = None) -> tuple[float, str]:
    """The target Δ of a comparison and where it comes from: the paper's Δ for the cell, else
    DEFAULT_TARGET (also where the arms hold a control: the paper compares no control with anything)."""
    table = None if controls else PAPER_TABLES.get((arm, base_arm))
    if table is not None:
        encoder = None
        if table == "table3":  # the cell's variant: Table 3's rows are GCN's
            encoder = next((g for g in group.split(" / ") if g in ("gru", "gcn")), None)
        got = paper.delta(numbers, table, dataset, solver, base_arm, treatment_arm, metric, encoder)
        if got:  # a published Δ of 0 is no target: no n detects it
            return got, "paper"
    return DEFAULT_TARGET, "default"


def annotate(claims: pl.DataFrame, numbers: pl.DataFrame | None = None,
             target_delta: float | None = None) -> pl.DataFrame:
    """The claim rows with their MDE, target Δ (`target_delta` where given, else `target`), the n
    that detects it and its unit (seeds, or examples for one seed). The verdict is the claim's own
    (`analysis.claims.verdicts`: an undecided one already says what would decide it)."""
    numbers = paper.load() if numbers is None else numbers
    out = []
    for c in claims_of(claims):
        one = c.n_seeds == 1 and c.only_base is not None  # one seed: the examples are the unit
        sd, n, unit = spread(c), (c.n_examples if one else c.n_seeds), ("examples" if one else "seeds")
        goal, source = (target_delta, "given") if target_delta is not None else target(numbers, c)
        need = n_needed(goal, sd)
        if one and c.trainable:  # one trained (or sampled) seed: no count of examples makes a method claim
            need, unit = None, "seeds"
        out.append({"mde": mde(sd, n), "target_delta": goal, "target_from": source, "n_needed": need,
                    "needed_unit": unit})
    added = pl.DataFrame(out, schema=COLUMNS)
    return claims.drop([c for c in COLUMNS if c in claims.columns]).with_columns(added)


TARGETS = {"paper": "the paper's", "default": "a default", "given": "the given"}
"""where a target Δ comes from, as a power cell says it"""


def line(row: dict) -> str:
    """A claim's power in a table cell, naming its test and its Δ, so that it reads beside the verdict's
    count (which is at the observed Δ, the fewer of the difference test's and the TOST's): '4.10; 588 seeds
    to detect the paper's +0.8 (t-test, 80% power)'. Never a count the data cannot hold: examples beyond the
    benchmark's test problems read '> the benchmark's N'; one trained seed, the seeds a method claim needs."""
    if row.get("mde") is None:
        return "– (no spread: no power to compute)"
    goal = f"{TARGETS.get(row['target_from'], row['target_from'])} {row['target_delta']:+.1f}"
    test = "t-test, 80% power" if row["needed_unit"] == "seeds" else "examples paired, 80% power"
    need = row["n_needed"]
    if need is None:
        return f"{row['mde']:.2f} (examples); 1 seed: a method claim needs ≥ {MIN_SEEDS} seeds, however many examples"
    count = f"> {MAX_N:,}" if need > MAX_N else f"{need:,}"
    size = paper.benchmark_size(row.get("dataset") or "") if row["needed_unit"] == "examples" else None
    if size is not None and need > size:
        count = f"> the benchmark's {size:,}"
    unit = "ex" if row["needed_unit"] == "examples" else "seeds"
    return f"{row['mde']:.2f}; {count} {unit} to detect {goal} ({test})"
