"""PseDual's reexamining module: number infilling from the solver's expression."""

from psedual.reexamine.config import PseDualConfig
from psedual.reexamine.module import Reexaminer

__all__ = ["PseDualConfig", "Reexaminer"]
