"""The README's tables that restate a registry, rendered from it: `make readme` rewrites them (and
docs/solvers.md's table of the solvers' published recipes and docs/analysis.md's verdict rule, `DOC_TABLES`).

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
from psedual.solvers import BUILT_IN


def _variants() -> list[str]:
    rows = [("`base`", "base", "(no reexamining module)")]
    rows += [(f"`{name}`", VARIANT_LABELS[name], entry.about) for name, entry in EXPRESSION_ENCODERS.items()]
    return _markdown(("variant", "label in tables", "the infiller reads the solver's expression with"), rows)


def _datasets() -> list[str]:
    rows = [(f"`{name}`", spec.source, spec.splits) for name, spec in DATASETS.items()]
    return _markdown(("name", "source", "splits"), rows)


def _solvers() -> list[str]:
    rows = [(f"`{name}`", _first_sentence(sys.modules[model.__module__].__doc__ or ""))
            for name, model in BUILT_IN.items()]  # a solver of another package is its own docs' business
    return _markdown(("solver", "what it is (its module's docstring)"), rows)


def _first_sentence(doc: str) -> str:
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    return re.split(r"(?<!\bal\.)(?<=\.)\s", paragraph, maxsplit=1)[0]  # "et al." ends no sentence


def _markdown(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = [header, tuple("---" for _ in header), *rows]
    return ["| " + " | ".join(cells) + " |" for cells in lines]


def _recipes() -> list[str]:
    from psedual.train.recipes import RECIPES

    rows = [(f"`{r.solver}`", f"`{s.key}`", f"`{s.scope}`", f"`{_value(s.value)}`", _source(s.source), s.note)
            for r in RECIPES.values() for s in r.settings]
    return _markdown(("solver", "setting", "data sets", "value", "source", "choice where the source is silent or "
                      "differs from the paper"), rows)


def _value(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _source(source: str) -> str:
    """`OWNER/REPO@COMMIT path:line` as a link to that line on GitHub."""
    repo_at, _, where = source.partition(" ")
    repo, _, commit = repo_at.partition("@")
    path, _, line = where.partition(":")
    anchor = f"#L{line}" if line.isdigit() else ""
    return f"[{repo} {where}](https://github.com/{repo}/blob/{commit}/{path}{anchor})"


def _verdict_rule() -> list[str]:
    from analysis.claims.verdicts import rule

    return [rule()]


def _verdict_table() -> list[str]:
    from analysis.claims.verdicts import rule_table

    return rule_table().splitlines()


TABLES: dict[str, Callable[[], list[str]]] = {"solvers": _solvers, "variants": _variants, "datasets": _datasets,
                                              "verdict-rule": _verdict_rule}
"""Table name (its markers' NAME) -> its rows, from the registry it restates: the README's (and the
verdict rule's short form, from analysis/claims/verdict_rule.md)."""
DOC_TABLES: dict[str, dict[str, Callable[[], list[str]]]] = {"docs/solvers.md": {"recipes": _recipes},
                                                             "docs/analysis.md": {"verdicts": _verdict_table}}
"""Another file's tables, by its path from the repository's root."""
_BLOCK = re.compile(r"(<!-- table:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /table:(?P=name) -->)", re.S)


def render(text: str, where: str = "README.md", tables: dict[str, Callable[[], list[str]]] | None = None) -> str:
    """`text` with every marked table replaced by its rendering; every table of `tables` (default: the
    README's) must be marked once."""
    tables = TABLES if tables is None else tables
    found = [m.group("name") for m in _BLOCK.finditer(text)]
    unknown = sorted(set(found) - set(tables))
    if unknown:
        raise ValueError(f"{where}: unknown table marker(s) {unknown}; known: {', '.join(tables)}")
    missing = [name for name in tables if found.count(name) != 1]
    if missing:
        raise ValueError(f"{where}: each of {missing} must be marked exactly once "
                         "(<!-- table:NAME --> ... <!-- /table:NAME -->)")
    return _BLOCK.sub(lambda m: m.group(1) + "\n".join(tables[m.group("name")]()) + "\n" + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    """Rewrite the files named (default: README.md and every `DOC_TABLES` file), each with its tables."""
    args = sys.argv[1:] if argv is None else argv
    for name in args or ["README.md", *DOC_TABLES]:
        path = Path(name)
        text = path.read_text(encoding="utf-8")
        new = render(text, str(path), DOC_TABLES.get(path.as_posix(), TABLES))
        if new != text:
            path.write_text(new, encoding="utf-8")
        print(f"{path}: {'rewritten' if new != text else 'already up to date'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
