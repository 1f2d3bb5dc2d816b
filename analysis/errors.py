"""What an `analyze` command may meet in tables it did not write, and how it says so: one line."""

from __future__ import annotations

import polars as pl

ERRORS = (ValueError, OSError, KeyError, TypeError, pl.exceptions.PolarsError)
"""What a command may meet in tables it did not write or that were cut short: each is reported as
one line naming it (GuardrailError is a ValueError)."""


def one_line(err: BaseException) -> str:
    """The error as one line in every command's style: what and where, never a Python type's name
    (a KeyError's message is the key alone: it says which key is missing)."""
    text = " ".join(str(err).split())
    if isinstance(err, KeyError):
        return f"missing key {text}" if text else "a missing key"
    return text or "an unreadable table"
