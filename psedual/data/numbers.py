"""Exact numbers: how they are written in problem texts and how they are stored.

Every number is a `fractions.Fraction`, so 1/3 stays 1/3 and 0.1 + 0.2 is 0.3.
A number is stored as its canonical string (`canonical`), which `parse_number`
reads back to the same Fraction: integers as `12`, terminating decimals as
`0.125`, everything else as `p/q`.
"""

from __future__ import annotations

import re
from fractions import Fraction

# Written forms, most specific first. Chinese texts (Math23K) write fractions in
# parentheses, mixed numbers as 3(1/2) and glue percents to the number; English
# texts put `%` apart ("80 %"), and their equations then multiply by 0.01, so the
# English pattern must not swallow the percent sign.
_ZH_NUMBER = r"\d+\(\d+/\d+\)|\(\d+/\d+\)|\d+\.\d+%?|\d+%?"
_EN_NUMBER = r"^-?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.\d+|\d+/\d+|\d+)$"
NUMBER_PATTERNS = {"zh": re.compile(_ZH_NUMBER), "en": re.compile(_EN_NUMBER)}

_PLAIN = re.compile(r"[-+]?(\d+(?:\.\d*)?|\.\d+)([eE][-+]?\d+)?")
MAX_DECIMAL_EXPONENT = 100_000
_FRACTION = re.compile(r"\((\d+)/(\d+)\)|(\d+)/(\d+)")
_MIXED = re.compile(r"(\d+)\((\d+)/(\d+)\)")


class NumberError(ValueError):
    """A string that should be a number is not one."""


def parse_number(text: str) -> Fraction:
    """Read one written number exactly: `12`, `1,000`, `3.5`, `.5`, `2e-06`,
    `50%`, `(1/2)`, `1/2`, `3(1/2)`, or a canonical `p/q`."""
    s = text.strip()
    percent = s.endswith("%")
    if percent:
        s = s[:-1].strip()
    s = s.replace(",", "") if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", s) else s
    if m := _MIXED.fullmatch(s):
        whole, num, den = (int(g) for g in m.groups())
        if den == 0:
            raise NumberError(f"zero denominator in {text!r}")
        value = whole + Fraction(num, den)
    elif m := _FRACTION.fullmatch(s[1:] if s.startswith("-") else s):
        num, den = (int(g) for g in m.groups() if g is not None)
        if den == 0:
            raise NumberError(f"zero denominator in {text!r}")
        value = Fraction(num, den) * (-1 if s.startswith("-") else 1)
    elif m := _PLAIN.fullmatch(s):
        # Fraction("1e1000000000") would build a billion-digit integer before any check.
        if m.group(2) and abs(int(m.group(2)[1:])) > MAX_DECIMAL_EXPONENT:
            raise NumberError(f"exponent too large in {text!r}")
        value = Fraction(s)
    else:
        raise NumberError(f"not a number: {text!r}")
    return value / 100 if percent else value


def canonical(value: Fraction) -> str:
    """The stored form of a value; `parse_number(canonical(v)) == v`."""
    if value.denominator == 1:
        return str(value.numerator)
    den = value.denominator
    for p in (2, 5):
        while den % p == 0:
            den //= p
    if den != 1:
        return f"{value.numerator}/{value.denominator}"
    # A terminating decimal: scale to an integer and place the point.
    digits = 0
    scaled = value
    while scaled.denominator != 1:
        scaled *= 10
        digits += 1
    sign = "-" if scaled < 0 else ""
    body = str(abs(scaled.numerator)).rjust(digits + 1, "0")
    return f"{sign}{body[:-digits]}.{body[-digits:]}"


def find_numbers(token: str, language: str) -> list[re.Match[str]]:
    """The numbers written inside one text token: a Chinese word may hold one among
    other characters (`10cm` holds 10); an English token is a number or not at all
    (the tokenizer has already split numbers from words, and `mp3` is a word)."""
    return list(NUMBER_PATTERNS[language].finditer(token))
