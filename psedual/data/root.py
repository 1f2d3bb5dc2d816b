"""Where the benchmark files are: the data root every loader reads from."""

from __future__ import annotations

import os
from pathlib import Path

from psedual.data.files import DataFileError

_PACKAGE_DIR = Path(__file__).resolve().parent


def user_data_dir() -> Path:
    """The per-user data folder `psedual data fetch` fills by default:
    ${XDG_DATA_HOME:-~/.local/share}/psedual/data (a relative XDG_DATA_HOME is ignored, as the
    XDG spec says)."""
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / "psedual" / "data"


def find_data_root(explicit: str | os.PathLike | None = None) -> Path:
    """The benchmark folder: the argument, else $PSEDUAL_DATA, else `shared/data` beside the
    working directory or the checkout (CI clones the repository next to `shared/`), else the
    per-user folder that `psedual data fetch` fills (user_data_dir())."""
    if explicit is not None or os.environ.get("PSEDUAL_DATA"):
        # `~` expanded as `psedual data fetch` does for its destination: a quoted `~/data` was
        # fetched into the home folder and then not found there by every loader.
        root = Path(explicit if explicit is not None else os.environ["PSEDUAL_DATA"]).expanduser()
        if not root.is_dir():
            raise DataFileError(f"{root}: data root is not a folder (`psedual data fetch --dest {root}` fetches "
                                "the benchmarks into it)")
        return root
    checkout = _PACKAGE_DIR.parent.parent
    candidates = [Path.cwd() / "shared/data", Path.cwd().parent / "shared/data",
                  checkout / "shared/data", checkout.parent / "shared/data", user_data_dir()]
    for c in candidates:
        if c.is_dir():
            return c
    raise DataFileError(f"no data root found; looked in {[str(c) for c in candidates]}; `psedual data fetch` "
                        f"downloads the benchmarks into {candidates[-1]} (or set PSEDUAL_DATA to a folder holding them)")
