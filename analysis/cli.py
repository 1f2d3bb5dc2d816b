"""`psedual analyze ...` (or `python -m analysis ...`): paper tables, claims and the figure.

    psedual analyze table1  --experiment table1_mawps_small      # solver × {base, GRU, GCN}
    psedual analyze table3  --experiment table3_fusion           # teacher forcing vs scheduled fusion
    psedual analyze infill  --experiment table1_mawps_small      # infilling accuracy, perfect match
    psedual analyze curve   --experiment figure1_sizes --png training_size.png
    psedual analyze compare --experiment default --arm variant --base base --treatment gcn --by solver

Every command reads <root>/{runs,epochs,predictions}; the claim commands print the claim rows and
write them to <root>/claims/<name>.parquet.
"""

from __future__ import annotations

import argparse
import sys

import polars as pl

from analysis import claims as claims_mod
from analysis import read, report, summaries
from analysis.claims import Comparison
from analysis.multiple import METHODS
from psedual.reexamine.config import BASE, EXPRESSION_ENCODERS
from psedual.storage import DEFAULT_ROOT
from psedual.train.best import SELECT_BY

# (arm column, base, treatments, cells) of the paper's comparisons
PRESETS = {
    "table1": ("variant", BASE, tuple(EXPRESSION_ENCODERS), ("data.dataset", "solver")),
    "table3": ("psedual.fusion", "teacher_forcing", ("scheduled",), ("data.dataset", "solver", "variant")),
    "curve": ("variant", BASE, tuple(EXPRESSION_ENCODERS), ("data.dataset", "solver", "data.train_size")),
}


def _runs(args) -> pl.DataFrame:
    runs = read.select(read.scan(args.root, "runs", args.experiment), read.parse_where(args.where)).collect()
    if runs.is_empty():
        raise ValueError(f"no runs match --where {' '.join(args.where)} in {args.root}")
    return runs


def _comparison(args, family: str, arm: str, base: str, treatments: tuple[str, ...], by: tuple[str, ...]) -> Comparison:
    return Comparison(family=family, arm=arm, base=base, treatments=treatments, by=by, metrics=tuple(args.metric or ["value"]),
                      select_by=args.select_by, correction=args.correction, n_resamples=args.resamples,
                      rng_seed=args.rng_seed, allow_diff=tuple(args.allow_diff))


def _family(args, command: str) -> str:
    return args.name or "_".join([command, *(args.experiment or ["all"])])


def _claims(args, cmp: Comparison, runs: pl.DataFrame) -> claims_mod.Claims:
    built = claims_mod.build(runs, read.scan(args.root, "epochs", args.experiment),
                             read.scan(args.root, "predictions", args.experiment), cmp)
    path = claims_mod.write(built.rows, args.root, cmp.family)
    built.notes.append(f"{built.rows.height} claim rows written to {path}")
    return built


def _paper_table(args, command: str) -> None:
    arm, base, treatments, by = PRESETS[command]
    runs = _runs(args)
    present = set(runs[read.column(arm, runs.columns)].drop_nulls().to_list())
    treatments = tuple(t for t in treatments if t in present) or treatments
    by = (*by, *args.by)
    built = _claims(args, _comparison(args, _family(args, command), arm, base, treatments, by), runs)
    title = {"table1": "Table 1: test accuracy, solver × PseDual variant",
             "table3": "Table 3: teacher forcing vs scheduled fusion"}[command]
    print(f"{title} (experiments: {', '.join(args.experiment or ['all'])})\n")
    print(report.grid(built.rows, args.format, " / ".join(k for k in by if k != "data.dataset")))
    print()
    print(report.claim_lines(built.rows, args.format))
    print()
    if built.rows["folds"].list.len().max() > 1:
        print(report.fold_scores(built.rows))
    print(report.footer(built.rows, built.notes))


def _compare(args) -> None:
    runs = _runs(args)
    cmp = _comparison(args, _family(args, "compare"), args.arm, args.base, tuple(args.treatment),
                      tuple(args.by) or ("data.dataset", "solver"))
    built = _claims(args, cmp, runs)
    print(report.claim_lines(built.rows, args.format))
    print()
    print(report.fold_scores(built.rows))
    print(report.footer(built.rows, built.notes))


def _infill(args) -> None:
    runs = _runs(args)
    by = [read.column(k, runs.columns) for k in ("data.dataset", "solver", "variant", *args.by)]
    notes: list[str] = []
    table = summaries.infill(runs, read.scan(args.root, "epochs", args.experiment),
                             read.scan(args.root, "predictions", args.experiment), by, args.resamples,
                             args.rng_seed, used_only=args.slots == "used", select_by=args.select_by, notes=notes)
    header = [*by, "seeds", "examples", "infilling acc (%)", "95% CI", "perfect match (%)", "95% CI", "flags"]
    numbers = report.flag_numbers(table["flags"].to_list())
    body = [[*(str(r[k]) for k in by), str(r["n_seeds"]), str(r["n_examples"]),
             report.score(r["infill_acc"], r["infill_sd"]), f"[{r['infill_low']:.2f}, {r['infill_high']:.2f}]",
             report.score(r["pmr"], r["pmr_sd"]), f"[{r['pmr_low']:.2f}, {r['pmr_high']:.2f}]",
             ", ".join(f"[{numbers[f]}]" for f in r["flags"]) or "–"]
            for r in table.iter_rows(named=True)]
    print(report.render(header, body, args.format))
    scored = ("every masked number slot of the test problems (a slot the expression does not use must be "
              "filled 'unused')" if args.slots == "all" else
              "the masked slots whose numbers the gold expression uses (the paper's Table 4)")
    print(f"\nInfilling: {scored}, filled from the gold expression; "
          "perfect match: all of a problem's scored slots right. One seed: bootstrap over examples "
          f"({args.resamples} resamples, seed {args.rng_seed}) and Wilson; several: mean ± sd, t interval.")
    for f, k in numbers.items():
        print(f"flag [{k}]: {f}")
    for note in notes:
        print(f"note: {note}")


def _curve(args) -> None:
    arm, base, treatments, by = PRESETS["curve"]
    runs = _runs(args)
    for key in ("data.dataset", "solver"):
        values = runs[key].unique().to_list()
        if len(values) > 1:
            raise ValueError(f"the figure shows one {key}; these runs have {sorted(values)}: add --where {key}=...")
    present = set(runs[arm].to_list())
    treatments = tuple(t for t in treatments if t in present)
    if base not in present or not treatments:
        raise ValueError(f"the figure needs {arm}={base} and a PseDual variant; present: {sorted(present)}")
    built = _claims(args, _comparison(args, _family(args, "curve"), arm, base, treatments, by), runs)
    # plot the very runs the claims compared (one per slot, picked by --select-by)
    chosen = {t for col in ("base_trials", "treatment_trials") for ts in built.rows[col].to_list() for t in ts}
    runs = runs.filter((pl.col("experiment") + "/" + pl.col("trial")).is_in(list(chosen)))
    points = summaries.size_points(runs, read.scan(args.root, "predictions", args.experiment), arm,
                                   [base, *treatments], list(by), built.rows)
    title = (f"{runs['solver'][0]} on {runs['data.dataset'][0]}: test value accuracy vs training size\n"
             f"bands: 95% CI (t over seeds; Wilson for 1 seed); * / ** {args.correction}-adjusted p < .05 / .01, "
             f"↑ better ↓ worse than base")
    path = report.figure(points, args.png, title)
    header = ["training problems", "arm", "seeds", "value acc (%)", "95% CI", "p adj"]
    body = [[f"{r['n_train']:.0f}", report.label(r["arm"]), str(r["n_seeds"]), f"{r['acc']:.2f}",
             f"[{r['low']:.2f}, {r['high']:.2f}]", f"{report.p_value(r['p_adjusted'])} {r['star']}".strip()]
            for r in points.sort("n_train", "arm").iter_rows(named=True)]
    print(report.render(header, body, args.format))
    print("\nThe 95% CIs above are of each arm's accuracy (t over seeds; Wilson for one seed); the CIs below "
          "are of the difference Δ.\n")
    print(report.footer(built.rows, built.notes))
    print(f"figure: {path}")


ERRORS = (ValueError, OSError, KeyError, TypeError, pl.exceptions.PolarsError)
"""What a command may meet in tables it did not write or that were cut short: each is reported as
one line naming it (GuardrailError is a ValueError)."""


def one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text if isinstance(err, ValueError) else f"{type(err).__name__}: {text}"


def add_commands(commands) -> None:
    """Add `analyze` and its sub-commands to an argparse sub-parser collection."""
    an = commands.add_parser("analyze", help="tables, claims and figures from the results tables",
                             description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    subs = an.add_subparsers(dest="analyze_command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=DEFAULT_ROOT, help=f"results storage: folder or URI (default ./{DEFAULT_ROOT})")
    common.add_argument("--experiment", action="append", help="experiment(s) to read (repeatable; default all)")
    common.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                        help="keep runs whose config matches, e.g. solver=gts fold=0 (repeatable)")
    common.add_argument("--by", action="append", default=[], metavar="COLUMN",
                        help="one cell per value of this config column as well (repeatable)")
    common.add_argument("--format", choices=report.FORMATS, default="markdown")
    common.add_argument("--resamples", type=int, default=10_000, help="bootstrap/permutation resamples")
    common.add_argument("--rng-seed", type=int, default=0, help="seed of the resampling RNG")
    common.add_argument("--select-by", default=SELECT_BY,
                        help=f"column that picks one trial per slot (default {SELECT_BY})")
    claims_args = argparse.ArgumentParser(add_help=False)
    claims_args.add_argument("--metric", action="append", choices=list(claims_mod.METRICS),
                             help="per-example metric(s) to compare (default value)")
    claims_args.add_argument("--correction", choices=METHODS, default="holm",
                             help="over the family of this command's comparisons (default holm)")
    claims_args.add_argument("--allow-diff", action="append", default=[], metavar="COLUMN",
                             help="let the arms differ in this config column (repeatable; each such claim is "
                                  "flagged); any other difference is refused")
    claims_args.add_argument("--name", help="family name, and the claims file's name (default: command_experiments)")
    for name, run, help_ in (("table1", lambda a: _paper_table(a, "table1"), "paper table 1"),
                             ("table3", lambda a: _paper_table(a, "table3"), "paper table 3"),
                             ("compare", _compare, "any arm against a base")):
        p = subs.add_parser(name, parents=[common, claims_args], help=help_)
        p.set_defaults(run=run)
    cmp = subs.choices["compare"]
    cmp.add_argument("--arm", default="variant", help="column whose values are the arms (default variant)")
    cmp.add_argument("--base", default="base", help="reference arm (default base)")
    cmp.add_argument("--treatment", action="append", required=True, help="arm(s) compared with --base")
    cu = subs.add_parser("curve", parents=[common, claims_args], help="training-size figure (PNG)")
    cu.add_argument("--png", default="training_size.png", help="figure path (default training_size.png)")
    cu.set_defaults(run=_curve)
    inf = subs.add_parser("infill", parents=[common], help="infilling accuracy and perfect match")
    inf.add_argument("--slots", choices=("all", "used"), default="all",
                     help="score every masked slot, or only those the gold expression uses (the paper's Table 4)")
    inf.set_defaults(run=_infill)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except ERRORS as err:
        print(f"analyze: error: {one_line(err)}", file=sys.stderr)
        return 2
    return 0
