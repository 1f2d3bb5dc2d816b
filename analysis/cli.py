"""`psedual analyze ...` (or `python -m analysis ...`): paper tables, claims and the figure.

    psedual analyze table1  --experiment table1_mawps_small      # solver × {base, GRU, GCN}
    psedual analyze table3  --experiment table3_fusion           # teacher forcing vs scheduled fusion
    psedual analyze infill  --experiment table1_mawps_small      # infilling accuracy, perfect match
    psedual analyze curve   --experiment figure1_sizes --png training_size.png
    psedual analyze compare --experiment default --arm variant --base base --treatment gcn --by solver
    psedual analyze report  --experiment paper-small --out report/   # Tables 1-4, Figure 1, the paper's figures

Every command reads <root>/{runs,epochs,predictions}; the claim commands print the claim rows and
write them to <root>/claims/<name>.parquet.
"""

from __future__ import annotations

import argparse
import sys

from analysis import claims as claims_mod
from analysis import paper_report, presets, report
from analysis.errors import ERRORS, one_line
from analysis.multiple import METHODS
from psedual.storage import DEFAULT_ROOT
from psedual.train.best import SELECT_BY


def _paper_table(args, command: str) -> None:
    built, by = presets.paper_table(args, command, presets.runs(args))
    print(f"{presets.TITLES[command]} (experiments: {', '.join(args.experiment or ['all'])})\n")
    print(report.grid(built.rows, args.format, " / ".join(k for k in by if k != "data.dataset")))
    print()
    print(report.claim_lines(built.rows, args.format))
    print()
    if built.rows["folds"].list.len().max() > 1:
        print(report.fold_scores(built.rows))
    print(report.footer(built.rows, built.notes))


def _compare(args) -> None:
    runs = presets.runs(args)
    cmp = presets.comparison(args, presets.family(args, "compare"), args.arm, args.base, tuple(args.treatment),
                             tuple(args.by) or ("data.dataset", "solver"))
    built = presets.build(args, cmp, runs)
    print(report.claim_lines(built.rows, args.format))
    print()
    print(report.fold_scores(built.rows))
    print(report.footer(built.rows, built.notes))


def _infill(args) -> None:
    table, notes, by = presets.infill(args, presets.runs(args), used_only=args.slots == "used")
    print(report.infill_table(table, by, args.format))
    print()
    print(report.infill_footer(table, notes, args.slots == "used", args.resamples, args.rng_seed))


def _curve(args) -> None:
    points, built, path = presets.curve(args, presets.runs(args), args.png)
    print(report.curve_table(points, args.format))
    print("\nThe 95% CIs above are of each arm's accuracy (t over seeds; Wilson for one seed); the CIs below "
          "are of the difference Δ.\n")
    print(report.footer(built.rows, built.notes))
    print(f"figure: {path}")


def _report(args) -> None:
    path = paper_report.write(args)
    figure = path.with_name(paper_report.FIGURE)
    print(f"report: {path}" + (f"\nfigure: {figure}" if figure.exists() else ""))


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
    rep = subs.add_parser("report", parents=[common, claims_args],
                          help="the paper as one Markdown report: Tables 1-4 and Figure 1 beside the paper's figures")
    rep.add_argument("--out", required=True, metavar="DIR", help="folder for report.md and figure1.png")
    rep.set_defaults(run=_report)


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
