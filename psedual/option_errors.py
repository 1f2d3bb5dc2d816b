"""What a command line's refusal says, for every `psedual` command (`analyze`'s too): one line
naming the option, the value and what it takes; a `--config` file is checked before the parser
reads it, so that an empty or broken file is named with what is wrong with it."""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection
from pathlib import Path

import yaml

_TYPE_WORDS = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "text", "NoneType": "null"}


class ConfigFileError(ValueError):
    """A `--config` file that cannot give options: missing, empty, not YAML, or not a mapping."""


def plain_error(text: str, takes: dict[str, str] | None = None) -> str:
    """jsonargparse's refusal of a value as one line in the commands' style: the option, the value
    and what it takes, never a Python type's name (`--lr abc: expected a number`, `--solver gpt:
    expected one of gts, dns, ...`). `takes`: an option's own words for what it takes, said instead
    of its type's (`margin`: "a number of accuracy points, e.g. 1"). Other errors are returned on
    one line as they are."""
    found = re.match(r'Parser key "([^"]+)":\s*(.*)', text, re.S)
    if not found:
        return " ".join(text.split())
    key, rest = found.groups()
    got = re.search(r"(?:Got value|Given value): (.*)", rest)
    value = f" {got.group(1).strip()}" if got else ""
    choices = re.search(r"Literal\[(.*?)\]", rest)
    if key in (takes or {}):
        what = takes[key]
    elif choices:
        what = "one of " + ", ".join(c.strip().strip("'\"") for c in choices.group(1).split(","))
    else:
        kinds = re.findall(r"Expected a <class '(\w+)'>", rest) or re.findall(r"<class '(\w+)'>", rest)
        what = " or ".join(dict.fromkeys(_TYPE_WORDS.get(k, k) for k in kinds)) or " ".join(rest.split())
    return f"--{key}{value}: expected {what}"


def refusal(text: str, said: str, takes: dict[str, str] | None = None) -> str:
    """A parser's refusal as one line: what was refused and what it takes (`plain_error`); an option
    the command lacks adds where the options are listed (`said`: the command, `psedual train`)."""
    line = plain_error(text, takes)
    unknown = "unrecognized arguments" in line or "is not accepted" in line
    return f"{line} ({said} --help lists the options)" if unknown else line


def check_config_files(args: list[str], command: str, options: Collection[str]) -> None:
    """Raise ConfigFileError, naming the file and what is wrong, for a `--config FILE` in `args`
    that cannot give options, or gives one the command lacks (`options`: its option strings,
    `--lr`); `command` (`psedual train`) names the one that writes such a file. A value that is
    no file but reads as a YAML mapping is the options themselves (`--config '{lr: 0.1}'`, which
    jsonargparse takes) and passes."""
    for i, arg in enumerate(args):
        value = args[i + 1] if arg == "--config" and i + 1 < len(args) else \
            arg.split("=", 1)[1] if arg.startswith("--config=") else None
        loaded = _check(value, command) if value is not None else None
        unknown = _unknown(loaded, options) if loaded is not None else []
        if unknown:
            names = [o[2:] for o in options if o.startswith("--") and not any(p.startswith(f"{o}.") for p in options)]
            said = [f"{key} (nearest: {', '.join(near)})" if (near := difflib.get_close_matches(key, names, n=2))
                    else key for key in unknown]
            raise ConfigFileError(f"--config {value}: {command} has no option {'; '.join(said)} "
                                  f"({command} --help lists the options)")


def _unknown(values: dict, options: Collection[str], prefix: str = "") -> list[str]:
    """The keys of `values` (nested mappings as dotted keys) that name no option."""
    out = []
    for name, value in values.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict) and any(o.startswith(f"--{key}.") for o in options):  # a group: `data:`
            out += _unknown(value, options, f"{key}.")
        elif f"--{key}" not in options:
            out.append(key)
    return out


def _check(value: str, command: str) -> dict | None:
    """The file's options, or None for options given inline."""
    path = Path(value)
    write = f"`{command} --print_config > {value}` writes one with every option"
    if not path.exists():
        if _inline_mapping(value):
            return None
        raise ConfigFileError(f"--config {value}: no such file ({write})")
    if path.is_dir():
        raise ConfigFileError(f"--config {value}: is a folder, not a YAML file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigFileError(f"--config {value}: cannot be read ({' '.join(str(err).split())})") from None
    if not text.strip():
        raise ConfigFileError(f"--config {value}: the file is empty ({write})")
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigFileError(f"--config {value}: not YAML{where}: {problem}") from None
    if loaded is None:
        raise ConfigFileError(f"--config {value}: holds only comments, no options ({write})")
    if not isinstance(loaded, dict):
        kind = "a list" if isinstance(loaded, list) else f"the value {loaded!r}"
        raise ConfigFileError(f"--config {value}: holds {kind}, not `option: value` lines ({write})")
    return loaded


def _inline_mapping(value: str) -> bool:
    try:
        return isinstance(yaml.safe_load(value), dict)
    except yaml.YAMLError:
        return False
