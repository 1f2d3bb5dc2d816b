"""The error of a sweep or paper file that cannot be run (its own module: the file's readers, its
values' checks and the recipe arms all raise it)."""

from __future__ import annotations


class SpecError(ValueError):
    """A sweep file that cannot be run; the message names the file and the key."""
