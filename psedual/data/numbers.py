"""Exact numbers: how they are written in problem texts and how they are stored.

Every number is a `fractions.Fraction`, so 1/3 stays 1/3 and 0.1 + 0.2 is 0.3.
A number is stored as its canonical string (`canonical`), which `parse_number`
reads back to the same Fraction: integers as `12`, terminating decimals as
`0.125` (up to MAX_DIGITS places), everything else as `p/q`.

Size limit: a number whose value, in lowest terms, has a numerator or a
denominator of more than MAX_DIGITS (100) digits is refused (`NumberTooLong`);
a written form with more than 3 * MAX_DIGITS digits is refused before it is
read, so Python's int-conversion limit (4,300 digits) is never reached. Every
value that passes has a canonical string that passes too.
"""

from __future__ import annotations

import re
from fractions import Fraction

# Written forms, most specific first. Chinese texts (Math23K) write fractions in
# parentheses, mixed numbers as 3(1/2) and glue percents to the number; English
# texts put `%` apart ("80 %"), and their equations then multiply by 0.01, so the
# English pattern must not swallow the percent sign. The rules for commas,
# mixed numbers, scientific notation and units are docs/data.md's "Numbers in
# the text" (and `number_rules`, which counts the texts each one touches):
# - a comma followed by exactly three digits (and then no digit) groups thousands:
#   `1,000` and `12,345.5` are one number, in both languages; so does an underscore
#   (`1_000`, as Python writes it), which would otherwise split it into 1 and 0;
# - any other comma between digits separates two numbers: `3,5` is 3 and 5 (there
#   is no decimal comma; MathQA writes lists and points so: `( 0,4 )`, `25 , 5,10 days`);
# - scientific notation `2e-3`, `3E5`, `1.5e3` is one number;
# - English mixed numbers `2 1/2` (a whole number, one space, a proper fraction) are
#   one number, 5/2 (the English tokenizer, `build.english_words`, decides);
# - a number glued to a word is read: Chinese reads it inside any word (`10cm`,
#   `5千克`); English only before a unit of `UNITS` (`5kg`, `10cm`), so `2d` nails,
#   the `8th` week and `mp3` stay words.
GROUPED = r"\d{1,3}(?:(?:,\d{3})+(?![\d,])|(?:_\d{3})+(?![\d_]))(?:\.\d+)?"
SCIENTIFIC = r"(?:\d+(?:\.\d+)?|\.\d+)[eE][-+]?\d+"
_ZH_FRACTIONS, _ZH_PLAIN = r"\d+\(\d+/\d+\)|\(\d+/\d+\)", r"\d+\.\d+%?|\d+%?"
_ZH_NUMBER = rf"{_ZH_FRACTIONS}|{GROUPED}%?|{SCIENTIFIC}|{_ZH_PLAIN}"
_EN_NUMBER = rf"^-?(?:{GROUPED}|{SCIENTIFIC}|\d+ \d+/\d+|\d*\.\d+|\d+/\d+|\d+)$"
NUMBER_PATTERNS = {"zh": re.compile(_ZH_NUMBER), "en": re.compile(_EN_NUMBER)}
# A Chinese word without a comma, an underscore or an `e` is read the same without those two alternatives, faster.
_ZH_WITHOUT_COMMA_OR_E = re.compile(f"{_ZH_FRACTIONS}|{_ZH_PLAIN}")
UNITS = ("mm", "cm", "dm", "m", "km", "mg", "g", "kg", "ml", "l", "lb", "lbs", "oz", "ft", "yd", "yds", "mi",
         "mph", "kmh", "kph", "h", "hr", "hrs", "min", "mins", "sec", "secs", "gal", "qt")
"""Units an English number may be glued to (`5kg`); matched whole and in any case."""
UNIT_ALTERNATIVES = "|".join(sorted(UNITS, key=len, reverse=True))
"""`UNITS` as a regex alternation, longest first (so `kmh` is not read as `km`)."""

_PLAIN = re.compile(r"[-+]?(\d+(?:\.\d*)?|\.\d+)([eE][-+]?\d+)?")
MAX_DIGITS = 100
# Written digits read at most: canonical forms of accepted values have up to 2 * MAX_DIGITS.
MAX_WRITTEN_DIGITS = 3 * MAX_DIGITS
_LIMIT = 10 ** MAX_DIGITS
_FRACTION = re.compile(r"\((\d+)/(\d+)\)|(\d+)/(\d+)")
_MIXED = re.compile(r"(\d+)\((\d+)/(\d+)\)")
_MIXED_SPACED = re.compile(r"(\d+) (\d+)/(\d+)")


class NumberError(ValueError):
    """A string that should be a number is not one."""


class SizeLimitError(ValueError):
    """Input over one of the data layer's documented size limits (loaders count it as a skip)."""


class NumberTooLong(NumberError, SizeLimitError):
    """A number with more digits than MAX_DIGITS."""


def quote(text: object, limit: int = 200) -> str:
    """`repr(text)`, shortened for messages: a hostile record may hold megabytes."""
    shown = repr(text)
    if len(shown) <= limit:
        return shown
    return f"{shown[:limit // 2]}...{shown[-20:]} ({len(str(text)):,} characters)"


def check_size(value: Fraction, text: object = None) -> Fraction:
    """`value`, or NumberTooLong when its numerator or denominator has more than MAX_DIGITS digits."""
    if abs(value.numerator) >= _LIMIT or value.denominator >= _LIMIT:
        shown = f" in {quote(text)}" if text is not None else ""
        raise NumberTooLong(f"number longer than {MAX_DIGITS} digits{shown}")
    return value


def parse_number(text: str) -> Fraction:
    """Read one written number exactly: `12`, `1,000`, `1_000`, `3.5`, `.5`, `2e-06`, `1.5E3`,
    `50%`, `(1/2)`, `1/2`, `3(1/2)`, `2 1/2`, or a canonical `p/q`."""
    s = text.strip()
    # Counted before any int() is built: a 5,000-digit string would hit Python's own limit.
    if len(s) > 2 * MAX_WRITTEN_DIGITS or sum(ch.isdigit() for ch in s) > MAX_WRITTEN_DIGITS:
        raise NumberTooLong(f"number longer than {MAX_DIGITS} digits: {quote(text)}")
    percent = s.endswith("%")
    if percent:
        s = s[:-1].strip()
    s = re.sub("[,_]", "", s) if re.fullmatch(r"-?\d{1,3}((,\d{3})+|(_\d{3})+)(\.\d+)?", s) else s
    if m := _MIXED.fullmatch(s) or _MIXED_SPACED.fullmatch(s):
        whole, num, den = (int(g) for g in m.groups())
        if den == 0:
            raise NumberError(f"zero denominator in {quote(text)}")
        value = whole + Fraction(num, den)
    elif m := _FRACTION.fullmatch(s[1:] if s.startswith("-") else s):
        num, den = (int(g) for g in m.groups() if g is not None)
        if den == 0:
            raise NumberError(f"zero denominator in {quote(text)}")
        value = Fraction(num, den) * (-1 if s.startswith("-") else 1)
    elif m := _PLAIN.fullmatch(s):
        # Fraction("1e1000000000") would build a billion-digit integer before any check.
        if m.group(2) and abs(int(m.group(2)[1:])) > MAX_WRITTEN_DIGITS:
            raise NumberTooLong(f"number longer than {MAX_DIGITS} digits: exponent too large in {quote(text)}")
        value = Fraction(s)
    else:
        raise NumberError(f"not a number: {quote(text)}")
    return check_size(value / 100 if percent else value, text)


def canonical(value: Fraction) -> str:
    """The stored form of a value; `parse_number(canonical(v)) == v`."""
    if value.denominator == 1:
        return str(value.numerator)
    den = value.denominator
    places = 0
    for p in (2, 5):
        power = 0
        while den % p == 0:
            den //= p
            power += 1
        places = max(places, power)
    # A decimal of more than MAX_DIGITS places (1/2**300) would be longer than its fraction.
    if den != 1 or places > MAX_DIGITS:
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
    if language == "zh" and not any(ch in token for ch in ",_eE"):
        return list(_ZH_WITHOUT_COMMA_OR_E.finditer(token))
    return list(NUMBER_PATTERNS[language].finditer(token))
