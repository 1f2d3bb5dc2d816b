"""PseDual's reexamining module: number infilling from the solver's expression.

`Reexaminer` is imported on first use, so that `psedual.reexamine.config` (the expression
encoders' registry, which analysis reads for its labels) loads without torch.
"""

from psedual.reexamine.config import PseDualConfig

__all__ = ["PseDualConfig", "Reexaminer"]


def __getattr__(name: str):
    if name == "Reexaminer":
        from psedual.reexamine.module import Reexaminer

        return Reexaminer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
