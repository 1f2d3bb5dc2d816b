"""A sweep or paper file read as it was written: UTF-8 text, then YAML in which no mapping gives a
key twice.

PyYAML keeps the last of two equal keys without a word, so a second `grid:` (or a second `seed:`
inside one) silently replaced the first: a sweep lost an arm and ran anyway. Here every mapping
of the file is checked before anything is built from it, and the error names the file, the
key's path and both lines. A merge key (`<<: *small`, as paper.yaml's profiles use) is YAML's
own way to take a mapping and override some of its keys: only keys written in the same mapping
count as given twice.
"""

from __future__ import annotations

from pathlib import Path

import yaml

MERGE_TAG = "tag:yaml.org,2002:merge"
"""The tag of a `<<` key: its mapping's keys may be overridden by the keys written beside it."""


class YamlFileError(ValueError):
    """A file that is not UTF-8 YAML with each key once; the message names the file and line."""


def read_text(path: Path) -> str:
    """The file's text; bytes that are not UTF-8 are a YamlFileError naming the file, the line and
    the byte (the locale's codec would name neither)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise YamlFileError(f"{path}:{line}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start}); "
                            "save the file as UTF-8") from None


def load(path: Path) -> object:
    """The file's YAML document (safe types only); a key given twice in one mapping, bytes that are
    not UTF-8 or text that is not YAML are a YamlFileError naming the file."""
    loader = yaml.SafeLoader(read_text(path))
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_keys(node, "", path, set())
        return loader.construct_document(node)
    except yaml.YAMLError as err:
        raise YamlFileError(f"{path}: not valid YAML ({err})") from None
    finally:
        loader.dispose()


def _check_keys(node: yaml.Node, where: str, path: Path, seen: set[int]) -> None:
    """Refuse a mapping (at any depth under `node`) that gives a key twice; `where` is the dotted
    path of `node` (`grid`, `arms[2]`), `seen` the nodes already walked (an alias repeats one)."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_keys(item, f"{where}[{i}]", path, seen)
    if not isinstance(node, yaml.MappingNode):
        return
    lines: dict[tuple[str, str], int] = {}
    for key, value in node.value:
        if key.tag == MERGE_TAG:
            _check_keys(value, where, path, seen)
            continue
        inner = f"{where}.{key.value}" if where else str(key.value)
        if isinstance(key, yaml.ScalarNode):
            # the key as YAML resolved it: `1` (an int) and `"1"` (a string) are two keys
            said, line = (key.tag, key.value), key.start_mark.line + 1
            if said in lines:
                both = f"twice on line {line}" if lines[said] == line else f"lines {lines[said]} and {line}"
                raise YamlFileError(f"{path}:{line}: {inner} given twice ({both}); YAML would keep only the last: "
                                    "give each key once")
            lines[said] = line
        _check_keys(value, inner, path, seen)
