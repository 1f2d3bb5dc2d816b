"""`psedual analyze study`: a grid study's report: its arms, its planned comparisons decided or not, its
looks, every unplanned pair of arms (exploratory), a forest plot of them all, its learning curves.

    psedual analyze study --space search_spaces/converged.yaml --experiment converged \
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
  the paper's Δ, the verdict (`verdicts.rule()`, and `targets`: against the paper's Δ) and its flags;
- a sweep in rounds (its root holds its looks table): the design and each look (`looks.section`);
- exploratory: every pair of arms no comparison planned, no verdict, p Holm over all pairs, the
  TOST at its arms' claims' margin;
- the forest plot (claims and exploratory pairs, the paper's Δ, the margin shaded);
- where the arms stand by epoch, and the curves as small multiples with a Δ strip per panel;
- the wall time (not in the runs table: the job's own line, passed with --wall).

The sweep file is read above analysis (analysis never imports the sweep code): `psedual analyze`
passes a `Plan`, `psedual.comparisons.study_plan`, that turns it into the job's `analyze compare` options.
The report is built once into a `StudyReport`, then rendered section by section (`SECTIONS`): a
new section is one function of the record and one entry there.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from analysis import presets
from analysis.checks import arms
from analysis.checks.guardrails import GuardrailError
from analysis.claims import exploratory, targets, verdicts
from analysis.claims.claims import Claims
from analysis.options import CompareOptions, StudyOptions
from analysis.paper_report import code_commit
from analysis.report import forest, learning, report
from analysis.stats import multiple, power
from analysis.tables import looks, paper, read, text
from analysis.tables.claim import Claim

Plan = Callable[[str, str, str], Sequence[CompareOptions]]
"""(sweep file, root, experiment) → the `analyze compare` options of each comparison the sweep
file plans, as the job ran them (`psedual.comparisons.study_plan`)."""

FOREST = "forest.png"
LEARNING = "learning.png"
REPORT = "report.md"
ARMS_HEADER = ("arm", "as its comparison names it", "seeds", "test value acc (%, folds pooled per seed)",
               "best epoch (mean)", "train s (mean)", "ε at the last step")
CLAIMS_HEADER = ("comparison", "seeds", "base (%)", "treatment (%)", "Δ", "95% CI", "p (t)", "p Holm (its comparison)",
                 "p Holm (all claims)", "TOST p (adj)", "P(|Δ| < m)", "MDE; n for target Δ", "paper Δ", "verdict",
                 "flags")
CLAIMS_NOTE = (
    "Δ = treatment − base in points, paired over seeds (paired t-test over seeds; CI: its t interval). "
    "TOST: two one-sided paired t-tests that |Δ| < m at the comparison's margin m (statsmodels' "
    "ttost_paired), its p and, in brackets, Holm-adjusted within its comparison; P(|Δ| < m): the "
    "Student-t posterior of the mean per-seed Δ. " + verdicts.rule() + " MDE: "
    "the smallest |Δ| this test at these seeds detects with 80% power (two-sided 0.05, unadjusted); "
    "n: the seeds that would detect the target (statsmodels' TTestPower). 'p Holm (all claims)' "
    "adjusts over every claim of this study; the verdicts use the adjustment within each comparison, "
    "as `analyze compare` does.")
"""What the claims table's columns and verdicts mean, under it."""


@dataclass(frozen=True)
class Planned:
    """One comparison the sweep file plans, built as `analyze compare` builds it."""

    options: CompareOptions
    """Its `analyze compare` options: arm, base, treatments, `where`, cells (`by`), margin."""
    claims: Claims
    """Its claim rows (with their power) and notes."""
    runs: pl.DataFrame
    """The runs its `where` keeps."""


@dataclass(frozen=True)
class StudyArms:
    """The study's arms, each run set once, and what the report shows of them."""

    found: tuple[exploratory.Arm, ...]
    """Each arm by its study-wide name (`arms.short_names`) and its runs, the solver alone first."""
    rows: tuple[tuple[str, ...], ...]
    """The arms table's rows (`ARMS_HEADER`)."""
    names: dict[frozenset[str], str]
    """Each run set's (`experiment/trial`) study-wide arm name."""

    def __post_init__(self) -> None:
        if len(self.found) != len(self.rows) or not self.found:
            raise ValueError(f"a study needs arms, each with its table row: {len(self.found)} arms, "
                             f"{len(self.rows)} rows")


@dataclass(frozen=True)
class Curves:
    """The learning curves under the study's arm names, and the claims named by them."""

    curve: pl.DataFrame
    """Validation value accuracy by cell, arm and epoch (each comparison a panel of its reference arm)."""
    pairs: tuple[tuple[str, str, str], ...]
    """The figure's panels' pairs: (cell, reference arm, treatment arm), each once."""
    labels: tuple[str, ...]
    """Each claim's name, in the claims' order ('PseDual-GCN, no expression vs base')."""
    standing: tuple[str, ...]
    """Where each comparison's arms stand by epoch, one Markdown list item each."""

    @property
    def by_arm(self) -> pl.DataFrame:
        """Each arm's curve once, in one cell: the table's columns."""
        return self.curve.with_columns(pl.lit("study").alias("cell"))


@dataclass(frozen=True)
class StudyReport:
    """A grid study's report, built once from its tables: what the sections render."""

    options: StudyOptions
    """The command's options (the report names them in its command line)."""
    commit: str
    """The code's commit that wrote the report (`paper_report.code_commit`: else the package version)."""
    written: datetime
    """When the report was written (UTC)."""
    versions: str
    """The runs' code versions, sorted, comma-separated."""
    claims: pl.DataFrame
    """The planned claims, every comparison's, with `p_study` (Holm over all of them)."""
    arms: StudyArms
    """The study's arms."""
    curves: Curves
    """The learning curves and the claims' names."""
    extra: pl.DataFrame
    """The exploratory pairs (empty: none), p Holm over all pairs (`p_all`)."""
    skipped: tuple[str, ...]
    """The unplanned pairs a guardrail refused, each said."""
    numbered: dict[str, int]
    """Each flag's number in the report (flags that differ only in their example run share one)."""

    def __post_init__(self) -> None:
        if self.claims.height != len(self.curves.labels):
            raise ValueError(f"{self.claims.height} claims but {len(self.curves.labels)} claim names")


def plan(options: StudyOptions, planner: Plan) -> list[Planned]:
    """Each of the sweep's comparisons built as `analyze compare` builds it, at `options.resamples`."""
    out = []
    for cargs in planner(options.space, options.root, options.experiment):
        cargs = replace(cargs, resamples=options.resamples)
        runs = presets.runs(cargs)
        cmp = presets.comparison(cargs, presets.family(cargs, "compare"), cargs.arm, cargs.base, cargs.treatment,
                                 cargs.by)
        out.append(Planned(cargs, presets.build(cargs, cmp, runs), runs))
    if not out:
        raise ValueError(f"{options.space} plans no comparison for experiment {options.experiment}: nothing to report")
    return out


def _arm_name(p: CompareOptions, arm: str) -> str:
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


def _flag(flag: str) -> str:
    """A flag as the report numbers it: the same flag on each comparison differs only in the run it
    names as an example."""
    return re.sub(r", e\.g\. [^)]*\)", ")", flag)


def _arm_row(name: str, settings: str, runs: pl.DataFrame) -> tuple[str, ...]:
    """An arm's table row: a seed's folds pooled (its test problems' accuracy over all folds, each
    fold's test split predicted by the model trained on the others), then mean ± sd over seeds."""
    sized = runs["n_test"].null_count() == 0  # tables before the column: the folds' plain mean
    weight = pl.col("n_test") if sized else pl.lit(1.0)
    seeds = runs.group_by("seed").agg(folds=pl.len(), acc=100 * (pl.col("test_value_acc") * weight).sum()
                                      / weight.sum())
    acc, folds = seeds["acc"], seeds["folds"].max()
    near = arms.near_teacher_forcing(name, runs)
    return (name, settings, f"{seeds.height}" + (f" × {folds} folds" if folds > 1 else "")
            + ("" if sized or folds == 1 else " (folds averaged: n_test not recorded)"),
            f"{acc.mean():.2f} ± {acc.std():.2f}", f"{runs['best_epoch'].mean():.1f}",
            f"{runs['train_seconds'].mean():.0f}", arms.final_epsilon(runs) + (" **near teacher forcing**" if near
                                                                                else ""))


def study_arms(planned: Sequence[Planned], everything: pl.DataFrame) -> StudyArms:
    """The study's arms: each run set once, named by `arms.short_names`, the solver alone first (the
    earlier arm of an exploratory pair is its base)."""
    sets: dict[frozenset[str], str] = {}  # run set → what its first comparison's `where` fixes
    for p in planned:
        for arm in (p.options.base, *p.options.treatment):
            sets.setdefault(_trials(p.claims.rows, arm), _arm_name(p.options, arm))
    sets = dict(sorted(sets.items(), key=lambda kv: kv[1] != "base"))
    mine = {t: everything.filter((pl.col("experiment") + "/" + pl.col("trial")).is_in(list(t))) for t in sets}
    names = arms.short_names(mine)
    return StudyArms(tuple(exploratory.Arm(names[t], t) for t in sets),
                     tuple(_arm_row(names[t], settings, mine[t]) for t, settings in sets.items()), names)


def study_curves(planned: Sequence[Planned], names: dict[frozenset[str], str]) -> Curves:
    """The learning curves under the study's arm names (one cell: each comparison a panel of its
    reference arm), the figure's pairs, each claim's name, and where each comparison's arms stand."""
    curves, pairs, labels, standing = [], [], [], []
    for p in planned:
        rows = p.claims.rows
        named = {a: names[_trials(rows, a)] for a in (p.options.base, *p.options.treatment)}
        curves.append(presets.learning_curves(p.options, p.claims, p.runs).with_columns(pl.col("arm").replace(named)))
        pairs += [(r["cell"], named[r["base_arm"]], named[r["treatment_arm"]]) for r in rows.iter_rows(named=True)]
        labels += [f"{named[r['treatment_arm']]} vs {named[r['base_arm']]}" for r in rows.iter_rows(named=True)]
        # by the study's arm names: three comparisons of `variant` differ only in their `where`
        renamed = rows.with_columns(pl.col("base_arm").replace(named), pl.col("treatment_arm").replace(named))
        standing += [f"- {line}" for line in learning.standings(renamed, curves[-1])]
    curve = pl.concat(curves).unique(["cell", "arm", "epoch"], maintain_order=True)  # an arm in two comparisons
    return Curves(curve, tuple(dict.fromkeys(pairs)), tuple(labels), tuple(standing))


def unplanned_pairs(options: StudyOptions, found: Sequence[exploratory.Arm], claims: pl.DataFrame,
                    everything: pl.DataFrame, by: Sequence[str]) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """Every unplanned pair of arms, built as claims are, adjusted with the planned claims; and the
    pairs a guardrail refused, each said (the planned claims stand without them)."""
    planned = {frozenset((frozenset(r["base_trials"]), frozenset(r["treatment_trials"])))
               for r in claims.iter_rows(named=True)}
    read_from = everything["experiment"].unique(maintain_order=True).to_list()  # the study's experiments
    epochs, preds = (read.scan(options.root, table, read_from) for table in ("epochs", "predictions"))
    frames, notes = [], []
    for base, treat in exploratory.unplanned(list(found), planned):
        try:
            frames.append(exploratory.pair(everything, epochs, preds, base, treat, by, options.resamples, 0,
                                           exploratory.margin_near(claims, base, treat)))
        except GuardrailError as err:
            notes.append(f"{treat.name} vs {base.name}: not compared: {err}")
    if not frames:
        return pl.DataFrame(), tuple(notes)
    return exploratory.adjust_all(claims["p"].to_list(), pl.concat(frames, how="diagonal_relaxed")), tuple(notes)


def build(options: StudyOptions, planner: Plan) -> StudyReport:
    """The study's report from its tables: every planned claim (Holm over the study as well), its
    arms, curves and unplanned pairs; the exploratory pairs are written beside the claims
    (<root>/exploratory/<experiment>.parquet), queryable and marked so."""
    planned = plan(options, planner)  # a study continuing an experiment compares its runs too: all are its arms'
    experiments = list(dict.fromkeys(e for p in planned for e in p.options.experiment)) or [options.experiment]
    everything = read.scan(options.root, "runs", experiments).collect()
    claims = pl.concat([p.claims.rows for p in planned], how="diagonal_relaxed")
    claims = claims.with_columns(pl.Series("p_study", multiple.adjust(claims["p"].to_list(), "holm"),
                                           dtype=pl.Float64))
    found = study_arms(planned, everything)
    extra, skipped = unplanned_pairs(options, found.found, claims, everything, planned[0].options.by)
    if not extra.is_empty():
        exploratory.write(extra, options.root, options.experiment)
    versions = ", ".join(sorted(set(everything["code_version"].cast(pl.String).to_list())))
    return StudyReport(options, code_commit(), datetime.now(timezone.utc), versions, claims, found,
                       study_curves(planned, found.names), extra, skipped,
                       report.flag_numbers([[_flag(f) for f in fs] for fs in claims["flags"].to_list()]))


def command_line(options: StudyOptions) -> str:
    """The command that writes this report again (the wall time quoted as the shell needs it)."""
    wall = f" --wall {shlex.quote(options.wall)}" if options.wall else ""
    resamples = f" --resamples {options.resamples}" if options.resamples != StudyOptions.resamples else ""
    return (f"psedual analyze study --space {options.space} --experiment {options.experiment} "
            f"--root {options.root} --out {options.out}{wall}{resamples}")


def _header(r: StudyReport) -> str:
    o = r.options
    return "\n\n".join([
        f"# Study report: {o.experiment}",
        "\n".join([f"- sweep: `{o.space}`; experiment `{o.experiment}` in `{o.root}`",
                   f"- written {r.written:%Y-%m-%d %H:%M} UTC at commit {r.commit}; the runs' code "
                   f"version(s): {r.versions}",
                   f"- wall time: {o.wall or 'not given'}",
                   f"- command: `{command_line(o)}`"])])


def _arms(r: StudyReport) -> str:
    return "## Arms (test value accuracy of each arm's kept checkpoint)\n\n" + text.render(
        list(ARMS_HEADER), [list(row) for row in r.arms.rows], "markdown")


def _claim_row(r: dict, name: str, numbers: pl.DataFrame, numbered: dict[str, int]) -> list[str]:
    claim = Claim.from_row(r)
    got = power.target(numbers, claim)
    ci = f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]" if r["ci_low"] is not None else "–"
    return [f"{name} ({r['arm']})", str(r["n_seeds"]), text.score(r["base"], r["base_sd"]),
            text.score(r["treatment"], r["treatment_sd"]), f"{r['delta']:+.2f}", ci,
            text.p_value(r["p"]), text.p_value(r["p_adjusted"]), text.p_value(r["p_study"]),
            report.tost_cell(claim), report.within_cell(claim), power.line(r),
            f"{got[0]:+.1f}" if got[1] == "paper" else "–", r["verdict"],
            ", ".join(f"[{numbered[_flag(f)]}]" for f in r["flags"]) or "–"]


def _claims(r: StudyReport) -> str:
    numbers = paper.load()
    body = [_claim_row(row, name, numbers, r.numbered)
            for row, name in zip(r.claims.iter_rows(named=True), r.curves.labels)]
    return "## Claims (planned)\n\n" + text.render(list(CLAIMS_HEADER), body, "markdown")


def _claims_note(r: StudyReport) -> str:
    return "\n".join([CLAIMS_NOTE, targets.margin_line(r.claims), *(f"- flag [{k}]: {f}" for f, k in r.numbered.items())])


def _looks(r: StudyReport) -> str | None:
    """The looks on record, where the study ran in rounds (its root holds its looks table)."""
    found = looks.present(r.options.root, [r.options.experiment])
    return None if found is None else "## Looks (a sweep in rounds: the study's verdicts)\n\n" + looks.section(found, r.claims)


def _fold_scores(r: StudyReport) -> str | None:
    """Each claim's per-fold accuracies (mean over seeds), base → treatment: descriptive only; none
    for a study of one fold."""
    if r.claims["folds"].list.len().max() <= 1:
        return None
    lines = ["Fold scores (test value accuracy, %, mean over seeds; descriptive only: each claim pools its seeds' "
             "folds):"]
    for row, name in zip(r.claims.iter_rows(named=True), r.curves.labels):
        lines.append(f"- {name}: {report.fold_line(Claim.from_row(row))}")
    return "\n".join(lines)


def _exploratory(r: StudyReport) -> str:
    table = exploratory.table(r.extra) if not r.extra.is_empty() else "No unplanned pair."
    said = [f"Each pair is built as a claim is (the same pairing, guardrails and tests), over the first setting "
            f"that tells its arms apart (the others allowed: last column); its p is Holm-adjusted over all "
            f"{r.claims.height + r.extra.height} pairs of arms, the planned claims' included. A small p here is a "
            f"question for a planned study, not a finding.", *[f"- not compared: {n}" for n in r.skipped]]
    return "## Exploratory: every pair of arms no comparison planned (no verdict)\n\n" + table + "\n\n" + \
        "\n".join(said)


def _forest(r: StudyReport) -> str:
    """The forest plot (written to <out>/forest.png) and its link."""
    rows = forest.planned_rows(r.claims, paper.load(), list(r.curves.labels))
    for e in r.extra.iter_rows(named=True):
        rows.append(forest.Row(e["comparison"], e["delta"], e["ci_low"], e["ci_high"], None, forest.EXPLORATORY,
                               f"p {text.p_value(e['p'])}; Holm over all pairs {text.p_value(e['p_all'])}"))
    path = forest.figure(rows, str(Path(r.options.out) / FOREST),
                         f"{r.options.experiment}: Δ of test value accuracy, planned claims and exploratory pairs")
    return f"![forest plot]({Path(path).name})"


def _standing(r: StudyReport) -> str:
    return "## Where the arms stand by epoch (validation value accuracy, mean over seeds; descriptive)\n\n" + \
        "\n".join(r.curves.standing)


def _learning(r: StudyReport) -> str:
    """The learning curves (written to <out>/learning.png), their link and their table."""
    path = learning.figure(r.curves.curve, str(Path(r.options.out) / LEARNING),
                           f"{r.options.experiment}: validation value accuracy by epoch, mean over seeds "
                           f"(band ± 1 sd); under each panel Δ vs its reference", list(r.curves.pairs))
    return f"![learning curves]({Path(path).name})\n\n" + learning.table(r.curves.by_arm, "markdown", every=3)


SECTIONS: tuple[Callable[[StudyReport], str | None], ...] = (
    _header, _arms, _claims, _claims_note, _looks, _fold_scores, _exploratory, _forest, _standing, _learning)
"""The report's sections in order: each renders from the record (none: the section is left out);
a section that draws a figure writes it into the report's folder."""


def render(r: StudyReport) -> str:
    """The report's Markdown, section by section."""
    return "\n\n".join(s for s in (section(r) for section in SECTIONS) if s is not None) + "\n"


def write(options: StudyOptions, planner: Plan) -> Path:
    """Build the report and write <out>/report.md (and its figures); the path written."""
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / REPORT
    path.write_text(render(build(options, planner)), encoding="utf-8")
    return path
