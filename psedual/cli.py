"""The `psedual` command line. Every command but `analyze` is generated from a typed config
(`psedual.typed_cli`); `analyze` is `analysis.cli`'s argparse."""

from __future__ import annotations

import argparse
import sys

from psedual.data.files import DataFileError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="psedual", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    groups = {"data": commands.add_parser("data", help="benchmark data"),
              "results": commands.add_parser("results", help="the result tables")}
    groups = {name: p.add_subparsers(dest=f"{name}_command", required=True) for name, p in groups.items()}

    from psedual.typed_cli import COMMANDS

    for words, command in COMMANDS.items():  # parsed by `typed_cli`: listed here for `psedual --help`
        (commands if len(words) == 1 else groups[words[0]]).add_parser(words[-1], help=command.help, add_help=False)

    from analysis.cli import add_commands  # torch-free: reads the results tables only

    add_commands(commands)
    return parser


def _typed(words: tuple[str, ...], command, argv: list[str]) -> int:
    """Run a command whose parser jsonargparse generates from a typed config."""
    from jsonargparse import ArgumentError

    from psedual.typed_cli import flags

    parser = command.parser()
    try:
        cfg = parser.parse_args(flags(argv[len(words):], parser._option_string_actions))
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
