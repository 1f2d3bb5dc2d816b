"""The sweep files and the paper file that ship with the package (`psedual sweeps`), and where a
`--space search_spaces/NAME.yaml` is found: the path as given when it exists (a checkout, a file of
your own), else the shipped file of that name, so the commands the job prints work from a `pip
install` too.

In a checkout the files are `search_spaces/`; a built wheel carries them as
`psedual/search_spaces/` (a link to that folder, followed when the wheel is built).
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

SHIPPED = Path(__file__).parent / "search_spaces"
"""The shipped sweep files: the package's own folder (in a checkout, a link to `search_spaces/`)."""


def shipped() -> dict[str, Path]:
    """Every shipped sweep file by name (`default`, `paper`, ...)."""
    return {p.stem: p for p in sorted(SHIPPED.glob("*.yaml"))}


def find(space: str | Path) -> Path:
    """The sweep file `space` names: the path itself when it exists, else the shipped file of that
    name (`search_spaces/default.yaml`, `default.yaml` or `default`). FileNotFoundError: one line
    naming the valid names and `psedual sweeps`."""
    path = Path(space)
    if path.is_file():
        return path
    name = path.name.removesuffix(".yaml")
    files = shipped()
    if name in files and (path.parent == Path(".") or path.parent.name == SHIPPED.name):
        return files[name]
    raise FileNotFoundError(f"sweep file {space} not found; the shipped ones: {', '.join(files)} "
                            "(psedual sweeps lists them)")


def programs() -> dict[str, str]:
    """The programs of this interpreter's environment as a printed command names them (a bare
    `python` is another interpreter unless the venv is active): relative to the working folder
    when under it."""
    here, bin_dir = Path.cwd(), Path(sys.executable).parent

    def shown(path: Path) -> str:
        return str(path.relative_to(here)) if path.is_relative_to(here) else str(path)

    python = shown(Path(sys.executable))
    return {"python": python, "ray": shown(bin_dir / "ray") if (bin_dir / "ray").exists() else "ray",
            "psedual": shown(bin_dir / "psedual") if (bin_dir / "psedual").exists() else f"{python} -m psedual.cli"}


_COMMAND = re.compile(r"(?<![\w/.`-])(python tune\.py|python|psedual|pytest)(?= )")
"""A program's name where a sweep file's first line starts a command with it."""


def runnable(line: str) -> str:
    """A sweep file's command line as it runs here: each command starting with this environment's
    programs (`python tune.py` is `psedual tune`, which runs from a pip install too)."""
    run = programs()
    words = {"python tune.py": f"{run['psedual']} tune", "python": run["python"], "psedual": run["psedual"],
             "pytest": f"{run['python']} -m pytest"}
    return _COMMAND.sub(lambda found: words[found.group(1)], line)


def about(path: Path) -> str:
    """A sweep file's first comment line, the command that runs it (every YAML starts with one)."""
    first = path.read_text(encoding="utf-8").splitlines()[0] if path.stat().st_size else ""
    return first.removeprefix("#").strip()


@dataclass(frozen=True)
class SweepsConfig:
    """`psedual sweeps`: list the shipped sweep files, or copy one out to edit."""

    name: str | None = None
    """A shipped sweep file to copy out (`optuna`, `table1_mawps_seeds`, ...); none: list them all."""
    out: str = "."
    """Where the copy goes: a folder (the file keeps its name) or a file path ending in .yaml."""

    def __post_init__(self) -> None:
        if self.name is not None and self.name.removesuffix(".yaml") not in shipped():
            raise ValueError(f"no shipped sweep file {self.name!r}; valid: {', '.join(shipped())}")
        if not self.out:
            raise ValueError("out must be a folder or a .yaml path")


def run(config: SweepsConfig) -> list[str]:
    """The lines `psedual sweeps` prints: each file with its command, or where the copy went."""
    files = shipped()
    if config.name is None:
        width = max(map(len, files), default=0)
        return [f"{name:<{width}}  {runnable(about(path))}" for name, path in files.items()] + [
            runnable("copy one out to edit: psedual sweeps NAME --out DIR; run one as it is: psedual tune --space "
                     "NAME.yaml")]
    src = files[config.name.removesuffix(".yaml")]
    dst = Path(config.out)
    if dst.suffix != ".yaml":
        dst.mkdir(parents=True, exist_ok=True)
        dst = dst / src.name
    if dst.exists():
        raise ValueError(f"{dst} exists already: give another --out")
    shutil.copyfile(src, dst)
    return [f"{dst}: {about(src)}"]
