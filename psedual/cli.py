"""The `psedual` command line. Every command's options are generated from a typed config, named
as its fields are (`--data_root`, `--select_by`; dotted for nested configs: `--data.fold`):
`psedual.typed_cli`'s commands, and `analyze`'s (`analysis.cli`, which needs neither torch nor Ray)."""

from __future__ import annotations

import argparse
import os
import sys

from psedual.data.files import DataFileError
from psedual.option_errors import ConfigFileError, check_config_files, refusal


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="psedual", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    groups = {"data": commands.add_parser("data", help="benchmark data"),
              "results": commands.add_parser("results", help="the result tables")}
    groups = {name: p.add_subparsers(dest=f"{name}_command", required=True) for name, p in groups.items()}

    from psedual.typed_cli import COMMANDS

    for words, command in COMMANDS.items():  # parsed by `typed_cli`: listed here for `psedual --help`
        (commands if len(words) == 1 else groups[words[0]]).add_parser(words[-1], help=command.help, add_help=False)

    from analysis.cli import COMMANDS as ANALYZE  # torch-free: reads the results tables only

    analyze = commands.add_parser("analyze", help="tables, claims and figures from the results tables", add_help=False)
    analyze = analyze.add_subparsers(dest="analyze_command")
    for name, (options, _) in ANALYZE.items():  # parsed by `analysis.cli`: listed here for `psedual --help`
        analyze.add_parser(name, help=options.__doc__.splitlines()[0], add_help=False)
    return parser


def parse(command, args: list[str]):
    """A generated command's options parsed from `args` (the words after the command's name)."""
    from psedual.typed_cli import flags

    parser = command.parser()
    check_config_files(args, parser.prog, parser._option_string_actions)
    args = flags(args, parser._option_string_actions)
    if command.defaults is not None:
        # a first pass for what the defaults depend on (without --print_config, which would print and
        # exit; unchecked, so that a required option such as train's --out, which --print_config
        # does without, is not asked for yet), then the command line again over them: what it gives
        # overrides them, and that pass checks everything
        defaults = command.defaults(parser.parse_args([a for a in args if not a.startswith("--print_config")],
                                                      _skip_validation=True))
        if defaults:
            parser.set_defaults(defaults)
    return parser.parse_args(args)


def _typed(words: tuple[str, ...], command, argv: list[str]) -> int:
    """Run a command whose parser jsonargparse generates from a typed config."""
    from jsonargparse import ArgumentError

    said = f"psedual {' '.join(words)}"
    try:
        cfg = parse(command, argv[len(words):])
    except (ArgumentError, ConfigFileError) as err:
        print(f"{said}: error: {refusal(str(err), said)}", file=sys.stderr)
        return 2
    return command.run(cfg) or 0


QUIET_BARS = {"HF_HUB_DISABLE_PROGRESS_BARS": "1"}
"""Off a terminal, third-party progress bars (transformers' weight loading, which reads the Hub's
switch when imported) would fill a log with carriage returns: turned off unless the user set them."""


def main(argv: list[str] | None = None) -> int:
    from psedual.typed_cli import find

    if not sys.stderr.isatty():
        for key, value in QUIET_BARS.items():
            os.environ.setdefault(key, value)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["analyze"]:
        from analysis.cli import main as analyze
        from psedual.comparisons import study_plan  # `analyze study` reads a sweep file: analysis never imports sweep code

        return analyze(argv, planner=study_plan)
    typed = find(argv)
    if not typed:
        build_parser().parse_args(argv)  # `psedual --help`, or an unknown command's usage error
        return 2
    try:
        return _typed(*typed, argv)
    except (DataFileError, ValueError, FileNotFoundError) as err:  # checkpoint, vocabulary, data errors too
        print(f"psedual: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
