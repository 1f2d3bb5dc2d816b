"""Which of the number-reading rules (`numbers`, docs/data.md "Numbers in the text") a
problem text needed: the loaders count, for every kept problem, the texts each rule
touched, and `data stats` prints the counts among its notes."""

from __future__ import annotations

import re

from psedual.data.numbers import GROUPED, SCIENTIFIC, UNITS

_UNIT = "|".join(sorted(UNITS, key=len, reverse=True))
# Each rule as a pattern over the raw text (English) or its segmented words (Chinese).
_GROUPED = re.compile(rf"(?<![\d,.])(?:{GROUPED})")
_COMMA = re.compile(r"\d,\d")
_SCIENTIFIC = re.compile(rf"(?<![\w.])(?:{SCIENTIFIC})")
_MIXED = re.compile(r"(?<![\w./])\d+ (\d+)/(\d+)(?![\d/.])")
_EN_UNIT = re.compile(rf"(?<![\w.])[\d.,]*\d(?i:{_UNIT})(?![^\W_])")
_ZH_GLUED = re.compile(r"[\d)%][^\W\d_]|[^\W\d_(][\d(]")

THOUSANDS = "number rule: a thousands separator (1,000 is one number)"
COMMA = "number rule: a comma between digits that groups no thousands (3,5 is two numbers)"
SCIENTIFIC_NOTATION = "number rule: scientific notation (2e-3 is one number)"
MIXED = "number rule: a mixed number (2 1/2 is one number, 5/2)"
GLUED = "number rule: a number glued to a unit or word (10cm is 10, then cm)"


def rules_touched(text: str, language: str) -> list[str]:
    """The rules (their note names above) that reading `text`'s numbers used."""
    rules = []
    if _GROUPED.search(text):
        rules.append(THOUSANDS)
    if _COMMA.search(_GROUPED.sub(" ", text)):
        rules.append(COMMA)
    if _SCIENTIFIC.search(text):
        rules.append(SCIENTIFIC_NOTATION)
    plain = _SCIENTIFIC.sub(" ", text)  # `3e5` is no number glued to `e5`
    if language == "en":
        if any(0 < int(m.group(1)) < int(m.group(2)) for m in _MIXED.finditer(text)):
            rules.append(MIXED)
        if _EN_UNIT.search(plain):
            rules.append(GLUED)
    elif _ZH_GLUED.search(plain):
        rules.append(GLUED)
    return rules
