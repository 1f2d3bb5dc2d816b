"""The value of an expression: exact rational arithmetic over `Fraction` (floats only where
a power leaves the rationals), bounded so that no expression eats memory, and the tolerant
equality that compares a value with a dataset's answer.

Zero is found exactly where it can be: a rational power with a rational result (`4^0.5`,
`(27/8)^(1/3)`) stays a Fraction, so `1/(4^0.5-2)` is a division by zero, not 1/4e-16. Where a
root is irrational the arithmetic is in floats, and a sum or difference within CANCELLATION
(relative to its larger term) of zero is zero: `1/((2^0.5)^2-2)` is refused too, where floats
would give 4.5e15."""

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

# A value a equals an answer b when |a - b| <= VALUE_TOLERANCE * |b| (relative), or
# |a - b| <= ABSOLUTE_FLOOR (what float noise leaves of a zero). Dataset answers are often
# rounded (MAWPS writes 500/6 as 83.33), and float-derived literals such as
# 0.3333333333333333 stand for 1/3; both must still count as equal. An absolute 1e-4 below
# 1 (as before) called 0 equal to 8e-5 and 0.00012 equal to 0.0002.
VALUE_TOLERANCE = 1e-4
ABSOLUTE_FLOOR = 1e-12
_TOLERANCE = Fraction(1, 10_000)
_FLOOR = Fraction(1, 10**12)
# A float sum or difference this small relative to its larger term is float noise of a zero
# (2^0.5 squared minus 2 is 4.4e-16, 2.2e-16 of 2).
CANCELLATION = 1e-12
# Roots tried exactly: a denominator of the exponent up to this (1/2, 1/3, ... 1/12).
_EXACT_ROOTS = 12
# Bounds that keep a hostile or broken expression from eating memory: 9^9^9 has
# hundreds of millions of digits.
MAX_EXPONENT = 1000
# Below Python's 4,300-digit int-to-str limit (10,000 bits is about 3,010 digits), so every
# value that passes can be written out by `numbers.canonical`.
MAX_BITS = 10_000

Value = Fraction | float


class InvalidValue(ValueError):
    """A well-formed expression without a finite real value (e.g. division by zero)."""


class DivisionByZero(InvalidValue):
    """A denominator (or a zero base under a negative power) that is zero in exact arithmetic."""


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
        if op in "+-":
            value = a + b if op == "+" else a - b
            if isinstance(value, float) and abs(value) <= CANCELLATION * max(abs(float(a)), abs(float(b))):
                value = 0.0
        elif op == "*":
            value = a * b
        elif op == "/":
            if b == 0:
                raise DivisionByZero("division by zero")
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
        raise DivisionByZero("division by zero (zero to a negative power)")
    if isinstance(exponent, Fraction) and exponent.denominator == 1 and isinstance(base, Fraction):
        bits = max(abs(base.numerator).bit_length(), base.denominator.bit_length())
        if bits * abs(int(exponent)) > MAX_BITS:
            raise InvalidValue("value too large")
        return base ** int(exponent)
    if float(exponent).is_integer():
        return float(base) ** int(exponent)
    if isinstance(base, Fraction) and isinstance(exponent, Fraction) and (root := _exact_root(base, exponent)):
        return root
    if base < 0:
        raise InvalidValue("negative base with a fractional exponent has no real value")
    try:
        return float(base) ** float(exponent)
    except OverflowError as err:
        raise InvalidValue("value too large") from err


def _exact_root(base: Fraction, exponent: Fraction) -> Fraction | None:
    """base ** exponent when it is rational (`4^(1/2)` is 2, `(8/27)^(2/3)` is 4/9), else None."""
    q = exponent.denominator
    if base < 0 or q > _EXACT_ROOTS:
        return None
    num, den = _int_root(base.numerator, q), _int_root(base.denominator, q)
    if num is None or den is None:
        return None
    root = Fraction(num, den)
    if max(root.numerator.bit_length(), root.denominator.bit_length()) * abs(exponent.numerator) > MAX_BITS:
        raise InvalidValue("value too large")
    return root ** exponent.numerator


def _int_root(n: int, q: int) -> int | None:
    """The integer r with r**q == n, or None (Newton's method on integers: exact at any size)."""
    if n < 2:
        return n
    r = 1 << -(-n.bit_length() // q)  # at least the root
    while True:
        smaller = ((q - 1) * r + n // r ** (q - 1)) // q
        if smaller >= r:
            break
        r = smaller
    return r if r**q == n else None


def values_equal(a: Value | None, b: Value | None) -> bool:
    """Whether value `a` equals answer `b` (see VALUE_TOLERANCE and ABSOLUTE_FLOOR: the tolerance is
    relative to `b`); an invalid value equals nothing."""
    if a is None or b is None:
        return False
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        gap = abs(a - b)
        return gap <= _TOLERANCE * abs(b) or gap <= _FLOOR
    try:
        fa, fb = float(a), float(b)
    except OverflowError:
        return False
    gap = abs(fa - fb)
    return gap <= VALUE_TOLERANCE * abs(fb) or gap <= ABSOLUTE_FLOOR


def float_value(node: Node, numbers: Sequence[Fraction] = ()) -> float | None:
    """What plain float arithmetic gives for a tree (None where it fails too): only to count the
    golds that exact arithmetic refuses and floats would have kept (`gold_rules.ZERO_ONLY_EXACT`).
    Trees come from the parser, so they are at most MAX_DEPTH deep."""
    if node.is_leaf:
        m = SLOT.fullmatch(node.token)
        try:
            return float(numbers[int(m.group(1))] if m else parse_number(node.token))
        except (IndexError, NumberError, OverflowError):
            return None
    a, b = float_value(node.left, numbers), float_value(node.right, numbers)
    if a is None or b is None:
        return None
    try:
        value = {"+": a + b, "-": a - b, "*": a * b}[node.token] if node.token in "+-*" else (
            a / b if node.token == "/" else a ** b)
    except (ZeroDivisionError, OverflowError):
        return None
    return value if isinstance(value, float) and math.isfinite(value) else None


def try_evaluate(expression: Node | Sequence[str], numbers: Sequence[Fraction] = ()) -> Value | None:
    """`evaluate`, with None for an invalid or malformed expression (for metrics on model output)."""
    try:
        return evaluate(expression, numbers)
    except (InvalidValue, ExpressionError):
        return None
