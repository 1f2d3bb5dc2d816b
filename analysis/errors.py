"""What an `analyze` command may meet in tables it did not write, and how it says so: one line."""

from __future__ import annotations

import polars as pl

ERRORS = (ValueError, OSError, KeyError, TypeError, pl.exceptions.PolarsError)
"""What a command may meet in tables it did not write or that were cut short: each is reported as
one line naming it (GuardrailError is a ValueError)."""


def one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text if isinstance(err, ValueError) else f"{type(err).__name__}: {text}"
