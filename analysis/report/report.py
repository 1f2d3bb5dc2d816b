"""Paper-style tables (Markdown or LaTeX) from claim rows, and the training-size figure."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from analysis.checks import arms as arm_flags
from analysis.claims.verdicts import rule, says_differ
from analysis.stats.power import line as power_line
from analysis.tables.claim import Claim, claims_of
from analysis.tables.text import dash, label, mark, p_value, render, score, untested


def claim_mark(claim: Claim) -> str:
    """A claim's significance mark (`mark`), only where its verdict says the arms differ
    (`verdicts.says_differ`): a p below 0.05 over 20 test examples is no finding to star."""
    return mark(claim.p_adjusted) if says_differ(claim.verdict) else ""


def grid(claims: pl.DataFrame, fmt: str, group_name: str) -> str:
    """Rows: each group (the cell less its dataset, e.g. the solver) × arm, the base first;
    columns: dataset × metric. A treatment's cell shows its score, then Δ against the base with
    the significance mark of its adjusted p. Where the treatments of a cell were paired with
    different base runs (seeds missing on one side), the base row shows no figure and each Δ
    names the base it was computed from."""
    columns = claims.select("dataset", "metric").unique(maintain_order=True).rows()
    header = [group_name, claims["arm"][0]] + [f"{d} {m} (%)" for d, m in columns]
    body = []
    for group in claims["group"].unique(maintain_order=True):
        mine = claims.filter(pl.col("group") == group)
        arms = [mine["base_arm"][0], *mine["treatment_arm"].unique(maintain_order=True)]
        for i, arm in enumerate(arms):
            row = [group if i == 0 else "", _arm_name(mine, arm)]
            for dataset, metric in columns:
                cell = mine.filter((pl.col("dataset") == dataset) & (pl.col("metric") == metric))
                one_base = cell["base_trials"].n_unique() <= 1  # every Δ of the cell from the same base runs
                if i == 0:
                    row.append(dash("no claim in this cell") if cell.is_empty() else
                               score(cell["base"][0], cell["base_sd"][0]) if one_base else
                               dash("bases differ: see each Δ"))
                    continue
                c = cell.filter(pl.col("treatment_arm") == arm)
                if c.is_empty():
                    row.append(dash("no claim of this arm here: see the notes"))
                    continue
                r = Claim.from_row(c.row(0, named=True))
                delta = f"{r.delta:+.2f}".replace("-", "−")
                base = "" if one_base else f" vs base {score(r.base, r.base_sd)}, {r.n_seeds} seeds"
                row.append(f"{score(r.treatment, r.treatment_sd)} (Δ {delta}{claim_mark(r)}{base})")
            body.append(row)
    return render(header, body, fmt)


def _arm_name(claims: pl.DataFrame, arm: str) -> str:
    """An arm's row label in a grid: its label, `[control: ...]` where its claims say it is a control."""
    for r in claims_of(claims):
        if arm in (r.base_arm, r.treatment_arm) and arm in r.control_arms:
            return arm_flags.named(arm, r.control_arms, r.controls)
    return label(arm)


def claim_lines(claims: pl.DataFrame, fmt: str, extra: dict[str, list[str]] | None = None) -> str:
    """The claim rows themselves: one line per claim with n, Δ, CI, test and p (and `extra`
    columns, one value per claim, before the verdict)."""
    extra = dict(extra or {})
    if "mde" in claims.columns:  # the power columns (`analysis.stats.power`), where the claims carry them
        extra = {"MDE; n for target Δ": [power_line(r) for r in claims.iter_rows(named=True)], **extra}
    header = ["cell", "metric", "comparison", "n ex", "seeds", "base", "treatment", "Δ", "95% CI", "test", "p",
              "p adj", "TOST p (adj)", "P(|Δ| < m)", "second test", "discordant", "trials", *extra, "verdict", "flags"]
    numbers = _flag_numbers(claims)
    body = []
    for i, r in enumerate(claims_of(claims)):
        why = untested(r)
        ci = dash(why) if r.ci_low is None else f"[{r.ci_low:+.2f}, {r.ci_high:+.2f}]"
        # discordant problems count only for one seed's McNemar; several seeds pair runs, not problems
        disc = (f"{r.only_base}/{r.only_treatment}" if r.only_base is not None else
                dash("several seeds: runs paired, not problems") if (r.n_seeds or 0) > 1 else dash(why))
        p = dash(why) if r.p is None else p_value(r.p)
        p_adj = dash(why) if r.p_adjusted is None else p_value(r.p_adjusted)
        second = dash(why) if r.p_secondary is None else f"{r.test_secondary} p {p_value(r.p_secondary)}"
        body.append([r.cell, r.metric, arm_flags.comparison(r),
                     str(r.n_examples), str(r.n_seeds), score(r.base, r.base_sd),
                     score(r.treatment, r.treatment_sd), f"{r.delta:+.2f}", ci, r.test, p, p_adj,
                     tost_cell(r), within_cell(r), second, disc, f"{r.base_budget}/{r.treatment_budget}",
                     *(v[i] for v in extra.values()), r.verdict, ", ".join(f"[{numbers[f]}]" for f in r.flags) or "none"])
    return render(header, body, fmt)


def tost_cell(claim: Claim) -> str:
    """A claim's TOST in a table cell: 'p 0.042 (0.084) at ±1', its p and adjusted p."""
    if claim.p_tost is None:
        return dash("no TOST in this table" if claim.margin is None else untested(claim))
    return f"{p_value(claim.p_tost)} ({p_value(claim.p_tost_adjusted)}) at ±{claim.margin:g}"


def within_cell(claim: Claim) -> str:
    """A claim's posterior probability that |Δ| < margin, in a table cell."""
    if claim.p_equivalent is None:
        return dash("no margin in this table" if claim.margin is None else untested(claim))
    return f"{claim.p_equivalent:.2f}"


def _flag_numbers(claims: pl.DataFrame) -> dict[str, int]:
    return flag_numbers(claims["flags"].to_list())


def flag_numbers(rows_flags: list[list[str]]) -> dict[str, int]:
    """Each distinct flag's number, in order of first appearance: a table row names its flags'
    numbers, the footer spells them out."""
    numbers: dict[str, int] = {}
    for flags in rows_flags:
        for f in flags:
            numbers.setdefault(f, len(numbers) + 1)
    return numbers


def fold_line(claim: Claim) -> str:
    """A claim's per-fold accuracies, base → treatment: 'fold 0: 85.14 → 84.72, ...'."""
    return ", ".join(f"fold {f}: {a:.2f} → {b:.2f}" for f, a, b in
                     zip(claim.folds, claim.base_fold_acc, claim.treatment_fold_acc))


def fold_scores(claims: pl.DataFrame) -> str:
    """Each claim's per-fold accuracies (mean over seeds), base → treatment: descriptive only."""
    lines = ["fold scores (descriptive only; the tests pool the folds' out-of-fold predictions):"]
    for r in claims_of(claims):
        lines.append(f"  {r.cell}, {r.metric}, {label(r.treatment_arm)}: {fold_line(r)}")
    return "\n".join(lines) + "\n"


def footer(claims: pl.DataFrame, notes: list[str]) -> str:
    """What the marks mean, which family was corrected, and every flag and note."""
    r = Claim.from_row(claims.row(0, named=True))
    tests = sorted(set(claims["test"].to_list()))
    lines = [f"Δ = treatment − {label(r.base_arm)}, in points. Marks: * p < 0.05, ** p < 0.01 after "
             f"{r.correction} correction over family '{r.family}' ({r.n_family} comparison{'' if r.n_family == 1 else 's'}). "
             f"Tests: {', '.join(tests)} (mcnemar_exact: one seed, examples paired; paired_t_seeds: "
             f"seeds paired, ± is the sd over seeds). CIs: one seed, a paired bootstrap over examples "
             f"({r.n_resamples} resamples, seed {r.rng_seed}); several seeds, the t interval of the mean Δ "
             f"(the t-test's own). TOST: two one-sided paired t-tests that |Δ| < m (m: the margin, points), its p "
             f"and, in brackets, adjusted like p over the family; P(|Δ| < m): the Student-t posterior of the mean "
             f"paired Δ (one seed: over examples). {rule()} "
             f"trials: the tuning budget, the most trials a slot (arm, seed, fold) held, base/treatment."]
    if "mde" in claims.columns:
        lines.append("MDE: the smallest |Δ| (points) the claim's own test at its own n detects with 80% power at a "
                     "two-sided 0.05 (unadjusted), from the observed sd of the paired differences (per seed; one "
                     "seed: per example); n for target Δ: the seeds (a zero-shot LLM's one run: test examples, never "
                     "beyond the benchmark's) at which the t-test detects the target, the paper's Δ for the cell or a "
                     "default 1 point, at 0.05 before correction; statsmodels' TTestPower. The verdict's 'N more "
                     "would decide' answers another question: at the observed Δ, the fewer of the difference test's "
                     "and the TOST's counts, at the family's corrected level; so both stand in one row. One seed of "
                     "trained arms: no count of examples makes a claim on the method, which needs 6 seeds "
                     "(docs/analysis.md).")
    lines += [f"flag [{k}]: {f}" for f, k in _flag_numbers(claims).items()]
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines)


INFILL_PAPER = ("paper infilling acc (%)", "paper perfect match (%)")
INFILL_SLOTS = {False: "all masked numbers", True: "used slots only"}
"""the scope of each infilling column: every masked number (the paper's Table 4) or ours"""


def infill_table(table: pl.DataFrame, by: list[str], fmt: str,
                 paper: list[tuple[str, str]] | None = None, used_only: bool = False) -> str:
    """The infilling rows: cell, seeds, examples, infilling accuracy and perfect match with their
    95% CIs, each column named by the slots it scores (and, given `paper`, the published figures
    beside each), flags."""
    if paper is not None and used_only:
        raise ValueError("the paper's Table 4 scores every masked number: its figures stand beside those only")
    scope = INFILL_SLOTS[used_only]
    header = [*by, "seeds", "examples", f"infilling acc, {scope} (%)", "95% CI", f"perfect match, {scope} (%)",
              "95% CI", "flags"]
    if paper is not None:
        header[4 + len(by):4 + len(by)] = [INFILL_PAPER[0]]
        header.insert(len(header) - 1, INFILL_PAPER[1])
    numbers = flag_numbers(table["flags"].to_list())
    body = []
    for i, r in enumerate(table.iter_rows(named=True)):
        acc = [score(r["infill_acc"], r["infill_sd"]), f"[{r['infill_low']:.2f}, {r['infill_high']:.2f}]"]
        pmr = [score(r["pmr"], r["pmr_sd"]), f"[{r['pmr_low']:.2f}, {r['pmr_high']:.2f}]"]
        if paper is not None:  # a figure the paper has not says so
            acc.append(dash("no paper figure") if paper[i][0] == "–" else paper[i][0])
            pmr.append(dash("no paper figure") if paper[i][1] == "–" else paper[i][1])
        body.append([*(str(r[k]) for k in by), str(r["n_seeds"]), str(r["n_examples"]), *acc, *pmr,
                     ", ".join(f"[{numbers[f]}]" for f in r["flags"]) or "none"])
    return render(header, body, fmt)


def infill_footer(table: pl.DataFrame, notes: list[str], used_only: bool, resamples: int, rng_seed: int) -> str:
    scored = ("only the masked slots whose numbers the gold expression uses (ours, not the paper's Table 4 "
              "metric)" if used_only else
              "every masked number slot of the test problems, the paper's Table 4 'absolute accuracy over all the "
              "masked numbers' (a slot the expression does not use must be filled 'unused')")
    lines = [f"Infilling: {scored}, filled from the gold expression; "
             "perfect match: all of a problem's scored slots right. One seed: bootstrap over examples "
             f"({resamples} resamples, seed {rng_seed}) and Wilson; several: mean ± sd, t interval."]
    lines += [f"flag [{k}]: {f}" for f, k in flag_numbers(table["flags"].to_list()).items()]
    return "\n".join(lines + [f"note: {n}" for n in notes])


def curve_table(points: pl.DataFrame, fmt: str) -> str:
    """The figure's points: training size, arm, seeds, accuracy, its 95% CI, the adjusted p's mark."""
    header = ["training problems", "arm", "seeds", "value acc (%)", "95% CI", "p adj"]
    body = [[f"{r['n_train']:.0f}", label(r["arm"]), str(r["n_seeds"]), f"{r['acc']:.2f}",
             f"[{r['low']:.2f}, {r['high']:.2f}]",
             (dash("the reference") if r.get("reference") else dash("no spread")) if r["p_adjusted"] is None
             else f"{p_value(r['p_adjusted'])} {r['star']}".strip()]
            for r in points.sort("n_train", "arm").iter_rows(named=True)]
    return render(header, body, fmt)


def figure(points: pl.DataFrame, path: str, title: str) -> str:
    """Value accuracy vs training size, one line per arm with its 95% CI band and a dot per seed;
    a star above a treatment's
    point where its difference from the base is significant after correction. `points` columns: arm, n_train, acc, low,
    high, seed_accs, star."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a cluster or in CI
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=150)
    for arm in points["arm"].unique(maintain_order=True):
        p = points.filter(pl.col("arm") == arm).sort("n_train")
        line, = ax.plot(p["n_train"], p["acc"], marker="o", label=f"{label(arm)} (mean; dots: seeds)")
        ax.fill_between(p["n_train"], p["low"], p["high"], alpha=0.2, color=line.get_color())
        seeds = p.explode("seed_accs")
        ax.scatter(seeds["n_train"], seeds["seed_accs"], s=12, alpha=0.6, color=line.get_color())
    for r in points.filter(pl.col("star") != "").iter_rows(named=True):
        ax.annotate(r["star"], (r["n_train"], r["high"]), ha="center", va="bottom", fontsize=12)
    ax.set_xlabel("training problems")
    ax.set_ylabel("test value accuracy (%)")
    ax.set_ylim(max(0.0, points["low"].min() - 5), min(100.0, points["high"].max() + 8))
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
