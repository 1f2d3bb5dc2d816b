"""The `psedual` command line. Subcommands build typed configs and call the library."""

from __future__ import annotations

import argparse
import sys

from psedual.data.files import DataFileError
from psedual.data.registry import DATASETS
from psedual.storage import DEFAULT_ROOT

DEFAULT_STATS = [name for name, spec in DATASETS.items() if not spec.needs_user_path]
"""`data stats` without names: every benchmark (a user's own data needs its path)."""


def _data_stats(args: argparse.Namespace) -> None:
    from psedual.data.stats import stats

    names = args.datasets or DEFAULT_STATS
    print(stats(names, data_root=args.data_root, user_path=args.user_path, use_cache=not args.no_cache,
                min_constant_count=args.min_constant_count, drop_inconsistent=args.drop_inconsistent))


def _results_add(args: argparse.Namespace) -> None:
    from psedual.results.collect import add_run_folders

    runs = add_run_folders(args.folders, args.root, args.experiment)
    for r in runs.iter_rows(named=True):
        what = (f"{r['variant']} ({r['llm.model']}, prompts {r['llm.prompt_version']})" if r["llm.model"] else
                f"{r['solver']} {r['variant']} fusion {r['psedual.fusion']} seed {r['seed']}")
        print(f"{args.experiment}/{r['trial']}: {what}: test value {100 * r['test_value_acc']:.2f}%, "
              f"{r['epochs_done']} epochs")
    print(f"{runs.height} run(s) in {args.root}/{{runs,epochs,predictions}}/experiment={args.experiment}/")


def _test(args: argparse.Namespace) -> None:
    from psedual.train.trainer import test_run
    from psedual.typed_cli import summary

    print(summary(test_run(args.run_dir, args.device)))


def _solve(args: argparse.Namespace) -> None:
    from psedual.train.solve import solve

    infix, answer = solve(args.checkpoint, args.text, beam_size=args.beam_size)
    print(f"{infix} = {answer}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="psedual", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    data = commands.add_parser("data", help="benchmark data").add_subparsers(dest="data_command", required=True)
    st = data.add_parser("stats", help="per dataset and split: kept, dropped by reason, sizes, constants")
    st.add_argument("datasets", nargs="*", choices=[[]] + list(DATASETS), metavar="DATASET",
                    help=f"one or more of {', '.join(DATASETS)} (default: {' '.join(DEFAULT_STATS)})")
    st.add_argument("--data-root", help="benchmark folder (default: $PSEDUAL_DATA, a shared/data nearby, or "
                    "the per-user folder psedual data fetch fills)")
    st.add_argument("--user-path", help="MathQA's train.json, or the folder of a jsonl dataset")
    st.add_argument("--no-cache", action="store_true", help="process the sources again, ignoring the Parquet cache")
    st.add_argument("--min-constant-count", type=int, default=5, help="training problems a constant needs (default 5)")
    st.add_argument("--drop-inconsistent", action="store_true", help="the run views leave out training problems "
                    "whose gold disagrees with the answer (as --data.drop_inconsistent does in training)")
    st.set_defaults(run=_data_stats)

    from psedual.typed_cli import COMMANDS

    for words, command in COMMANDS.items():  # parsed by `typed_cli`: listed here for `psedual --help`
        if len(words) == 1:
            commands.add_parser(words[0], help=command.help, add_help=False)
        else:
            data.add_parser(words[1], help=command.help, add_help=False)

    results = commands.add_parser("results", help="the result tables").add_subparsers(dest="results_command",
                                                                                       required=True)
    ra = results.add_parser("add", help="add finished `psedual train` run folders to the result tables as the "
                            "trials of one experiment (then `psedual analyze` compares them)")
    ra.add_argument("folders", nargs="+", metavar="RUN_DIR", help="run folders (trial id: the folder's name)")
    ra.add_argument("--experiment", required=True, help="experiment name in the tables")
    ra.add_argument("--root", default=DEFAULT_ROOT, help=f"results storage: folder or URI (default ./{DEFAULT_ROOT})")
    ra.set_defaults(run=_results_add)

    te = commands.add_parser("test", help="test a trained run folder's best checkpoint (again), without training: "
                             "finishes a run whose test step failed")
    te.add_argument("run_dir", metavar="RUN_DIR", help="the folder `psedual train --out` wrote")
    te.add_argument("--device", help="where to evaluate (default: the run's config)")
    te.set_defaults(run=_test)

    so = commands.add_parser("solve", help="solve one problem with a trained checkpoint")
    so.add_argument("--checkpoint", required=True)
    so.add_argument("--beam-size", type=int, default=5)
    so.add_argument("text")
    so.set_defaults(run=_solve)

    from analysis.cli import add_commands  # torch-free: reads the results tables only

    add_commands(commands)
    return parser


def _typed(words: tuple[str, ...], command, argv: list[str]) -> int:
    """Run a command whose parser jsonargparse generates from a typed config."""
    from jsonargparse import ArgumentError

    from psedual.typed_cli import normalise

    parser = command.parser()
    try:
        cfg = parser.parse_args(normalise(argv[len(words):], parser._option_string_actions))
    except ArgumentError as err:
        print(f"psedual {' '.join(words)}: error: {err}\n(psedual {' '.join(words)} --help lists the options)",
              file=sys.stderr)
        return 2
    return command.run(cfg) or 0


def main(argv: list[str] | None = None) -> int:
    from analysis.cli import ERRORS, one_line
    from psedual.typed_cli import find

    argv = sys.argv[1:] if argv is None else list(argv)
    typed = find(argv)
    args = None if typed else build_parser().parse_args(argv)
    try:
        if typed:
            return _typed(*typed, argv)
        args.run(args)
    except (DataFileError, ValueError, FileNotFoundError) as err:  # checkpoint, vocabulary, guardrail errors too
        print(f"psedual: error: {err}", file=sys.stderr)
        return 2
    except ERRORS as err:  # `analyze` reads tables it did not write: any of these is one line, not a traceback
        if args is None or args.command != "analyze":
            raise
        print(f"psedual: error: {one_line(err)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
