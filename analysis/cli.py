"""`psedual analyze ...` (or `python -m analysis analyze ...`): paper tables, claims and the figure.

    psedual analyze table1  --experiment+ table1_mawps_small     # solver × {base, GRU, GCN}
    psedual analyze table1  --experiment+ gts_5fold      # no PseDual arm: each arm alone, beside the paper
    psedual analyze table3  --experiment+ table3_fusion          # teacher forcing vs scheduled fusion
    psedual analyze infill  --experiment+ table1_mawps_small     # infilling accuracy, perfect match
    psedual analyze curve   --experiment+ figure1_sizes --png training_size.png
    psedual analyze curve   --experiment+ default --over epoch           # learning curves: where the arms stand
    psedual analyze compare --experiment+ default --arm variant --base base --treatment+ gcn --by+ solver
    psedual analyze report  --experiment+ paper-small --out report/  # Tables 1-4, Figure 1, the paper's figures
    psedual analyze optuna  --experiment optuna      # an Optuna sweep's study: plots, best trials per arm
    psedual analyze study   --space search_spaces/converged.yaml --experiment converged --out docs/converged
    psedual analyze leakage --experiment gts_5fold   # test problems that repeat a training problem, apart

Every command reads <root>/{runs,epochs,predictions}; the claim commands print the claim rows and
write them to <root>/claims/<name>.parquet. Each command's options are its typed config's fields
(`analysis/options.py`), named as the fields are (`--select_by`, `--allow_diff`, `--rng_seed`); a
list option takes `--key+ VALUE`, repeated to add more, or a list: `--treatment '[gru, gcn]'`.
"""

from __future__ import annotations

import sys
from argparse import RawDescriptionHelpFormatter
from collections.abc import Callable
from dataclasses import fields

from jsonargparse import ArgumentError, ArgumentParser, set_parsing_settings

from analysis import leakage, paper_report, presets, study_report
from analysis.checks import protocol
from analysis.claims import exploratory, targets
from analysis.errors import ERRORS, one_line
from psedual.option_errors import check_config_files, refusal
from analysis.options import (LIST_OPTIONS, AnalyzeOptions, ClaimOptions, CompareOptions, CurveOptions,
                              InfillOptions, LeakageOptions, OptunaOptions, ReportOptions, StudyOptions,
                              Table1Options, Table3Options)
from analysis.report import alone, learning, report
from analysis.tables import looks as looks_mod
from analysis.tables import paper, read, trials

# The help of each option is the docstring under its field.
set_parsing_settings(docstring_parse_attribute_docstrings=True)


def _paper_table(args: Table1Options | Table3Options, command: str) -> None:
    runs = presets.runs(args)
    if command == "table1" and not presets.treatments_present(runs, command):  # a reproduction: nothing to compare
        notes: list[str] = []
        by = list(dict.fromkeys(read.column(k, runs.columns) for k in ("data.dataset", "solver", *args.by)))
        rows = alone.arms(runs, read.scan(args.root, "epochs", args.experiment),
                          read.scan(args.root, "predictions", args.experiment), "variant", by, args.select_by, notes,
                          leakage.repeated)
        print(f"{presets.TITLES[command]} (experiments: {', '.join(args.experiment or ['all'])}): no PseDual arm in "
              f"these runs, so nothing is compared; each arm's accuracy alone, beside the paper's\n")
        print(alone.table(rows, args.format))
        print("\nCI: Wilson over the pooled test problems for one seed, the t interval over seeds for several.")
        for note in notes:
            print(f"note: {note}")
        return
    built, by = presets.paper_table(args, command, runs)
    print(f"{presets.TITLES[command]} (experiments: {', '.join(args.experiment or ['all'])})\n")
    print(report.grid(built.rows, args.format, " / ".join(k for k in by if k != "data.dataset")))
    print()
    print(report.claim_lines(built.rows, args.format))
    print()
    if built.rows["folds"].list.len().max() > 1:
        print(report.fold_scores(built.rows))
    print(report.footer(built.rows, built.notes))
    _margin_and_looks(args, built.rows)


def _compare(args: CompareOptions) -> None:
    runs = presets.runs(args)
    cmp = presets.comparison(args, presets.family(args, "compare"), args.arm, args.base, args.treatment,
                             args.by or ("data.dataset", "solver"))
    built = presets.build(args, cmp, runs)
    print(report.claim_lines(built.rows, args.format))
    print()
    print(report.fold_scores(built.rows))
    print(report.footer(built.rows, built.notes))
    _margin_and_looks(args, built.rows)
    extra, notes = exploratory.among_treatments(runs, read.scan(args.root, "epochs", args.experiment),
                                                read.scan(args.root, "predictions", args.experiment), built.rows,
                                                cmp.by, args.resamples, args.rng_seed)
    if not extra.is_empty() or notes:
        print(f"\nExploratory: each pair of treatments no comparison planned (no verdict; p adjusted by holm over all "
              f"{built.rows.height + extra.height} pairs, the claims above included):")
        print(exploratory.table(extra, args.format) if not extra.is_empty() else "none compared")
        if not extra.is_empty():
            notes = [*notes, f"{extra.height} exploratory row{'' if extra.height == 1 else 's'} written to "
                     f"{exploratory.write(extra, args.root, cmp.family)}"]
        for note in notes:
            print(f"note: {note}")
    curve = presets.learning_curves(args, built, runs)
    if not curve.is_empty():  # runs without epochs (a language model's) have no curve
        _standings(curve, built)


def _margin_and_looks(args: ClaimOptions, rows) -> None:
    """The margin the claims read and why; then, where the root holds a looks table of these
    experiments (a sweep in rounds), its design, its looks and the seeds after each decisive look."""
    print(targets.margin_line(rows, ClaimOptions.margin))
    found = looks_mod.present(args.root, list(args.experiment) or None)
    if found is not None:
        print("\nLooks on record (a sweep in rounds: the study's verdicts are these):\n")
        print(looks_mod.section(found, rows, args.format))


def _standings(curve, built) -> None:
    print("\nWhere the arms stand by epoch (validation value accuracy, mean over seeds, of the runs compared; "
          "descriptive, no test per epoch):")
    for line in learning.standings(built.rows, curve):
        print(f"  {line}")


def _infill(args: InfillOptions) -> None:
    runs = presets.runs(args)
    table, notes, by = presets.infill(args, runs, used_only=args.slots == "used")
    used_only = args.slots == "used"
    beside = None
    if not used_only:  # the paper's Table 4 scores every masked number: its figures stand beside those
        numbers = paper.load()
        beside = [tuple(protocol.beside(str(paper.find(numbers, "table4", r["data.dataset"], r["solver"], r["variant"],
                                                       m) or "–"), protocol.of_row(runs, r, by))
                        for m in ("infill_acc", "perfect_match")) for r in table.iter_rows(named=True)]
    print(report.infill_table(table, by, args.format, beside, used_only=used_only))
    print()
    print(report.infill_footer(table, notes, args.slots == "used", args.resamples, args.rng_seed))


def _curve(args: CurveOptions) -> None:
    if args.over == "epoch":
        runs = presets.runs(args)
        curve, built, path = presets.epoch_curve(args, runs, args.arm, args.base, tuple(args.treatment),
                                                 tuple(args.by) or ("data.dataset", "solver"))
        print(learning.table(curve, args.format))
        _standings(curve, built)
        print()
        print(report.claim_lines(built.rows, args.format))
        print()
        print(report.footer(built.rows, built.notes))
        print(f"figure: {path}")
        return
    points, built, path = presets.curve(args, presets.runs(args), args.figure_path)
    print(report.curve_table(points, args.format))
    print("\nThe 95% CIs above are of each arm's accuracy (t over seeds; Wilson for one seed); the CIs below "
          "are of the difference Δ.\n")
    print(report.claim_lines(built.rows, args.format))
    print()
    print(report.footer(built.rows, built.notes))
    print(f"figure: {path}")


def _report(args: ReportOptions) -> None:
    path = paper_report.write(args)
    figure = path.with_name(paper_report.FIGURE)
    print(f"report: {path}" + (f"\nfigure: {figure}" if figure.exists() else ""))


def _optuna(args: OptunaOptions) -> None:
    from pathlib import Path

    opened = trials.load(args.root, args.experiment)
    complete = [t for t in opened.trials if t.state.name == "COMPLETE"]
    print(f"study {opened.study_name!r}: {len(opened.trials)} trials, {len(complete)} complete; "
          f"best: trial {opened.best_trial.number} ({opened.best_trial.user_attrs.get('trial', '-')}), "
          f"{opened.best_value:.4f}")
    print("\nbest per arm (the searcher's objective: each trial's best validation value accuracy)")
    for row in trials.best_per_arm(opened):
        params = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row["params"].items())
        print(f"  {row['arm']:<6} trial {row['number']:>3} ({row['trial']}): {row['value']:.4f}  {params}")
    out = Path(args.out) if args.out else (Path(args.root) / args.experiment if "://" not in args.root
                                           else Path(f"optuna-{args.experiment}"))
    written, skipped = trials.plots(opened, out)
    for path in written:
        print(f"figure: {path}")
    for line in skipped:
        print(f"no figure {line}")


def _study(args: StudyOptions, planner: study_report.Plan | None = None) -> None:
    if planner is None:  # the sweep file is read above analysis, which never imports the sweep code
        raise ValueError("analyze study reads its sweep file with psedual's sweep loader: run it as "
                         "`psedual analyze study ...`")
    path = study_report.write(args, planner)
    print(path.read_text(encoding="utf-8"))
    print(f"report: {path}")


COMMANDS: dict[str, tuple[type, Callable[..., None]]] = {
    "table1": (Table1Options, lambda o: _paper_table(o, "table1")),
    "table3": (Table3Options, lambda o: _paper_table(o, "table3")),
    "compare": (CompareOptions, _compare),
    "infill": (InfillOptions, _infill),
    "curve": (CurveOptions, _curve),
    "report": (ReportOptions, _report),
    "optuna": (OptunaOptions, _optuna),
    "study": (StudyOptions, _study),
    "leakage": (LeakageOptions, leakage.run),
}
"""Each `analyze` command: its options (`analysis.options`) and what it runs."""
SWEEP_READERS = ("study",)
"""The commands that read a sweep file: `run` hands them the planner `psedual analyze` passes."""


TAKES = {"margin": "a number of points of accuracy from 0.1 to 10, e.g. 0.45"}
"""An option's own words for what it takes, said when a value is refused instead of its type's."""

LIST_HINT = "a list option takes `--key+ VALUE`, repeated to add more, or `--key '[A, B]'`"


def parser() -> ArgumentParser:
    """`psedual analyze`'s parser: a sub-command per `COMMANDS` entry, its options generated from
    its config's fields."""
    top = ArgumentParser(prog="psedual analyze", description=__doc__, exit_on_error=False, default_env=False,
                         formatter_class=RawDescriptionHelpFormatter)
    commands = top.add_subcommands(dest="command", required=True)
    for name, (options, _) in COMMANDS.items():
        sub = ArgumentParser(prog=f"psedual analyze {name}", description=options.__doc__, exit_on_error=False,
                             default_env=False)
        sub.add_argument("--config", action="config", help="a YAML file of these options; options after it "
                         "override it")
        sub.add_class_arguments(options, nested_key=None, fail_untyped=True)
        commands.add_subcommand(name, sub, help=options.__doc__.splitlines()[0])
    return top


def parse(words: list[str]) -> tuple[str, AnalyzeOptions]:
    """The command `words` name (`compare --treatment+ gcn ...`) and its options; a jsonargparse
    ArgumentError if they do not parse, a ValueError if its config refuses them."""
    for key in LIST_OPTIONS:  # the last of two plain values would win, silently
        if words.count(f"--{key}") > 1:
            raise ValueError(f"--{key} given twice: add more with --{key}+ VALUE, or give --{key} '[A, B]'")
    top = parser()
    if words[:1] and words[0] in COMMANDS:  # a --config file that gives no options is named with what is wrong
        check_config_files(words[1:], f"psedual analyze {words[0]}",
                           top._subcommands_action.choices[words[0]]._option_string_actions)
    cfg = top.parse_args(words)
    options = COMMANDS[cfg.command][0]
    return cfg.command, options(**{f.name: cfg[cfg.command][f.name] for f in fields(options)})


def main(argv: list[str] | None = None, planner: study_report.Plan | None = None) -> int:
    """Run `analyze COMMAND OPTIONS` (`python -m analysis analyze ...`, or `psedual analyze ...`,
    which passes the `planner` that reads a sweep file's comparisons: `psedual.comparisons.study_plan`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] != ["analyze"]:
        print(f"usage: python -m analysis analyze {{{','.join(COMMANDS)}}} ...", file=sys.stderr)
        return 2
    try:
        command, options = parse(argv[1:])
    except ArgumentError as err:
        said = f"psedual analyze {argv[1]}" if argv[1:2] and argv[1] in COMMANDS else "psedual analyze"
        line = refusal(str(err), said, TAKES)
        listed = any(line.startswith((f"--{key} ", f"--{key}:")) for key in LIST_OPTIONS)
        print(f"{said}: error: {line}" + (f" ({LIST_HINT})" if listed else ""), file=sys.stderr)
        return 2
    except ERRORS as err:
        print(f"psedual analyze: error: {one_line(err)}", file=sys.stderr)
        return 2
    return run(command, options, planner)


def run(command: str, options: AnalyzeOptions, planner: study_report.Plan | None = None) -> int:
    """Run one command on its typed options, as `main` does once it has parsed them (the main job
    calls this with the comparisons it builds); a refusal is one line on stderr, and 2."""
    try:
        if command in SWEEP_READERS:
            COMMANDS[command][1](options, planner)
        else:
            COMMANDS[command][1](options)
    except ERRORS as err:
        print(f"psedual analyze: error: {one_line(err)}", file=sys.stderr)
        return 2
    return 0
