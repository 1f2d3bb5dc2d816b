"""The `psedual` command line. Every command's options are generated from a typed config, named
as its fields are (`--data_root`, `--select_by`; dotted for nested configs: `--data.fold`):
`psedual.typed_cli`'s commands, and `analyze`'s (`analysis.cli`, which needs neither torch nor Ray)."""

from __future__ import annotations

import argparse
import os
import re
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
    args = flags(args, parser._option_string_actions)
    if command.defaults is not None:
        # a first pass for what the defaults depend on (without --print_config, which would print and
        # exit), then the command line again over them: what it gives overrides them
        defaults = command.defaults(parser.parse_args([a for a in args if not a.startswith("--print_config")]))
        if defaults:
            parser.set_defaults(defaults)
    return parser.parse_args(args)


_TYPE_WORDS = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "text", "NoneType": "null"}


def plain_error(text: str) -> str:
    """jsonargparse's refusal of a value as one line in the commands' style: the option, the value
    and what it takes, never a Python type's name (`--lr abc: expected a number`, `--solver gpt:
    expected one of gts, dns, ...`). Other errors are returned on one line as they are."""
    found = re.match(r'Parser key "([^"]+)":\s*(.*)', text, re.S)
    if not found:
        return " ".join(text.split())
    key, rest = found.groups()
    got = re.search(r"(?:Got value|Given value): (.*)", rest)
    value = f" {got.group(1).strip()}" if got else ""
    choices = re.search(r"Literal\[(.*?)\]", rest)
    if choices:
        what = "one of " + ", ".join(c.strip().strip("'\"") for c in choices.group(1).split(","))
    else:
        kinds = re.findall(r"Expected a <class '(\w+)'>", rest) or re.findall(r"<class '(\w+)'>", rest)
        what = " or ".join(dict.fromkeys(_TYPE_WORDS.get(k, k) for k in kinds)) or " ".join(rest.split())
    return f"--{key}{value}: expected {what}"


def _typed(words: tuple[str, ...], command, argv: list[str]) -> int:
    """Run a command whose parser jsonargparse generates from a typed config."""
    from jsonargparse import ArgumentError

    try:
        cfg = parse(command, argv[len(words):])
    except ArgumentError as err:
        print(f"psedual {' '.join(words)}: error: {plain_error(str(err))}\n(psedual {' '.join(words)} --help "
              "lists the options)", file=sys.stderr)
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

        return analyze(argv)
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
