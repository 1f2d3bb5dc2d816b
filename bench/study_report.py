"""A grid study's report: its arms, its comparisons with their power, and its learning curves.

    .venv/bin/python bench/study_report.py --space search_spaces/converged.yaml --experiment converged \
        --root results --out docs/converged

Reads the experiment's tables (written by `psedual tune --space FILE`) and makes the comparisons
the sweep file names (`compare:`; the same `analyze compare` the job ran, so the same guardrails
refuse the same things), then writes <out>/report.md and <out>/learning.png:
- every arm: its seeds, test value accuracy mean ± sd over seeds, best epoch, training time;
- every claim: seeds, base and treatment mean ± sd, Δ with its 95% CI, the paired t-test's p,
  Holm-adjusted within its comparison (as the job printed) and over all the study's claims at
  once (the stricter: the study asks all its questions together), the MDE and the seeds the
  paper's Δ (else 1 point) needs, the verdict, the paper's Δ for the cell;
- where the arms stand by epoch, and the curves of all arms in one figure;
- the wall time of the sweep (its runs table: first start to last end is not recorded, so the
  job's own line is passed with --wall).
"""

from __future__ import annotations

import argparse
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from analysis import learning, multiple, paper, power, presets, report
from analysis.options import CompareOptions
from psedual.job import comparisons
from psedual.tune.space import arm_values, load_spec


def _claims(root: str, experiment: str, space: str):
    """Each of the sweep's comparisons built as `analyze compare` builds it: (planned, claims, runs)."""
    spec = load_spec(space)
    out = []
    for p in comparisons(spec, arm_values(spec, "variant"), experiment):
        args = CompareOptions(root=root, experiment=(experiment,), arm=p.arm, base=p.base, treatment=p.treatments,
                              where=p.where, by=p.cells, name=p.family)
        runs = presets.runs(args)
        cmp = presets.comparison(args, presets.family(args, "compare"), p.arm, p.base, p.treatments, p.cells)
        out.append((p, presets.build(args, cmp, runs), runs, args))
    return out


def _arm_name(p, arm: str) -> str:
    """A study-wide arm name: the comparison's arm value, with what its `where` fixes (a base
    solver's name alone: it has no PseDual settings)."""
    if p.arm == "variant" and arm == "base":
        return report.label(arm)
    fixed = ", ".join(f"{k.removeprefix('psedual.')} {v.split('|')[-1]}" for k, v in
                      (w.split("=", 1) for w in p.where))
    return f"{report.label(arm)} ({fixed})" if fixed else report.label(arm)


def _trials(rows: pl.DataFrame, arm: str) -> frozenset[str]:
    """The runs (`experiment/trial`) the claims paired for `arm`, on either side."""
    out: set[str] = set()
    for r in rows.iter_rows(named=True):
        out |= set(r["base_trials"]) if r["base_arm"] == arm else set()
        out |= set(r["treatment_trials"]) if r["treatment_arm"] == arm else set()
    return frozenset(out)


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--space", required=True, help="the sweep file (its compare: entries)")
    cli.add_argument("--experiment", required=True)
    cli.add_argument("--root", default="results")
    cli.add_argument("--out", required=True, help="folder for report.md and learning.png")
    cli.add_argument("--wall", default="", help="the job's wall time, as it printed it (e.g. '50 trials in 3712 s')")
    args = cli.parse_args()
    built = _claims(args.root, args.experiment, args.space)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    claims = pl.concat([b.rows for _, b, _, _ in built], how="diagonal_relaxed")
    claims = claims.with_columns(pl.Series("p_study", multiple.adjust(claims["p"].to_list(), "holm"),
                                           dtype=pl.Float64))
    numbers = paper.load()
    curves, seen, arms_rows, standing = [], set(), [], []
    for p, b, runs, cargs in built:
        curve = presets.learning_curves(cargs, b, runs)
        standing += [f"- {line}" for line in learning.standings(b.rows, curve)]
        for arm in (p.base, *p.treatments):
            trials = _trials(b.rows, arm)
            if trials in seen:  # the same runs under another comparison's name (GCN = its scheduled fusion)
                continue
            seen.add(trials)
            name = _arm_name(p, arm)
            curves.append(curve.filter(pl.col("arm") == arm).with_columns(arm=pl.lit(name)))
            mine = runs.filter((pl.col("experiment") + "/" + pl.col("trial")).is_in(list(trials)))
            acc = 100 * mine["test_value_acc"]
            arms_rows.append([name, str(mine.height), f"{acc.mean():.2f} ± {acc.std():.2f}",
                              f"{mine['best_epoch'].mean():.1f}", f"{mine['train_seconds'].mean():.0f}"])
    curve = pl.concat(curves)
    figure = learning.figure(curve, str(out / "learning.png"),
                             f"{args.experiment}: validation value accuracy by epoch\nmean over seeds, band ± 1 sd")

    body = []
    for r in claims.iter_rows(named=True):
        got = power.target(numbers, r)
        paper_delta = f"{got[0]:+.1f}" if got[1] == "paper" else "–"
        ci = f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]" if r["ci_low"] is not None else "–"
        body.append([f"{report.label(r['treatment_arm'])} vs {report.label(r['base_arm'])} ({r['arm']})",
                     str(r["n_seeds"]), report.score(r["base"], r["base_sd"]),
                     report.score(r["treatment"], r["treatment_sd"]), f"{r['delta']:+.2f}", ci,
                     report.p_value(r["p"]), report.p_value(r["p_adjusted"]), report.p_value(r["p_study"]),
                     power.line(r), paper_delta, r["verdict"]])
    header = ["comparison", "seeds", "base (%)", "treatment (%)", "Δ", "95% CI", "p (t)", "p Holm (its comparison)",
              "p Holm (all claims)", "MDE; n for target Δ", "paper Δ", "verdict"]
    # one line per flag: the same flag on each comparison differs only in the run it names as an example
    flags = sorted({re.sub(r", e\.g\. [^)]*\)", ")", f) for fs in claims["flags"].to_list() for f in fs})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    versions = ", ".join(sorted(set(pl.concat([r for _, _, r, _ in built], how="diagonal_relaxed")
                                    ["code_version"].cast(pl.String).to_list())))
    text = "\n\n".join([
        f"# Study report: {args.experiment}",
        "\n".join([f"- sweep: `{args.space}`; experiment `{args.experiment}` in `{args.root}`",
                   f"- written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC at commit {commit}; the runs' code "
                   f"version(s): {versions}",
                   f"- wall time: {args.wall or 'not given'}",
                   f"- command: `python bench/study_report.py --space {args.space} --experiment {args.experiment} "
                   f"--root {args.root} --out {args.out}`"]),
        "## Arms (test value accuracy of each arm's kept checkpoint)",
        report.render(["arm", "seeds", "test value acc (%)", "best epoch (mean)", "train s (mean)"], arms_rows,
                      "markdown"),
        "## Claims",
        report.render(header, body, "markdown"),
        "\n".join(["Δ = treatment − base in points, paired over seeds (paired t-test over seeds; CI: its t interval). "
                   "MDE: the smallest |Δ| this test at these seeds detects with 80% power (two-sided 0.05, "
                   "unadjusted), from the sd of the per-seed Δ; n: the seeds that would detect the target "
                   "(statsmodels' TTestPower). 'p Holm (all claims)' adjusts over every claim of this study; the "
                   "verdicts use the adjustment within each comparison, as `analyze compare` does.",
                   *[f"- flag: {f}" for f in flags]]),
        "## Where the arms stand by epoch (validation value accuracy, mean over seeds; descriptive)",
        "\n".join(standing),
        f"![learning curves]({Path(figure).name})",
        learning.table(curve, "markdown", every=3),
    ]) + "\n"
    (out / "report.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
