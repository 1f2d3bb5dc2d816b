"""Per-arm summaries that are not pairwise claims: infilling accuracy and the training-size curve."""

from __future__ import annotations

import numpy as np
import polars as pl

from analysis.checks import guardrails
from analysis.checks.guardrails import GuardrailError
from analysis.checks.selection import FOLD, SEED, cell_label, select
from analysis.report.report import claim_mark
from analysis.stats.stats import percent_ci, proportion_ci, ratio_ci
from analysis.tables import read
from analysis.tables.claim import claims_of
from psedual.data.expr import UNUSED
from psedual.reexamine.config import EXPRESSION_ENCODERS
from psedual.results.best import SELECT_BY


def _per_example_infill(preds: pl.DataFrame, used_only: bool) -> pl.DataFrame:
    """Per test example with gold infilling: its scored slots (all, or those the gold expression
    uses), the slots filled right, and whether all were. Examples with no scored slot are left
    out, as `psedual.metrics` leaves them out of the perfect-match ratio."""
    rows = preds.filter(pl.col("infill_gold").is_not_null())
    slots, correct = [], []
    for p, g in zip(rows["infill_predicted"].to_list(), rows["infill_gold"].to_list()):
        p, g = np.asarray(p), np.asarray(g)
        scored = g != UNUSED if used_only else np.ones(len(g), dtype=bool)
        slots.append(int(scored.sum()))
        correct.append(int(np.sum((p == g) & scored)))
    return rows.select(*read.KEY, "id").with_columns(
        slots=pl.Series(slots, dtype=pl.Int64), correct=pl.Series(correct, dtype=pl.Int64)
    ).filter(pl.col("slots") > 0).with_columns(perfect=pl.col("correct") == pl.col("slots"))


def infill(runs: pl.DataFrame, epochs: pl.LazyFrame, predictions: pl.LazyFrame, by: list[str], n_resamples: int,
           seed: int, used_only: bool = False, select_by: str = SELECT_BY,
           notes: list[str] | None = None) -> pl.DataFrame:
    """Infilling accuracy and perfect-match ratio per cell of `by`, folds pooled, over every masked
    slot (the paper's Table 4: "absolute accuracy over all the masked numbers") or (`used_only`)
    over the slots the gold expression uses (ours, not the paper's metric).
    One seed: bootstrap over examples (slots) and Wilson (perfect match); several: mean ± sd over
    seeds with a t interval. Runs are chosen and checked by `selection.select`, as every claim's are;
    each row's `flags` are its runs' selection flags."""
    notes = notes if notes is not None else []
    runs = guardrails.blank_strings(runs)
    # only a run with a reexamining module infills: a base (or LLM) row holding an infilling score
    # is no infilling result
    module = pl.col("variant").is_in(list(EXPRESSION_ENCODERS))
    posing = runs.filter(~module & pl.col("test_infill_acc").is_not_null())
    if posing.height:
        r = posing.row(0, named=True)
        raise GuardrailError(f"{r['experiment']}/{r['trial']}: variant {r['variant']} has no reexamining module, but "
                             f"its row holds test_infill_acc {r['test_infill_acc']} ({posing.height} such run(s)): not "
                             f"an infilling result; fix the rows or leave them out with --where+")
    without = runs.filter(~module).height
    if without:
        notes.append(f"left out {without} run(s) without a reexamining module (variant "
                     f"{', '.join(sorted(set(runs.filter(~module)['variant'].drop_nulls().to_list())))}): they infill "
                     f"nothing")
    runs = runs.filter(module & pl.col("test_infill_acc").is_not_null())
    if runs.is_empty():
        raise ValueError("no PseDual runs with infilling results (test_infill_acc) in the selection")
    bad = runs.filter(pl.col("test_infill_acc").is_nan() | pl.col("test_infill_acc").is_infinite())
    if bad.height:
        raise GuardrailError(f"{bad['experiment'][0]}/{bad['trial'][0]}: test_infill_acc is "
                             f"{bad['test_infill_acc'][0]}: not a result; leave it out with --where+")
    # one run per (cell, seed, fold), as the claims keep: a sweep's trials are not extra data
    slot = list(dict.fromkeys([*by, SEED, FOLD]))
    chosen = select(runs, epochs, predictions, slot, select_by, ["value_correct"], notes,
                    extra=("infill_predicted", "infill_gold"))
    runs = chosen.runs
    for part in runs.partition_by(by, maintain_order=True):
        slots = [tuple(r[k] for k in slot) for r in part.iter_rows(named=True)]
        guardrails.check_pooled(cell_label(part.row(0, named=True), by), part, chosen.compared,
                                set().union(*(chosen.tuned[k][1] for k in slots)), set())
    preds = pl.concat(list(chosen.preds.values()))
    ex = _per_example_infill(preds, used_only)
    ex = ex.join(runs.select(*read.KEY, *slot), on=list(read.KEY))
    out = []
    for part in ex.partition_by(by, maintain_order=True):
        first = part.row(0, named=True)
        per_seed = part.group_by(SEED).agg(acc=100 * pl.col("correct").sum() / pl.col("slots").sum(),
                                           pmr=100 * pl.col("perfect").mean(), n=pl.len()).sort(SEED)
        scored = part.group_by(SEED).agg(pl.col("id").sort()).sort(SEED)
        if scored["id"].n_unique() > 1:  # a mean over seeds must be over the same examples
            raise GuardrailError(f"{cell_label(first, by)}: seeds {scored[SEED].to_list()} scored other test examples "
                                 f"({per_seed['n'].to_list()} of them): their runs did not infill the same problems")
        keys = part.select(*read.KEY).unique(maintain_order=True).rows()
        flags = list(dict.fromkeys(f for k in keys for f in chosen.flags.get(k, [])))
        row = {**{k: first[k] for k in by}, "n_seeds": per_seed.height, "n_examples": int(per_seed["n"][0]),
               "folds": sorted(set(part[FOLD].to_list()), key=str), "flags": flags}
        if per_seed.height == 1:
            acc_ci = ratio_ci(part["correct"].to_numpy(), part["slots"].to_numpy(), n_resamples, seed)
            pmr_ci = proportion_ci(int(part["perfect"].sum()), part.height)
            row |= {"infill_acc": per_seed["acc"][0], "infill_sd": None, "pmr": per_seed["pmr"][0], "pmr_sd": None}
        else:
            acc_ci, pmr_ci = percent_ci(per_seed["acc"]), percent_ci(per_seed["pmr"])
            row |= {"infill_acc": per_seed["acc"].mean(), "infill_sd": per_seed["acc"].std(),
                    "pmr": per_seed["pmr"].mean(), "pmr_sd": per_seed["pmr"].std()}
        out.append(row | {"infill_low": acc_ci[0], "infill_high": acc_ci[1], "pmr_low": pmr_ci[0],
                          "pmr_high": pmr_ci[1]})
    return pl.DataFrame(out)


def training_sizes(runs: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    """The runs with `n_train`, the training size a point is placed at: where a table written before
    the data identity holds it null, the run's `data.train_size` (said in a note); a run with neither
    is refused by name (a full training split whose size was never recorded)."""
    if "n_train" not in runs.columns:  # tables older still: not even the column
        runs = runs.with_columns(n_train=pl.lit(None, pl.Int64))
    missing = runs.filter(pl.col("n_train").is_null()).sort("experiment", "trial")
    if missing.is_empty():
        return runs
    unknown = missing.filter(pl.col("data.train_size").is_null())
    if unknown.height:
        first = unknown.row(0, named=True)
        raise GuardrailError(f"{first['experiment']}/{first['trial']}: no n_train and no data.train_size "
                             f"({unknown.height} run(s)): its training size is not recorded, so the curve cannot "
                             f"place it; re-add its run folder with psedual results add, or leave it out with --where+")
    names = [f"{e}/{t}" for e, t in missing.select("experiment", "trial").rows()]
    notes.append(f"training size not recorded (n_train null) in {len(names)} run(s) ({', '.join(names[:2])}"
                 f"{', ...' if len(names) > 2 else ''}): each point is placed at its data.train_size")
    return runs.with_columns(n_train=pl.coalesce(pl.col("n_train").cast(pl.Int64),
                                                 pl.col("data.train_size").cast(pl.Int64)))


def size_points(runs: pl.DataFrame, predictions: pl.LazyFrame, arm: str, arms: list[str], by: list[str],
                claims: pl.DataFrame) -> pl.DataFrame:
    """Test value accuracy per arm and training size (folds pooled, mean over seeds) with a 95% CI,
    and the significance mark of that size's claim."""
    runs = runs.filter(pl.col(arm).is_in(arms) & pl.col("test_value_acc").is_not_null())
    preds = read.for_trials(predictions, runs).select(*read.KEY, "value_correct").collect()
    per_run = preds.group_by(read.KEY).agg(k=pl.col("value_correct").sum(), n=pl.len())
    per_run = per_run.join(runs.select(*read.KEY, arm, SEED, "n_train", *by), on=list(read.KEY))
    claims = claims.filter(pl.col("metric") == "value")  # the figure's metric
    marks = {(c.cell, c.treatment_arm): c for c in claims_of(claims)}
    out = []
    for part in per_run.partition_by([*by, arm], maintain_order=True):
        first = part.row(0, named=True)
        # pooled folds train on different problems: a seed's training size is their mean
        per_seed = part.group_by(SEED).agg(pl.col("k").sum(), pl.col("n").sum(), pl.col("n_train").mean()).sort(SEED)
        accs = (100 * per_seed["k"] / per_seed["n"]).to_list()
        if len(accs) == 1:
            low, high = proportion_ci(int(per_seed["k"][0]), int(per_seed["n"][0]))
        else:
            low, high = percent_ci(accs)
        cell = cell_label(first, by)
        claim = marks.get((cell, first[arm]))  # None for the base arm
        p_adj = None if claim is None else claim.p_adjusted
        # the figure plots what its claim rows say, or nothing
        mine = claims.filter(pl.col("cell") == cell)
        treated = mine.filter(pl.col("treatment_arm") == first[arm])
        said = treated["treatment"] if treated.height else mine.filter(pl.col("base_arm") == first[arm])["base"]
        if any(abs(float(np.mean(accs)) - v) > 1e-9 for v in said.to_list()):
            raise GuardrailError(f"{cell}: {first[arm]}'s points ({float(np.mean(accs)):.4f}) are not its claim "
                                 f"rows' ({said.to_list()}): the figure and the claims read different runs")
        # a star only beside a verdict that says the arms differ: none where too few examples refuse the test
        star = "" if claim is None else claim_mark(claim)
        if star:  # which way: a significantly worse arm must not read as a win
            star += "↑" if claim.delta > 0 else "↓"
        out.append({"arm": first[arm], "n_train": float(per_seed["n_train"].mean()),
                    "acc": float(np.mean(accs)), "low": low, "high": high, "n_seeds": len(accs), "seed_accs": accs,
                    "p_adjusted": p_adj, "star": star, "reference": claim is None, **{k: first[k] for k in by}})
    return pl.DataFrame(out)
