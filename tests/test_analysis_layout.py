"""analysis/'s own module lists (its README and its package docstring) name every module, each in
its room, and nothing else: they had drifted (issue 56: the README omitted 8 modules, the docstring 12)."""

from __future__ import annotations

import re
from pathlib import Path

import analysis
from psedual.layers import ROOMS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "analysis"


def _files(package: Path = PACKAGE) -> set[str]:
    """Every module under analysis/, as its path there (room `__init__`s, which say only what a room holds, aside)."""
    return {p.relative_to(package).as_posix() for p in package.rglob("*.py")} - {
        p.relative_to(package).as_posix() for p in package.rglob("__init__.py")}


def _readme(text: str) -> set[str]:
    """The modules the README lists: each `- \\`name.py\\`` item under its room's `### room/` heading."""
    listed, room = set(), None
    for line in text.splitlines():
        if line.startswith("### "):
            room = line.split()[1].removesuffix(":").removesuffix("/")
        elif line.startswith("- `") and room is not None:
            prefix = "" if room == "analysis" else room + "/"
            listed |= {prefix + name for name in re.findall(r"`([a-z_]+\.py)`", line.split(":")[0])}
    return listed


def _docstring(text: str) -> set[str]:
    """The modules the package docstring lists: its indented lines, each a path and what it holds."""
    return {line.split()[0] for line in text.splitlines() if line.startswith("    ") and line.split()[0].endswith(".py")}


def test_the_readme_and_the_docstring_list_every_module_in_its_room():
    files = _files()
    assert len(files) > 30  # the walk found the package
    readme = _readme((PACKAGE / "README.md").read_text())
    assert readme == files, f"README lists but no file: {sorted(readme - files)}; files not listed: {sorted(files - readme)}"
    docstring = _docstring(analysis.__doc__)
    assert docstring == files, f"docstring lists but no file: {sorted(docstring - files)}; not listed: {sorted(files - docstring)}"


def test_every_room_the_readme_names_is_a_room():
    rooms = {line.split()[1].removesuffix(":").removesuffix("/") for line in (PACKAGE / "README.md").read_text().splitlines()
             if line.startswith("### ")}
    assert {f"analysis.{r}" if r != "analysis" else r for r in rooms} == set(ROOMS)


def test_the_check_sees_a_module_missing_from_the_lists(tmp_path):
    (tmp_path / "claims").mkdir()
    for name in ("claims/claims.py", "claims/new_rule.py", "cli.py"):
        (tmp_path / name).write_text("")
    listed = _readme("### claims/: claims\n- `claims.py`: one claim\n### analysis/: top\n- `cli.py`: the command\n")
    assert _files(tmp_path) - listed == {"claims/new_rule.py"}
