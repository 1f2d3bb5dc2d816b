"""One claim row per comparison of a treatment arm against a base arm, with the guardrails.

A comparison pairs runs that differ only in the arm column (e.g. `variant`: base vs gcn) within
a cell (e.g. one dataset and solver). Within a cell:
- each (arm, seed, fold) slot keeps one run; a sweep's several trials in a slot are reduced to
  the best by a validation metric (picking by a test metric is flagged as test-selected);
- a dataset's folds (MAWPS's five) are pooled: each fold's test predictions are out-of-fold,
  so their union is one paired table over the whole dataset; fold scores stay descriptive;
- with one seed the unit is the example (exact McNemar, paired bootstrap CI, permutation test);
  with several the unit is the seed (paired t-test, Wilcoxon, Student-t CI of the mean difference).
Runs whose test example sets, folds, data or configs differ, or whose predictions are incomplete, are
refused (GuardrailError names them): the guardrails of `registry.GUARDRAILS`, run by name and scope. `selection.select` is the one path from the runs
table to checked runs, for every table and figure (the infilling table too).
Each claim also carries a TOST at ±`margin` points and the posterior probability that |Δ| < margin
(`equivalence`). Each claim is one `Claim` record (`make`), judged by `verdicts.verdict` (the rule in
words: verdict_rule.md).
P-values are adjusted over the whole family (every claim built in one call), the difference p's
and the TOST p's apart.
"""

from __future__ import annotations

import glob
import hashlib
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from analysis.checks import arms as arm_flags
from analysis.checks import dropped, guardrails, pairs, registry
from analysis.checks.guardrails import SHOWN_IDS, GuardrailError
from analysis.checks.selection import FOLD, SEED, cell_label, select
from analysis.claims.verdicts import verdict
from analysis.stats.equivalence import DEFAULT_MARGIN, equivalence
from analysis.stats.multiple import METHODS, adjust
from analysis.stats.stats import across_seeds, no_spread, paired
from analysis.tables import read
from analysis.tables.claim import CLAIMS_SCHEMA, Claim, frame
from psedual.atomic import NAME_MAX, truncated, write_parquet
from psedual.reexamine.config import EXPRESSION_ENCODERS
from psedual.results.best import SELECT_BY

# per-example columns of the predictions table: value accuracy, strict expression accuracy (slot
# names), and expression accuracy by values (the published definition)
METRICS = {"value": "value_correct", "expression": "expression_correct",
           "expression_values": "expression_correct_values"}

@dataclass(frozen=True)
class Comparison:
    """What to compare, and how."""

    family: str
    """name of the family of comparisons the p-values are adjusted over (printed and stored)"""
    arm: str = "variant"
    """the column whose values are the arms (`variant`, `psedual.fusion`, ...)"""
    base: str = "base"
    """the reference arm's value"""
    treatments: tuple[str, ...] = tuple(EXPRESSION_ENCODERS)
    """the arms compared against `base`"""
    by: tuple[str, ...] = ("data.dataset", "solver")
    """one cell per distinct combination of these columns (and always of `data.dataset`)"""
    metrics: tuple[str, ...] = ("value",)
    """per-example metrics compared: value, expression (strict) and/or expression_values accuracy"""
    select_by: str = SELECT_BY
    """when a slot holds several trials, keep the one with the highest value of this column"""
    correction: str = "holm"
    """multiple-comparison correction over the family: holm, bh or none"""
    alpha: float = 0.05
    """significance level of the verdict, applied to the adjusted p"""
    n_resamples: int = 10_000
    """bootstrap and permutation resamples"""
    rng_seed: int = 0
    """seed of the resampling RNGs"""
    allow_diff: tuple[str, ...] = ()
    """config columns in which the arms may differ (each such claim is flagged); any other
    difference is refused"""
    margin: float = DEFAULT_MARGIN
    """equivalence margin in points: the TOST and the posterior ask whether |Δ| < margin"""

    def __post_init__(self) -> None:
        unknown = [m for m in self.metrics if m not in METRICS]
        if unknown or not self.metrics:
            raise ValueError(f"metrics {list(self.metrics)}: valid: {', '.join(METRICS)}")
        if self.correction not in METHODS:
            raise ValueError(f"unknown correction {self.correction!r}; valid: {', '.join(METHODS)}")
        if not self.treatments or self.base in self.treatments:
            raise ValueError(f"treatments {list(self.treatments)} must be non-empty and exclude base {self.base!r}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), got {self.alpha}")
        if self.n_resamples < 100:
            raise ValueError(f"n_resamples must be >= 100, got {self.n_resamples}")
        if not 0 < self.margin < 100:
            raise ValueError(f"margin must be a positive number of points below 100, got {self.margin}")


@dataclass
class Claims:
    """The claim rows and what the reader must be told about them."""

    rows: pl.DataFrame
    notes: list[str]
    """skipped runs, dropped seeds, warnings: each counted and said"""


def _arm_layout(rows: pl.DataFrame) -> dict[int, dict[int, tuple[str, str]]]:
    out: dict[int, dict[int, tuple[str, str]]] = {}
    for r in rows.iter_rows(named=True):
        out.setdefault(r[SEED], {})[r[FOLD]] = (r["experiment"], r["trial"])
    return out


def _check_folds(cell: str, base_arm: str, treat: str, base: dict, other: dict) -> list[int]:
    """The folds both arms cover, the same for every seed; else a GuardrailError."""
    folds = None
    for seed in sorted(base):
        fb, ft = sorted(base[seed]), sorted(other[seed])
        if fb != ft:
            raise GuardrailError(f"{cell}: seed {seed}: {base_arm} has folds {fb} but {treat} has folds {ft}; "
                                 f"compare the same folds")
        if folds is not None and fb != folds:
            raise GuardrailError(f"{cell}: seeds cover different folds ({folds} vs {fb} for seed {seed}); "
                                 f"pooled accuracies would be over different examples")
        folds = fb
    return folds or []


def _pair_fold(cell: str, fold: int, kb: tuple[str, str], kt: tuple[str, str], tb: pl.DataFrame,
               tt: pl.DataFrame) -> pl.DataFrame:
    ib, it = set(tb["id"].to_list()), set(tt["id"].to_list())
    if ib != it:
        only_b, only_t = sorted(ib - it), sorted(it - ib)
        raise GuardrailError(
            f"{cell}: fold {fold}: {kb[0]}/{kb[1]} and {kt[0]}/{kt[1]} answered different test examples: "
            f"{len(only_b)} only in the first {only_b[:SHOWN_IDS]}, {len(only_t)} only in the second "
            f"{only_t[:SHOWN_IDS]}")
    joined = tb.join(tt, on="id", suffix="_t")
    if "gold" in joined.columns and "gold_t" in joined.columns:
        other = joined.filter(pl.col("gold").ne_missing(pl.col("gold_t")))["id"].sort().to_list()
        if other:
            raise GuardrailError(f"{cell}: fold {fold}: {kb[0]}/{kb[1]} and {kt[0]}/{kt[1]} hold other gold "
                                 f"expressions for {len(other)} test example(s) {other[:SHOWN_IDS]}: they were "
                                 f"tested on different data versions")
    return joined


def _pooled(cell: str, folds: list[int], kb: dict, kt: dict, preds: dict) -> pl.DataFrame:
    """One seed's paired table over all its folds, rows in id order."""
    parts = [_pair_fold(cell, f, kb[f], kt[f], preds[kb[f]], preds[kt[f]]).with_columns(
        pl.lit(f).alias("fold")) for f in folds]
    pooled = pl.concat(parts)
    dup = pooled.filter(pl.col("id").is_duplicated())["id"].unique().sort().to_list()
    if dup:
        raise GuardrailError(f"{cell}: test example(s) {dup[:SHOWN_IDS]} appear in more than one fold; "
                             f"folds are not out-of-fold")
    return pooled.sort("id")


def _statistics(cmp: Comparison, metric: str, seeds: list[int], folds: list[int],
                tables: dict[int, pl.DataFrame]) -> dict:
    """What the tests found for one metric over the paired tables: the `Claim` fields of its statistics."""
    col = METRICS[metric]
    # eq_missing: a dataset without folds has the one fold None
    fold_acc = {arm: [100.0 * float(np.mean([tables[s].filter(pl.col("fold").eq_missing(f))[c].mean() for s in seeds]))
                      for f in folds] for arm, c in (("base", col), ("treat", f"{col}_t"))}
    row = {"metric": metric, "n_examples": tables[seeds[0]].height, "n_seeds": len(seeds), "seeds": tuple(seeds),
           "folds": tuple(folds), "base_fold_acc": tuple(fold_acc["base"]),
           "treatment_fold_acc": tuple(fold_acc["treat"])}
    if len(seeds) == 1:
        t = tables[seeds[0]]
        r = paired(t[col].to_numpy(), t[f"{col}_t"].to_numpy(), cmp.n_resamples, cmp.rng_seed)
        row |= {"base": r.acc_a, "treatment": r.acc_b, "delta": r.delta, "ci_low": r.ci_low, "ci_high": r.ci_high,
                "test": "mcnemar_exact", "p": r.p_mcnemar, "test_secondary": "permutation",
                "p_secondary": r.p_permutation, "only_base": r.only_a, "only_treatment": r.only_b}
        # one seed: the example is the unit, each scored 0 or 100 points
        eq = equivalence(100.0 * t[f"{col}_t"].cast(pl.Float64).to_numpy(), 100.0 * t[col].cast(pl.Float64).to_numpy(),
                         cmp.margin)
    else:
        a = {s: 100.0 * tables[s][col].mean() for s in seeds}
        b = {s: 100.0 * tables[s][f"{col}_t"].mean() for s in seeds}
        r = across_seeds(a, b, cmp.n_resamples, cmp.rng_seed)
        d = [b[s] - a[s] for s in seeds]
        # float noise is no spread: an sd of 1e-15 points would give an MDE of 1e-15
        row["delta_sd"] = 0.0 if no_spread(d, [*a.values(), *b.values()]) else float(np.std(d, ddof=1))
        row |= {"base": r.mean_a, "treatment": r.mean_b, "base_sd": r.sd_a, "treatment_sd": r.sd_b, "delta": r.delta,
                "ci_low": r.ci_low, "ci_high": r.ci_high, "test": "paired_t_seeds", "p": r.p_ttest,
                "test_secondary": "wilcoxon", "p_secondary": r.p_wilcoxon, "untestable": r.untestable}
        eq = equivalence([b[s] for s in seeds], [a[s] for s in seeds], cmp.margin)
    return row | {"margin": eq.margin, "p_tost": eq.p_tost, "p_equivalent": eq.p_within}


def make(cmp: Comparison, pairing: dict, checks: list[str], statistics: dict, p_adjusted: float | None,
         p_tost_adjusted: float | None, members: int) -> Claim:
    """A claim from its comparison (`cmp`, and `pairing`: its cell, arms, runs and budgets), its checks
    (the flags the guardrails raised) and its statistics (`_statistics`), once its family is adjusted
    (`p_adjusted`, `p_tost_adjusted` over `members` claims): judged by `verdicts.verdict`."""
    unjudged = Claim(family=cmp.family, correction=cmp.correction, n_family=members, alpha=cmp.alpha,
                     base_arm=cmp.base, n_resamples=cmp.n_resamples, rng_seed=cmp.rng_seed, flags=tuple(checks),
                     p_adjusted=p_adjusted, p_tost_adjusted=p_tost_adjusted, **pairing, **statistics)
    return replace(unjudged, verdict=verdict(unjudged))


def _check_keys(arm: str, by: list[str]) -> None:
    """The arm and the cells are config columns other than what a claim pairs by, and apart."""
    for option, col in (("--arm", arm), *(("--by", k) for k in by)):
        if col in (SEED, FOLD) and not (option == "--by" and col == FOLD):
            raise GuardrailError(f"{option} {col}: a claim pairs its arms over the seeds and folds (and pools the "
                                 f"folds); compare over another column")
    if arm in by:
        raise GuardrailError(f"--by {arm}: it is the arm (--arm {arm}); a cell holds every arm")


def _typed(runs: pl.DataFrame, arm: str, value: str, option: str):
    """An arm's value as the arm column holds it (`--arm lr --base 0.001`: a Float64)."""
    try:
        return read.typed(value, runs.schema[arm], f"{option} {value!r}")
    except ValueError as err:
        raise GuardrailError(f"{err} of {arm}") from err


def cell_columns(cmp: Comparison, columns: list[str]) -> list[str]:
    """The columns a claim's cells are made of: `cmp.by`, always with `data.dataset` first (a cell
    never spans datasets: their examples, folds and data versions differ)."""
    return list(dict.fromkeys(["data.dataset", *(read.column(k, columns) for k in cmp.by)]))


def build(runs: pl.DataFrame, epochs: pl.LazyFrame, predictions: pl.LazyFrame, cmp: Comparison) -> Claims:
    """Every claim of `cmp` over the given runs (rows of the runs table, any experiments)."""
    notes: list[str] = []
    runs = guardrails.blank_strings(runs)
    arm = read.column(cmp.arm, runs.columns)
    by = cell_columns(cmp, runs.columns)
    _check_keys(arm, by)
    select_by = read.column(cmp.select_by, runs.columns)
    typed = {name: _typed(runs, arm, name, option) for name, option in
             ((cmp.base, "--base"), *((t, "--treatment") for t in cmp.treatments))}
    runs = runs.filter(pl.col(arm).is_in(list(typed.values())))
    if runs.is_empty():
        raise GuardrailError(f"no runs with {arm} in {[cmp.base, *cmp.treatments]}")
    slot = list(dict.fromkeys([*by, arm, SEED, FOLD]))  # `--by data.fold`: one cell per fold
    columns = list(dict.fromkeys(["value_correct", *(METRICS[m] for m in cmp.metrics)]))
    chosen = select(runs, epochs, predictions, slot, select_by, columns, notes)
    runs, preds, run_flags, tuned, compared = (chosen.runs, chosen.preds, chosen.flags, chosen.tuned,
                                               chosen.compared)
    by_key = {(r["experiment"], r["trial"]): r for r in runs.iter_rows(named=True)}

    found: list[tuple[dict, list[str], dict]] = []  # each claim's pairing, checks and statistics
    for cell_runs in runs.partition_by(by, maintain_order=True):
        first = cell_runs.row(0, named=True)
        cell = cell_label(first, by)
        base = _arm_layout(cell_runs.filter(pl.col(arm) == typed[cmp.base]))
        for treat in cmp.treatments:
            other = _arm_layout(cell_runs.filter(pl.col(arm) == typed[treat]))
            if not base or not other:
                notes.append(f"{cell}: no {cmp.base if not base else treat} runs; {treat} vs {cmp.base} skipped")
                continue
            seeds = sorted(set(base) & set(other))
            if not seeds:
                notes.append(f"{cell}: {treat} and {cmp.base} share no seed; skipped")
                continue
            # the seeds one arm ran and the other did not, each arm's scored beside its kept ones
            flags = dropped.check(cell, {a: cell_runs.filter(pl.col(arm) == typed[a]) for a in (cmp.base, treat)},
                                  seeds, set(cmp.allow_diff))
            folds = _check_folds(cell, cmp.base, treat, {s: base[s] for s in seeds}, {s: other[s] for s in seeds})
            arms = {a: cell_runs.filter((pl.col(arm) == typed[a]) & pl.col(SEED).is_in(seeds))
                    for a in (cmp.base, treat)}
            slots = {a: [tuple(r[k] for k in slot) for r in arms[a].iter_rows(named=True)] for a in arms}
            searched = set().union(*(tuned[k][1] for a in arms for k in slots[a]))
            # the pairs: each seed and fold's two runs, whose tables are joined below
            paired_runs = [pairs.Pair(s, f, by_key[base[s][f]], by_key[other[s][f]]) for s in seeds for f in folds]
            dataset = str(first["data.dataset"])  # one per cell: `by` holds data.dataset
            budgets = {a: guardrails.budget(tuned, slots[a]) for a in arms}
            # a zero-shot LLM run trains nothing, so its one run is all there is to compare, unless it
            # decodes by sampling: then it is one sample, and one per arm compares two samples
            trainable = "llm.model" not in arms[treat].columns or bool(
                pl.concat([arms[cmp.base], arms[treat]])["llm.model"].is_null().any()) or any(
                arm_flags.sampling(arms[a]) for a in arms)
            flags += registry.run(registry.Pairing(
                cell=cell, arm=arm, base_arm=cmp.base, treatment_arm=treat, runs=arms, pairs=paired_runs,
                compared=compared, searched=searched, allowed=set(cmp.allow_diff), run_flags=run_flags, seeds=seeds,
                folds=folds, dataset=dataset, budgets=budgets, trainable=trainable), registry.CLAIM)
            tables = {s: _pooled(cell, folds, base[s], other[s], preds) for s in seeds}
            ids = tables[seeds[0]]["id"]
            for s in seeds[1:]:
                if not tables[s]["id"].equals(ids):
                    raise GuardrailError(f"{cell}: seed {s} was tested on other examples than seed {seeds[0]}")
            trials = {a: ["/".join(layout[s][f]) for s in seeds for f in folds]
                      for a, layout in (("base", base), ("treat", other))}
            controls = sorted({str(c) for a in arms if arm_flags.CONTROL in arms[a].columns
                               for c in arms[a][arm_flags.CONTROL].drop_nulls().to_list() if c != "none"})
            pairing = {"cell": cell, "group": " / ".join(str(first[k]) for k in by if k != "data.dataset"),
                       "dataset": dataset, "solver": ",".join(sorted(set(cell_runs["solver"].to_list()))),
                       "arm": arm, "treatment_arm": treat, "controls": ", ".join(controls) or None,
                       "control_arms": tuple(str(a) for a in arms if arm_flags.controls(arms[a])),
                       "trainable": trainable, "base_trials": tuple(trials["base"]),
                       "treatment_trials": tuple(trials["treat"]), "base_budget": budgets[cmp.base],
                       "treatment_budget": budgets[treat]}
            found += [(pairing, flags, _statistics(cmp, metric, seeds, folds, tables)) for metric in cmp.metrics]
    if not found:
        raise GuardrailError(f"nothing to compare: {'; '.join(notes) or 'no runs'}")
    adjusted = adjust([s["p"] for _, _, s in found], cmp.correction)
    tost = adjust([s["p_tost"] for _, _, s in found], cmp.correction)  # the TOST p's: a family of their own
    members = len(found)  # every claim made, a testable one or not (`multiple.adjust`)
    made = [make(cmp, pairing, flags, stats, p_adj, p_tost, members)
            for (pairing, flags, stats), p_adj, p_tost in zip(found, adjusted, tost)]
    return Claims(frame(made), notes)


def file_name(name: str) -> str:
    """`<name>.parquet`; where that passes NAME_MAX bytes (a long experiment name, several joined),
    the name cut and 16 hex digits of its SHA-256, so that two long names never share a file (the
    rows' `family` holds the whole name)."""
    full = f"{name}.parquet"
    if len(full.encode("utf-8")) <= NAME_MAX:
        return full
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]
    return f"{truncated(name, NAME_MAX - len('.parquet') - len(digest) - 1)}-{digest}.parquet"


def write(claims: pl.DataFrame, root: str, name: str, folder: str = "claims") -> str:
    """Write the claim rows to <root>/<folder>/<name>.parquet (`file_name`) atomically; returns the path.
    One folder, one table: a Polars glob over it (`pl.read_parquet(".../claims/*.parquet")`) needs
    every file's columns the same, so rows of another shape take another folder."""
    path = f"{root.rstrip('/')}/{folder}/{file_name(name)}"
    write_parquet(claims.to_arrow(), path)
    return path


def load(root: str) -> pl.DataFrame:
    """Every claims table under <root>/claims as one frame: tables written before a column existed
    (the equivalence columns of issue 48) read with it null."""
    paths = sorted(glob.glob(f"{root.rstrip('/')}/claims/*.parquet"))
    if not paths:
        return pl.DataFrame(schema=CLAIMS_SCHEMA)
    frames = [pl.read_parquet(p) for p in paths]
    missing = pl.DataFrame(schema=CLAIMS_SCHEMA)
    return pl.concat([missing, *frames], how="diagonal_relaxed")
