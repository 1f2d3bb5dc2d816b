"""A claim: one typed, frozen record per comparison of a treatment arm against a base arm, in one
cell and one metric; the claims table (`CLAIMS_SCHEMA`) stores one row per claim, every field the
verdict reads among them, so that a stored claim can be judged again from its own row.

`analysis.claims.claims.build` makes them (its comparison, its checks, its statistics); the verdict
(`analysis.claims.verdicts`), power (`analysis.stats.power`), the report and the forest plot read
their fields. It sits in the tables room, below all of them, as the record of a table does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, asdict, dataclass, fields

import polars as pl

TESTS = ("mcnemar_exact", "paired_t_seeds")
"""The claim's test: exact McNemar over the examples (one seed), a paired t-test over the seeds (several)."""

CLAIMS_SCHEMA = {
    "family": pl.String, "correction": pl.String, "n_family": pl.Int64, "cell": pl.String, "group": pl.String,
    "dataset": pl.String, "solver": pl.String, "metric": pl.String, "arm": pl.String,
    "base_arm": pl.String, "treatment_arm": pl.String, "n_examples": pl.Int64, "n_seeds": pl.Int64,
    "seeds": pl.List(pl.Int64), "folds": pl.List(pl.Int64), "base": pl.Float64, "treatment": pl.Float64,
    "base_sd": pl.Float64, "treatment_sd": pl.Float64, "delta": pl.Float64, "ci_low": pl.Float64,
    "ci_high": pl.Float64, "test": pl.String, "p": pl.Float64, "p_adjusted": pl.Float64,
    "test_secondary": pl.String, "p_secondary": pl.Float64, "only_base": pl.Int64, "only_treatment": pl.Int64,
    "n_resamples": pl.Int64, "rng_seed": pl.Int64, "base_fold_acc": pl.List(pl.Float64),
    "treatment_fold_acc": pl.List(pl.Float64), "base_trials": pl.List(pl.String),
    "treatment_trials": pl.List(pl.String), "base_budget": pl.Int64, "treatment_budget": pl.Int64,
    "verdict": pl.String, "flags": pl.List(pl.String),
    "delta_sd": pl.Float64,
    # equivalence (issue 48; absent from older tables, which `claims.load` still reads)
    "margin": pl.Float64, "p_tost": pl.Float64, "p_tost_adjusted": pl.Float64, "p_equivalent": pl.Float64,
    "controls": pl.String,
    # what else the verdict reads (issue 56; absent from older tables: read as None, True and 0.05)
    "untestable": pl.String, "trainable": pl.Boolean, "alpha": pl.Float64,
    # which arms are controls (issue 60; absent from older tables: read as none known)
    "control_arms": pl.List(pl.String),
}
"""The claims table's columns, in the order they are written: a column may be added at the end, never
renamed or dropped (tables already written are read with it null). One per `Claim` field (a test checks)."""


@dataclass(frozen=True, kw_only=True)
class Claim:
    """One claim: what was compared, how it was checked, what the tests found, and the verdict."""

    # what was compared
    family: str
    """the family of comparisons its p-values are adjusted over (a command's or a sweep entry's name)"""
    correction: str
    """the multiple-comparison correction over the family: holm, bh or none"""
    n_family: int
    """the family's claims, a testable one or not: the count the correction divides α by"""
    alpha: float = 0.05
    """the significance level the verdict applies to the adjusted p's"""
    cell: str
    """the cell, as said in messages (e.g. `mawps, gts`)"""
    group: str
    """the cell less its dataset (the report's row group), `/`-joined"""
    dataset: str
    """the cell's dataset (one per cell)"""
    solver: str
    """the cell's solver(s), `,`-joined"""
    metric: str
    """the per-example metric compared: value, expression or expression_values"""
    arm: str
    """the column whose values are the arms (`variant`, `psedual.fusion`, ...)"""
    base_arm: str
    """the reference arm's value"""
    treatment_arm: str
    """the compared arm's value"""
    controls: str | None = None
    """the controls either arm's runs hold (`, `-joined; None for none): a claim with a control takes no paper Δ"""
    control_arms: tuple[str, ...] = ()
    """the arms (their values) whose runs are controls: their names say so, and no paper figure stands beside them"""
    trainable: bool = True
    """whether one run per arm is one draw, not the method (False only for zero-shot LLM runs that decode
    greedily, temperature 0 and one sample: one run of them is the method; a sampled run is a sample)"""
    # what it was measured on
    n_examples: int
    """the paired test examples (every fold's, pooled)"""
    n_seeds: int
    """the paired seeds"""
    seeds: tuple[int, ...]
    """the paired seeds, sorted"""
    folds: tuple[int | None, ...]
    """the folds pooled (a dataset without folds has the one fold None)"""
    base_trials: tuple[str, ...]
    """the base arm's runs (`experiment/trial`), seed by seed and fold by fold"""
    treatment_trials: tuple[str, ...]
    """the treatment arm's runs, paired with `base_trials`"""
    base_budget: int
    """trials per slot of the base arm (a tuned sweep's budget)"""
    treatment_budget: int
    """trials per slot of the treatment arm"""
    # what its checks said
    flags: tuple[str, ...] = ()
    """what the guardrails flagged (the claim stands, flagged)"""
    untestable: str | None = None
    """why the seeds admit no t-test (the same nonzero Δ on every seed), else None"""
    # what its tests found (points of accuracy)
    base: float
    """the base arm's accuracy (the mean over seeds)"""
    treatment: float
    """the treatment arm's accuracy"""
    base_sd: float | None = None
    """the base arm's sd over seeds (None for one seed)"""
    treatment_sd: float | None = None
    """the treatment arm's sd over seeds"""
    delta: float
    """treatment − base"""
    delta_sd: float | None = None
    """the sd (ddof 1) of the per-seed Δ, several seeds: the spread power reads"""
    ci_low: float | None = None
    """the 95% CI of Δ, low end"""
    ci_high: float | None = None
    """the 95% CI of Δ, high end"""
    test: str
    """the difference test (`TESTS`)"""
    p: float | None = None
    """its p-value, unadjusted"""
    test_secondary: str | None = None
    """the second test (permutation, one seed; Wilcoxon, several), reported beside"""
    p_secondary: float | None = None
    """its p-value"""
    only_base: int | None = None
    """one seed: examples only the base answered right"""
    only_treatment: int | None = None
    """one seed: examples only the treatment answered right"""
    base_fold_acc: tuple[float, ...] = ()
    """the base arm's accuracy per fold (over seeds), descriptive"""
    treatment_fold_acc: tuple[float, ...] = ()
    """the treatment arm's accuracy per fold"""
    n_resamples: int
    """bootstrap and permutation resamples"""
    rng_seed: int
    """the resampling RNGs' seed"""
    margin: float | None = None
    """the equivalence margin in points (None in tables older than issue 48)"""
    p_tost: float | None = None
    """the TOST's p at ±margin, unadjusted"""
    p_equivalent: float | None = None
    """the posterior probability that |Δ| < margin"""
    # what the family made of it
    p_adjusted: float | None = None
    """the difference p adjusted over the family"""
    p_tost_adjusted: float | None = None
    """the TOST p adjusted over the family (apart from the difference p's)"""
    verdict: str | None = None
    """the verdict (`analysis.claims.verdicts`); None until judged"""

    def __post_init__(self) -> None:
        name = f"claim {self.cell}, {self.metric}, {self.treatment_arm} vs {self.base_arm}"
        problems = []
        if self.n_seeds < 1 or self.n_seeds != len(self.seeds):
            problems.append(f"n_seeds {self.n_seeds} with seeds {list(self.seeds)}")
        if self.n_examples < 0 or self.n_family < 0:
            problems.append(f"n_examples {self.n_examples}, n_family {self.n_family}: counts are not negative")
        if self.test not in TESTS:
            problems.append(f"test {self.test!r} (valid: {', '.join(TESTS)})")
        for key in ("p", "p_adjusted", "p_secondary", "p_tost", "p_tost_adjusted", "p_equivalent"):
            value = getattr(self, key)
            if value is not None and not (math.isnan(value) or 0 <= value <= 1):  # NaN: a test with nothing to say
                problems.append(f"{key} {value} is no probability")
        if self.ci_low is not None and self.ci_high is not None and self.ci_low > self.ci_high:
            problems.append(f"95% CI [{self.ci_low}, {self.ci_high}] runs backwards")
        if (self.only_base is None) != (self.only_treatment is None):
            problems.append("only_base and only_treatment are given together or not at all")
        if len(self.base_fold_acc) != len(self.treatment_fold_acc):
            problems.append(f"fold accuracies {len(self.base_fold_acc)} vs {len(self.treatment_fold_acc)}")
        if len(self.base_trials) != len(self.treatment_trials):
            problems.append(f"{len(self.base_trials)} base trials paired with {len(self.treatment_trials)}")
        if self.margin is not None and not self.margin > 0:
            problems.append(f"margin {self.margin} is not a positive number of points")
        if not 0 < self.alpha < 1:
            problems.append(f"alpha {self.alpha} is not in (0, 1)")
        if problems:
            raise ValueError(f"{name}: " + "; ".join(problems))

    @classmethod
    def from_row(cls, row: Mapping) -> Claim:
        """A claim from a claims table's row (extra columns, e.g. power's, aside): lists as tuples; a
        column an older table lacks, or holds null, takes the field's default."""
        given = {f.name: row[f.name] for f in fields(cls) if row.get(f.name) is not None}
        given = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
        missing = [f.name for f in fields(cls) if f.name not in given and f.default is MISSING]
        if missing:
            raise ValueError(f"a claim row lacks {', '.join(missing)} (claim {row.get('cell')}, "
                             f"{row.get('treatment_arm')} vs {row.get('base_arm')})")
        return cls(**given)

    def row(self) -> dict:
        """The claims table's row: every field, tuples as lists."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def frame(claims: Iterable[Claim]) -> pl.DataFrame:
    """The claims table of these claims, its columns in `CLAIMS_SCHEMA`'s order."""
    rows = [c.row() for c in claims]
    return pl.DataFrame([{k: r[k] for k in CLAIMS_SCHEMA} for r in rows], schema=CLAIMS_SCHEMA)


def claims_of(table: pl.DataFrame) -> list[Claim]:
    """The claims of a claims table (or of a frame of its rows with more columns)."""
    return [Claim.from_row(r) for r in table.iter_rows(named=True)]
