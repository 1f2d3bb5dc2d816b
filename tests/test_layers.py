"""The package reads in one direction: every import of psedual or analysis code points down the layers,
and within analysis down its rooms; no module imports itself back through others (a circle).

`python tests/test_layers.py` prints the import graph's summary: its circles, its upward imports, and
how many imports go from each room of analysis to each other."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from psedual.layers import LAYERS, ROOMS

ROOT = Path(__file__).parent.parent


def _prefix(module: str, table: dict[str, int]) -> str | None:
    parts = module.split(".")
    return next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in table), None)


def _layer(module: str) -> tuple[str, int]:
    name = _prefix(module, LAYERS)
    if name is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return name, LAYERS[name]


def _room(module: str) -> str | None:
    """The room of an analysis module (`ROOMS`), None for one outside analysis."""
    return _prefix(module, ROOMS) if module.split(".")[0] == "analysis" else None


def _rank(module: str) -> tuple[int, int]:
    """Where a module stands: its layer, then, within analysis, its room."""
    room = _room(module)
    return _layer(module)[1], ROOMS[room] if room else 0


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in sorted([*(root / "psedual").rglob("*.py"), *(root / "analysis").rglob("*.py")]):
        parts = list(path.relative_to(root).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(root: Path = ROOT) -> list[tuple[str, str, str]]:
    """(importing module, imported module, where) for every import of psedual or analysis code
    under `root`, at the top of a file or inside a function alike. `from a.b import c` imports the
    module `a.b.c` where there is one (a room's module), else `a.b`."""
    modules = _modules(root)
    out = []
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                         for a in node.names]
            else:
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            out += [(module, name, f"{path.relative_to(root)}:{node.lineno}") for name in dict.fromkeys(names)
                    if name.split(".")[0] in ("psedual", "analysis")]
    return out


def _upward(edges: list[tuple[str, str, str]]) -> list[str]:
    """Each import that points up the layers, or up the rooms within analysis."""
    return [f"{where}: {src} ({_room(src) or _layer(src)[0]}) imports {dst} ({_room(dst) or _layer(dst)[0]})"
            for src, dst, where in edges if _rank(dst) > _rank(src)]


def _circles(edges: list[tuple[str, str, str]]) -> list[list[str]]:
    """The import graph's circles: its strongly connected components of more than one module (scipy's)."""
    names = sorted({m for s, d, _ in edges for m in (s, d)})
    index = {m: i for i, m in enumerate(names)}
    pairs = {(index[s], index[d]) for s, d, _ in edges if s != d}
    rows, cols = zip(*pairs) if pairs else ((), ())
    graph = csr_matrix((np.ones(len(pairs)), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(graph, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for name, label in zip(names, labels):
        groups.setdefault(int(label), []).append(name)
    return sorted(g for g in groups.values() if len(g) > 1)


def _room_counts(edges: list[tuple[str, str, str]]) -> dict[tuple[str, str], int]:
    """How many imports go from each room of analysis to each (its own included)."""
    counts: dict[tuple[str, str], int] = {}
    for src, dst, _ in edges:
        if _room(src) and _room(dst):
            counts[_room(src), _room(dst)] = counts.get((_room(src), _room(dst)), 0) + 1
    return counts


def summary(root: Path = ROOT) -> str:
    """The import graph in a few lines: what the layer tests assert, for reading."""
    edges = _imports(root)
    counts = _room_counts(edges)
    rooms = sorted(ROOMS, key=ROOMS.get)
    lines = [f"{len({s for s, _, _ in edges})} modules import psedual or analysis code: {len(edges)} imports, "
             f"{sum(counts.values())} of them between analysis modules",
             f"circles: {_circles(edges) or 'none'}", f"upward imports: {_upward(edges) or 'none'}",
             "analysis imports, from room (row) to room (column):",
             "  " + " ".join(f"{r.removeprefix('analysis.'):>9}" for r in ["", *rooms])]
    lines += ["  " + f"{r.removeprefix('analysis.'):>9} " + " ".join(f"{counts.get((r, d), 0):>9}" for d in rooms)
              for r in rooms]
    return "\n".join(lines)


def test_no_import_points_up_the_layers():
    edges = _imports()
    assert len(edges) > 100  # the walk found the package
    print(summary())  # shown with `pytest -s`; `python tests/test_layers.py` prints it too
    assert not _upward(edges), "\n".join(_upward(edges))


def test_the_import_graph_has_no_circles():
    circles = _circles(_imports())
    assert not circles, f"modules that import each other (through others or directly): {circles}"


def test_the_check_sees_a_circle_and_a_room_imported_upward(tmp_path):
    # a probe layout: the tables room imports the claims room, which imports it back
    for name, text in (("tables/low.py", "from analysis.claims import high\n"),
                       ("claims/high.py", "from analysis.tables import low\n")):
        (tmp_path / "analysis" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "analysis" / name).write_text(text)
    edges = _imports(tmp_path)
    assert _circles(edges) == [["analysis.claims.high", "analysis.tables.low"]]
    assert _upward(edges) == ["analysis/tables/low.py:1: analysis.tables.low (analysis.tables) imports "
                              "analysis.claims.high (analysis.claims)"]


def test_every_analysis_module_sits_in_a_room():
    # a new room folder must be added to ROOMS: else its modules would fall in the top room unchecked
    folders = {p.parent.relative_to(ROOT).as_posix().replace("/", ".") for p in (ROOT / "analysis").rglob("*.py")}
    assert folders == set(ROOMS), folders ^ set(ROOMS)


APART = {"psedual.results": "psedual.tune", "analysis": "psedual.tune"}
"""Beside the layers: results and analysis read finished runs and never need the sweep code (nor Ray)."""


def _crossings(edges: list[tuple[str, str, str]]) -> list[str]:
    return [f"{where}: {src} imports {dst}" for src, dst, where in edges for low, high in APART.items()
            if _layer(src)[0] == low and (dst == high or dst.startswith(high + "."))]


def test_results_and_analysis_import_no_sweep_code():
    assert not _crossings(_imports()), "\n".join(_crossings(_imports()))


def test_the_check_sees_results_import_the_sweep(tmp_path):
    bad = tmp_path / "psedual" / "results" / "_sweep_probe.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from psedual.tune.space import make_config\n")
    assert _crossings(_imports(tmp_path)) == ["psedual/results/_sweep_probe.py:1: psedual.results._sweep_probe "
                                              "imports psedual.tune.space"]


def _readme_layout() -> list[str]:
    """The psedual modules the README's Layout block lists under `psedual/`, in its order."""
    block = (ROOT / "README.md").read_text().split("\n## Layout\n", 1)[1].split("```")[1]
    names = []
    for line in block.splitlines():
        if line.startswith("  ") and not line.startswith("   "):
            names += ["psedual." + word.removesuffix(".py").removesuffix("/").replace("/", ".")
                      for word in line.split("   ")[0].split()]
    return names


def test_the_readme_lists_the_layers_in_their_order():
    listed = _readme_layout()
    assert sorted(listed) == sorted(k for k in LAYERS if k.startswith("psedual.")), listed
    assert [LAYERS[m] for m in listed] == sorted(LAYERS[m] for m in listed), listed


def test_the_check_sees_an_upward_import(tmp_path):
    # the walk must catch an import written inside a function, as the lazy ones are; the probe
    # sits in a copy of the layout under tmp_path, never in the package itself
    bad = tmp_path / "psedual" / "data" / "_upward_probe.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("def f():\n    from psedual.train.trainer import train\n    return train\n")
    edges = [(s, d) for s, d, _ in _imports(tmp_path) if s == "psedual.data._upward_probe"]
    assert edges == [("psedual.data._upward_probe", "psedual.train.trainer")]
    assert _layer(edges[0][1])[1] > _layer(edges[0][0])[1]


if __name__ == "__main__":
    print(summary())
