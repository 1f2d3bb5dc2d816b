"""A grid study's report: its arms, its planned comparisons decided or not, every unplanned pair of
arms (exploratory), a forest plot of them all, and its learning curves as small multiples.

    .venv/bin/python bench/study_report.py --space search_spaces/converged.yaml --experiment converged \
        --root results --out docs/converged --wall '50 trials in 5816 s (...)'

Reads the experiment's tables (written by `psedual tune --space FILE`) and makes the comparisons
the sweep file names (`compare:`; the same `analyze compare` the job ran, so the same guardrails
refuse the same things, at each entry's equivalence margin), then writes <out>/report.md,
<out>/forest.png and <out>/learning.png:
- every arm: its seeds, test value accuracy mean ± sd over seeds, best epoch, training time, and
  ε at its last step (an arm whose scheduled fusion ends above 0.9 is flagged near teacher forcing);
- every claim: seeds, base and treatment mean ± sd, Δ with its 95% CI, the paired t-test's p,
  Holm-adjusted within its comparison (as the job printed) and over all the study's claims, the
  TOST at its margin and P(|Δ| < margin), the MDE and the seeds the paper's Δ (else 1 point) needs,
  the paper's Δ, the verdict (better / worse / equivalent within ±m / undecided: N more seeds) and
  its numbered flags;
- exploratory: every pair of arms no comparison planned, no verdict, p Holm over all pairs;
- the forest plot (claims and exploratory pairs, the paper's Δ, the margin shaded);
- where the arms stand by epoch, and the curves as small multiples with a Δ strip per panel;
- the wall time of the sweep (the runs table does not record first start to last end, so the
  job's own line is passed with --wall).
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from analysis import presets
from analysis.checks.guardrails import GuardrailError
from analysis.claims import arms, exploratory
from analysis.options import CompareOptions
from analysis.report import forest, learning, report
from analysis.stats import multiple, power
from analysis.tables import paper, read, text
from psedual.job import comparisons
from psedual.tune.space import arm_values, load_spec


def _claims(root: str, experiment: str, space: str, resamples: int):
    """Each of the sweep's comparisons built as `analyze compare` builds it: (planned, claims, runs, options)."""
    spec = load_spec(space)
    out = []
    for p in comparisons(spec, arm_values(spec, "variant"), experiment):
        args = CompareOptions(root=root, experiment=(experiment,), arm=p.arm, base=p.base, treatment=p.treatments,
                              where=p.where, by=p.cells, name=p.family, margin=p.margin, resamples=resamples)
        runs = presets.runs(args)
        cmp = presets.comparison(args, presets.family(args, "compare"), p.arm, p.base, p.treatments, p.cells)
        out.append((p, presets.build(args, cmp, runs), runs, args))
    return out


def _arm_name(p, arm: str) -> str:
    """A study-wide arm name: the comparison's arm value, with what its `where` fixes (a base
    solver's name alone: it has no PseDual settings)."""
    if p.arm == "variant" and arm == "base":
        return text.label(arm)
    fixed = ", ".join(f"{k.removeprefix('psedual.')} {v.split('|')[-1]}" for k, v in
                      (w.split("=", 1) for w in p.where))
    # a value reads as its label (PseDual-GCN, teacher forcing); one without a label with its key (control none)
    shown = text.label(arm) if p.arm == "variant" or arm in text.ARM_LABELS else \
        f"{p.arm.removeprefix('psedual.')} {arm}"
    return f"{shown} ({fixed})" if fixed else shown


def _trials(rows: pl.DataFrame, arm: str) -> frozenset[str]:
    """The runs (`experiment/trial`) the claims paired for `arm`, on either side."""
    out: set[str] = set()
    for r in rows.iter_rows(named=True):
        out |= set(r["base_trials"]) if r["base_arm"] == arm else set()
        out |= set(r["treatment_trials"]) if r["treatment_arm"] == arm else set()
    return frozenset(out)


def _flag(text: str) -> str:
    """A flag as the report numbers it: the same flag on each comparison differs only in the run it
    names as an example."""
    return re.sub(r", e\.g\. [^)]*\)", ")", text)


def _arms(built, everything: pl.DataFrame) -> tuple[list[exploratory.Arm], list[list[str]], pl.DataFrame, list,
                                                    pl.DataFrame, list[str], list[str]]:
    """The study's arms (each run set once, named by `arms.short_names`), their table rows, the
    learning curves under those names (one cell: each comparison a panel of its reference arm), the
    figure's pairs (cell, reference, treatment), each arm's curve once (the table's columns), and
    each claim's name by those arms ('PseDual-GCN, no expression vs base'), and where each comparison's
    arms stand by epoch, by the same names."""
    sets: dict[frozenset[str], str] = {}  # run set → what its first comparison's `where` fixes
    for p, b, _, _ in built:
        for arm in (p.base, *p.treatments):
            sets.setdefault(_trials(b.rows, arm), _arm_name(p, arm))
    # the solver alone first: the earlier arm of an exploratory pair is its base
    sets = dict(sorted(sets.items(), key=lambda kv: kv[1] != "base"))
    mine = {t: everything.filter((pl.col("experiment") + "/" + pl.col("trial")).is_in(list(t))) for t in sets}
    names = arms.short_names(mine)
    found = [exploratory.Arm(names[t], t) for t in sets]
    rows = []
    for t, settings in sets.items():
        # a seed's folds pooled: its test problems' accuracy over all folds (each fold's test split
        # predicted by the model trained on the others), then mean ± sd over seeds
        sized = mine[t]["n_test"].null_count() == 0  # tables before the column: the folds' plain mean
        weight = pl.col("n_test") if sized else pl.lit(1.0)
        seeds = mine[t].group_by("seed").agg(folds=pl.len(), acc=100 * (pl.col("test_value_acc") * weight).sum()
                                             / weight.sum())
        acc, folds = seeds["acc"], seeds["folds"].max()
        near = arms.near_teacher_forcing(names[t], mine[t])
        rows.append([names[t], settings, f"{seeds.height}" + (f" × {folds} folds" if folds > 1 else "")
                     + ("" if sized or folds == 1 else " (folds averaged: n_test not recorded)"),
                     f"{acc.mean():.2f} ± {acc.std():.2f}",
                     f"{mine[t]['best_epoch'].mean():.1f}", f"{mine[t]['train_seconds'].mean():.0f}",
                     arms.final_epsilon(mine[t]) + (" **near teacher forcing**" if near else "")])
    curves, pairs, labels, standing = [], [], [], []
    for p, b, runs, cargs in built:
        named = {a: names[_trials(b.rows, a)] for a in (p.base, *p.treatments)}
        curves.append(presets.learning_curves(cargs, b, runs).with_columns(pl.col("arm").replace(named)))
        pairs += [(r["cell"], named[r["base_arm"]], named[r["treatment_arm"]]) for r in b.rows.iter_rows(named=True)]
        labels += [f"{named[r['treatment_arm']]} vs {named[r['base_arm']]}" for r in b.rows.iter_rows(named=True)]
        # by the study's arm names: three comparisons of `variant` differ only in their `where`
        renamed = b.rows.with_columns(pl.col("base_arm").replace(named), pl.col("treatment_arm").replace(named))
        standing += [f"- {line}" for line in learning.standings(renamed, curves[-1])]
    curve = pl.concat(curves).unique(["cell", "arm", "epoch"], maintain_order=True)  # an arm in two comparisons
    by_arm = curve.with_columns(pl.lit("study").alias("cell"))
    return found, rows, curve, list(dict.fromkeys(pairs)), by_arm, labels, standing


def _exploratory(found, claims: pl.DataFrame, everything: pl.DataFrame, args, by) -> tuple[pl.DataFrame, list[str]]:
    """Every unplanned pair of arms, built as claims are, adjusted with the planned claims."""
    planned = {frozenset((frozenset(r["base_trials"]), frozenset(r["treatment_trials"])))
               for r in claims.iter_rows(named=True)}
    epochs = read.scan(args.root, "epochs", [args.experiment])
    preds = read.scan(args.root, "predictions", [args.experiment])
    frames, notes = [], []
    for base, treat in exploratory.unplanned(found, planned):
        try:
            frames.append(exploratory.pair(everything, epochs, preds, base, treat, by, args.resamples, 0))
        except GuardrailError as err:  # said, not dropped: the planned claims stand without it
            notes.append(f"{treat.name} vs {base.name}: not compared: {err}")
    if not frames:
        return pl.DataFrame(), notes
    return exploratory.adjust_all(claims["p"].to_list(), pl.concat(frames, how="diagonal_relaxed")), notes


def _fold_scores(claims: pl.DataFrame, labels: list[str]) -> str:
    """Each claim's per-fold accuracies (mean over seeds), base → treatment: descriptive only."""
    lines = ["Fold scores (test value accuracy, %, mean over seeds; descriptive only: each claim pools its seeds' "
             "folds):"]
    for r, name in zip(claims.iter_rows(named=True), labels):
        lines.append(f"- {name}: {report.fold_line(r)}")
    return "\n".join(lines)


def _forest(claims: pl.DataFrame, labels: list[str], extra: pl.DataFrame, numbers, path: str, title: str) -> str:
    rows = forest.planned_rows(claims, numbers, labels)
    for r in extra.iter_rows(named=True):
        rows.append(forest.Row(r["comparison"], r["delta"], r["ci_low"], r["ci_high"], None, forest.EXPLORATORY,
                               f"p {text.p_value(r['p'])}; Holm over all pairs {text.p_value(r['p_all'])}"))
    return forest.figure(rows, path, title)


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--space", required=True, help="the sweep file (its compare: entries)")
    cli.add_argument("--experiment", required=True)
    cli.add_argument("--root", default="results")
    cli.add_argument("--out", required=True, help="folder for report.md, forest.png and learning.png")
    cli.add_argument("--wall", default="", help="the job's wall time, as it printed it (e.g. '50 trials in 3712 s')")
    cli.add_argument("--resamples", type=int, default=10_000, help="bootstrap and permutation resamples")
    args = cli.parse_args()
    built = _claims(args.root, args.experiment, args.space, args.resamples)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    everything = read.scan(args.root, "runs", [args.experiment]).collect()

    claims = pl.concat([b.rows for _, b, _, _ in built], how="diagonal_relaxed")
    claims = claims.with_columns(pl.Series("p_study", multiple.adjust(claims["p"].to_list(), "holm"),
                                           dtype=pl.Float64))
    numbers = paper.load()
    found, arms_rows, curve, pairs, by_arm, labels, standing = _arms(built, everything)
    extra, skipped = _exploratory(found, claims, everything, args, built[0][0].cells)
    if not extra.is_empty():  # queryable beside the planned claims, marked exploratory
        exploratory.write(extra, args.root, args.experiment)
    figure = learning.figure(curve, str(out / "learning.png"), f"{args.experiment}: validation value accuracy by "
                             f"epoch, mean over seeds (band ± 1 sd); under each panel Δ vs its reference", pairs)
    plot = _forest(claims, labels, extra, numbers, str(out / "forest.png"),
                   f"{args.experiment}: Δ of test value accuracy, planned claims and exploratory pairs")

    numbered = report.flag_numbers([[_flag(f) for f in fs] for fs in claims["flags"].to_list()])
    body = []
    for r, name in zip(claims.iter_rows(named=True), labels):
        got = power.target(numbers, r)
        ci = f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]" if r["ci_low"] is not None else "–"
        body.append([f"{name} ({r['arm']})",
                     str(r["n_seeds"]), text.score(r["base"], r["base_sd"]),
                     text.score(r["treatment"], r["treatment_sd"]), f"{r['delta']:+.2f}", ci,
                     text.p_value(r["p"]), text.p_value(r["p_adjusted"]), text.p_value(r["p_study"]),
                     report.tost_cell(r), report.within_cell(r), power.line(r),
                     f"{got[0]:+.1f}" if got[1] == "paper" else "–", r["verdict"],
                     ", ".join(f"[{numbered[_flag(f)]}]" for f in r["flags"]) or "–"])
    header = ["comparison", "seeds", "base (%)", "treatment (%)", "Δ", "95% CI", "p (t)", "p Holm (its comparison)",
              "p Holm (all claims)", "TOST p (adj)", "P(|Δ| < m)", "MDE; n for target Δ", "paper Δ", "verdict",
              "flags"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    versions = ", ".join(sorted(set(everything["code_version"].cast(pl.String).to_list())))
    wall = f" --wall {shlex.quote(args.wall)}" if args.wall else ""  # runs as printed, apostrophes and all
    text = "\n\n".join([
        f"# Study report: {args.experiment}",
        "\n".join([f"- sweep: `{args.space}`; experiment `{args.experiment}` in `{args.root}`",
                   f"- written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC at commit {commit}; the runs' code "
                   f"version(s): {versions}",
                   f"- wall time: {args.wall or 'not given'}",
                   f"- command: `python bench/study_report.py --space {args.space} --experiment {args.experiment} "
                   f"--root {args.root} --out {args.out}{wall}`"]),
        "## Arms (test value accuracy of each arm's kept checkpoint)",
        text.render(["arm", "as its comparison names it", "seeds", "test value acc (%, folds pooled per seed)",
                       "best epoch (mean)",
                       "train s (mean)", "ε at the last step"], arms_rows, "markdown"),
        "## Claims (planned)",
        text.render(header, body, "markdown"),
        "\n".join(["Δ = treatment − base in points, paired over seeds (paired t-test over seeds; CI: its t interval). "
                   "TOST: two one-sided paired t-tests that |Δ| < m at the comparison's margin m (statsmodels' "
                   "ttost_paired), its p and, in brackets, Holm-adjusted within its comparison; P(|Δ| < m): the "
                   "Student-t posterior of the mean per-seed Δ. Verdict: better / worse (adjusted p < 0.05), "
                   "equivalent within ±m (adjusted TOST p < 0.05), else undecided, with the seeds at which the "
                   "quicker of the two tests reaches 80% power at the observed Δ and sd (docs/analysis.md). MDE: "
                   "the smallest |Δ| this test at these seeds detects with 80% power (two-sided 0.05, unadjusted); "
                   "n: the seeds that would detect the target (statsmodels' TTestPower). 'p Holm (all claims)' "
                   "adjusts over every claim of this study; the verdicts use the adjustment within each comparison, "
                   "as `analyze compare` does.",
                   *[f"- flag [{k}]: {f}" for f, k in numbered.items()]]),
        *([_fold_scores(claims, labels)] if claims["folds"].list.len().max() > 1 else []),
        "## Exploratory: every pair of arms no comparison planned (no verdict)",
        (exploratory.table(extra) if not extra.is_empty() else "No unplanned pair.") + "\n\n" + "\n".join(
            [f"Each pair is built as a claim is (the same pairing, guardrails and tests), over the first setting "
             f"that tells its arms apart (the others allowed: last column); its p is Holm-adjusted over all "
             f"{claims.height + extra.height} pairs of arms, the planned claims' included. A small p here is a "
             f"question for a planned study, not a finding.", *[f"- not compared: {n}" for n in skipped]]),
        f"![forest plot]({Path(plot).name})",
        "## Where the arms stand by epoch (validation value accuracy, mean over seeds; descriptive)",
        "\n".join(standing),
        f"![learning curves]({Path(figure).name})",
        learning.table(by_arm, "markdown", every=3),
    ]) + "\n"
    (out / "report.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
