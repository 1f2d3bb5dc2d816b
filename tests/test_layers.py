"""The package reads in one direction: every import of psedual or analysis code points down the layers."""

from __future__ import annotations

import ast
from pathlib import Path

from psedual.layers import LAYERS

ROOT = Path(__file__).parent.parent


def _layer(module: str) -> tuple[str, int]:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return ".".join(parts[:n]), LAYERS[".".join(parts[:n])]
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def _imports(root: Path = ROOT) -> list[tuple[str, str, str]]:
    """(importing module, imported module, where) for every import of psedual or analysis code
    under `root`, at the top of a file or inside a function alike."""
    out = []
    for path in sorted([*(root / "psedual").rglob("*.py"), *(root / "analysis").rglob("*.py")]):
        parts = list(path.relative_to(root).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            out += [(module, name, f"{path.relative_to(root)}:{node.lineno}") for name in names
                    if name.split(".")[0] in ("psedual", "analysis")]
    return out


def test_no_import_points_up_the_layers():
    edges = _imports()
    assert len(edges) > 100  # the walk found the package
    upward = [f"{where}: {src} ({_layer(src)[0]}) imports {dst} ({_layer(dst)[0]})"
              for src, dst, where in edges if _layer(dst)[1] > _layer(src)[1]]
    assert not upward, "\n".join(upward)


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
