"""The README's tables that restate a registry, rendered from it: `make readme` rewrites them.

Each sits between `<!-- table:NAME -->` and `<!-- /table:NAME -->`. A test fails while the README
differs from what this renders, so a new solver, encoder or dataset needs its registry entry and then
`make readme`, never a hand-edited row.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from psedual.data.registry import DATASETS
from psedual.reexamine.config import EXPRESSION_ENCODERS, VARIANT_LABELS
from psedual.solvers import SOLVERS


def _variants() -> list[str]:
    rows = [("`base`", "base", "(no reexamining module)")]
    rows += [(f"`{name}`", VARIANT_LABELS[name], entry.about) for name, entry in EXPRESSION_ENCODERS.items()]
    return _markdown(("variant", "label in tables", "the infiller reads the solver's expression with"), rows)


def _datasets() -> list[str]:
    rows = [(f"`{name}`", spec.source, spec.splits) for name, spec in DATASETS.items()]
    return _markdown(("name", "source", "splits"), rows)


def _solvers() -> list[str]:
    rows = [(f"`{name}`", _first_sentence(sys.modules[model.__module__].__doc__ or ""))
            for name, model in SOLVERS.items()]
    return _markdown(("solver", "what it is (its module's docstring)"), rows)


def _first_sentence(doc: str) -> str:
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    return re.split(r"(?<!\bal\.)(?<=\.)\s", paragraph, maxsplit=1)[0]  # "et al." ends no sentence


def _markdown(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = [header, tuple("---" for _ in header), *rows]
    return ["| " + " | ".join(cells) + " |" for cells in lines]


TABLES: dict[str, Callable[[], list[str]]] = {"solvers": _solvers, "variants": _variants, "datasets": _datasets}
"""Table name (its markers' NAME) -> its rows, from the registry it restates."""
_BLOCK = re.compile(r"(<!-- table:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /table:(?P=name) -->)", re.S)


def render(text: str, where: str = "README.md") -> str:
    """`text` with every marked table replaced by its rendering; every table must be marked once."""
    found = [m.group("name") for m in _BLOCK.finditer(text)]
    unknown = sorted(set(found) - set(TABLES))
    if unknown:
        raise ValueError(f"{where}: unknown table marker(s) {unknown}; known: {', '.join(TABLES)}")
    missing = [name for name in TABLES if found.count(name) != 1]
    if missing:
        raise ValueError(f"{where}: each of {missing} must be marked exactly once "
                         "(<!-- table:NAME --> ... <!-- /table:NAME -->)")
    return _BLOCK.sub(lambda m: m.group(1) + "\n".join(TABLES[m.group("name")]()) + "\n" + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0] if args else "README.md")
    text = path.read_text(encoding="utf-8")
    new = render(text, str(path))
    if new != text:
        path.write_text(new, encoding="utf-8")
    print(f"{path}: {'rewritten' if new != text else 'already up to date'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
