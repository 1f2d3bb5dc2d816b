"""Which of the number-reading rules (`numbers`, docs/data.md "Numbers in the text") a
problem text needed: the loaders count, for every kept problem, the texts each rule
touched, and `data stats` prints the counts among its notes."""

from __future__ import annotations

import re

from psedual.data.numbers import GROUPED, SCIENTIFIC, UNIT_ALTERNATIVES

# Each rule as a pattern over the raw text (English) or its segmented words (Chinese). A
# cheap pattern that starts with a digit is tried first (`_DIGIT_*`), so most texts cost a
# few scans in C and `data stats` load times stay as they were.
_DIGIT_COMMA_DIGIT = re.compile(r"\d,\d")
_DIGIT_GROUP_DIGIT = re.compile(r"\d[,_]\d")
_GROUPED = re.compile(rf"(?<![\d,.])(?:{GROUPED})")
_DIGIT_E_DIGIT = re.compile(r"\d[eE][-+]?\d")
_SCIENTIFIC = re.compile(rf"(?<![\w.])(?:{SCIENTIFIC})")
_MIXED = re.compile(r"(?<![\w./])\d+ (\d+)/(\d+)(?![\d/.])")
_DIGIT_LETTER = re.compile(r"\d[A-Za-z]")
_EN_UNIT = re.compile(rf"(?<![\w.])[\d.,]*\d(?i:{UNIT_ALTERNATIVES})(?![^\W_])")
_ZH_GLUED_AFTER = re.compile(r"[\d)%][^\W\d_]")
_ZH_GLUED_BEFORE = re.compile(r"[\d(][^\W\d_]")  # on the reversed text: a letter, then a digit or `(`

THOUSANDS = "number rule: a thousands separator (1,000 or 1_000 is one number)"
COMMA = "number rule: a comma between digits that groups no thousands (3,5 is two numbers)"
SCIENTIFIC_NOTATION = "number rule: scientific notation (2e-3 is one number)"
MIXED = "number rule: a mixed number (2 1/2 is one number, 5/2)"
GLUED = "number rule: a number glued to a unit or word (10cm is 10, then cm)"


def rules_touched(text: str, language: str) -> list[str]:
    """The rules (their note names above) that reading `text`'s numbers used."""
    rules = []
    if _DIGIT_GROUP_DIGIT.search(text):
        if _GROUPED.search(text):
            rules.append(THOUSANDS)
        if _DIGIT_COMMA_DIGIT.search(_GROUPED.sub(" ", text)):
            rules.append(COMMA)
    plain = text
    if _DIGIT_E_DIGIT.search(text):
        plain = _SCIENTIFIC.sub(" ", text)  # `3e5` is no number glued to `e5`
        if plain != text:
            rules.append(SCIENTIFIC_NOTATION)
    if language == "en":
        if "/" in text and any(0 < int(m.group(1)) < int(m.group(2)) for m in _MIXED.finditer(text)):
            rules.append(MIXED)
        if _DIGIT_LETTER.search(plain) and _EN_UNIT.search(plain):
            rules.append(GLUED)
    elif _ZH_GLUED_AFTER.search(plain) or _ZH_GLUED_BEFORE.search(plain[::-1]):
        rules.append(GLUED)
    return rules
