"""The value of an expression: exact rational arithmetic over `Fraction` (floats only where
a power leaves the rationals), bounded so that no expression eats memory, and the tolerant
equality that compares a value with a dataset's answer."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from psedual.data.expr import SLOT, ExpressionError, Node, check_depth, from_prefix
from psedual.data.numbers import (
    NumberError,
    NumberTooLong,
    SizeLimitError,
    parse_number,
)

# Two values are equal when |a - b| <= VALUE_TOLERANCE * max(1, |b|): an absolute
# 1e-4 for answers below 1 and a relative 1e-4 above. Dataset answers are often
# rounded (MAWPS writes 500/6 as 83.33), and float-derived literals such as
# 0.3333333333333333 stand for 1/3; both must still count as equal.
VALUE_TOLERANCE = 1e-4
_TOLERANCE = Fraction(1, 10_000)
# Bounds that keep a hostile or broken expression from eating memory: 9^9^9 has
# hundreds of millions of digits.
MAX_EXPONENT = 1000
# Below Python's 4,300-digit int-to-str limit (10,000 bits is about 3,010 digits), so every
# value that passes can be written out by `numbers.canonical`.
MAX_BITS = 10_000

Value = Fraction | float


class InvalidValue(ValueError):
    """A well-formed expression without a finite real value (e.g. division by zero)."""


class ValueTooLarge(InvalidValue, SizeLimitError):
    """A literal over the numbers' size limit (`numbers.MAX_DIGITS`)."""


def evaluate(expression: Node | Sequence[str], numbers: Sequence[Fraction] = ()) -> Value:
    """The value of a tree or prefix sequence, exact where the arithmetic allows.

    Slots read `numbers`; constants are parsed from their canonical strings.
    Raises InvalidValue for division by zero, a slot with no number, a
    non-real power, or a value too large to hold; ExpressionError for a
    malformed prefix sequence or an unreadable literal.
    """
    node = check_depth(expression) if isinstance(expression, Node) else from_prefix(expression)
    return _eval(node, numbers)


def _eval(node: Node, numbers: Sequence[Fraction]) -> Value:
    if node.is_leaf:
        if m := SLOT.fullmatch(node.token):
            k = int(m.group(1))
            if k >= len(numbers):
                raise InvalidValue(f"{node.token} refers to a number the problem does not have ({len(numbers)} numbers)")
            return numbers[k]
        try:
            return _bounded(parse_number(node.token))
        except NumberTooLong as err:  # well-formed, only too large to hold
            raise ValueTooLarge(f"value too large: {err}") from err
        except NumberError as err:
            raise ExpressionError(str(err)) from err
    a, b = _eval(node.left, numbers), _eval(node.right, numbers)
    op = node.token
    try:
        if op == "+":
            value = a + b
        elif op == "-":
            value = a - b
        elif op == "*":
            value = a * b
        elif op == "/":
            if b == 0:
                raise InvalidValue("division by zero")
            value = a / b
        else:
            value = _power(a, b)
    except OverflowError as err:  # a Fraction beyond float range meeting a float
        raise InvalidValue("value too large") from err
    return _bounded(value)


def _bounded(value: Value) -> Value:
    if isinstance(value, Fraction) and max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_BITS:
        raise InvalidValue("value too large")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidValue("value too large")
    return value


def _power(base: Value, exponent: Value) -> Value:
    if abs(exponent) > MAX_EXPONENT:
        raise InvalidValue(f"exponent {float(exponent):g} too large")
    if base == 0 and exponent < 0:
        raise InvalidValue("division by zero (zero to a negative power)")
    if isinstance(exponent, Fraction) and exponent.denominator == 1 and isinstance(base, Fraction):
        bits = max(abs(base.numerator).bit_length(), base.denominator.bit_length())
        if bits * abs(int(exponent)) > MAX_BITS:
            raise InvalidValue("value too large")
        return base ** int(exponent)
    if float(exponent).is_integer():
        return float(base) ** int(exponent)
    if base < 0:
        raise InvalidValue("negative base with a fractional exponent has no real value")
    try:
        return float(base) ** float(exponent)
    except OverflowError as err:
        raise InvalidValue("value too large") from err


def values_equal(a: Value | None, b: Value | None) -> bool:
    """Tolerant equality (see VALUE_TOLERANCE); an invalid value equals nothing."""
    if a is None or b is None:
        return False
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return abs(a - b) <= _TOLERANCE * max(1, abs(b))
    try:
        fa, fb = float(a), float(b)
    except OverflowError:
        return False
    return abs(fa - fb) <= VALUE_TOLERANCE * max(1.0, abs(fb))


def try_evaluate(expression: Node | Sequence[str], numbers: Sequence[Fraction] = ()) -> Value | None:
    """`evaluate`, with None for an invalid or malformed expression (for metrics on model output)."""
    try:
        return evaluate(expression, numbers)
    except (InvalidValue, ExpressionError):
        return None
