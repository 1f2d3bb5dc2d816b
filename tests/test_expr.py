"""The expression module: infix parsing, prefix/tree forms, exact evaluation, and numbers."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psedual.data import expr
from psedual.data import value as value_module
from psedual.data.build import RecordError, equation_side, parse_answer
from psedual.data.expr import (
    ExpressionError,
    ExpressionTooLarge,
    Node,
    from_prefix,
    parse_infix,
    to_infix,
    to_prefix,
    tokenize_infix,
)
from psedual.data.numbers import NumberError, NumberTooLong, canonical, parse_number
from psedual.data.value import InvalidValue, evaluate, try_evaluate, values_equal


def prefix(text: str, atoms=()) -> list[str]:
    return to_prefix(parse_infix(text, atoms))


def value(text: str, numbers=()):
    return evaluate(parse_infix(text), numbers)


def leaves(node: Node) -> list[str]:
    return [node.token] if node.is_leaf else leaves(node.left) + leaves(node.right)


# --- known answers: parsing ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1+2*3", ["+", "1", "*", "2", "3"]),
        ("(1+2)*3", ["*", "+", "1", "2", "3"]),
        ("8-4-2", ["-", "-", "8", "4", "2"]),  # left-assoc
        ("8/4/2", ["/", "/", "8", "4", "2"]),  # left-assoc
        ("8-(4-2)", ["-", "8", "-", "4", "2"]),
        ("2^3^2", ["^", "2", "^", "3", "2"]),  # right-assoc
        ("(2^3)^2", ["^", "^", "2", "3", "2"]),
        ("2*3^2", ["*", "2", "^", "3", "2"]),  # ^ binds tighter than *
        ("[1+2]*3", ["*", "+", "1", "2", "3"]),  # square brackets are parentheses
        ("(11-1)*2", ["*", "-", "11", "1", "2"]),
        ("  3.5 *  N0 ", ["*", "3.5", "N0"]),
        ("1-(-(1/2))", ["-", "1", "-", "0", "/", "1", "2"]),  # unary minus is 0 - x
        ("2*-3", ["*", "2", "-3"]),  # a minus before a number is part of the literal
        ("-2.0*-15.0", ["*", "-2.0", "-15.0"]),
        ("-(2+3)", ["-", "0", "+", "2", "3"]),
    ],
)
def test_parse_infix_known_prefix(text, expected):
    assert prefix(text) == expected


def test_unary_minus_tree():
    tree = parse_infix("1-(-(1/2))")
    assert tree == Node("-", Node("1"), Node("-", Node("0"), Node("/", Node("1"), Node("2"))))
    assert evaluate(tree) == Fraction(3, 2)
    # With the fraction as an atom it stays one literal under the negation.
    assert prefix("1-(-(1/2))", atoms=["(1/2)"]) == ["-", "1", "-", "0", "(1/2)"]


@pytest.mark.parametrize(
    ("equation", "side"),
    [
        ("x=(11-1)*2", "(11-1)*2"),
        ("X=(3.0*7.0)", "(3.0*7.0)"),
        ("(3.0*7.0)=x", "(3.0*7.0)"),
        ("gallons = 5 + 2.5", "5 + 2.5"),
        ("5+2.5", "5+2.5"),
    ],
)
def test_equation_side_strips_the_unknown(equation, side):
    assert equation_side(equation) == side
    assert parse_infix(equation_side(equation)) == parse_infix(side)


@pytest.mark.parametrize(("equation", "why"), [("x=1=2", "2 '=' signs"), ("3=4", "no single unknown"),
                                               ("x=y", "no single unknown")])
def test_equation_side_rejects_unclear_equations(equation, why):
    with pytest.raises(RecordError, match=why) as info:
        equation_side(equation)
    assert info.value.reason == "unparseable equation"
    assert repr(equation) in str(info.value)


def test_equation_side_then_parse_known_answer():
    tree = parse_infix(equation_side("x=(24+24*150%)/(1-(1/6)-(1/6)*150%-(1/4))"), atoms=["(1/6)", "(1/4)", "150%"])
    assert evaluate(tree) == 180
    assert "(1/6)" in leaves(tree) and "150%" in leaves(tree)


# --- known answers: exact evaluation ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.1+0.2", Fraction(3, 10)),
        ("(1/3)*3", Fraction(1)),
        ("1/3+1/6", Fraction(1, 2)),
        ("2^10", Fraction(1024)),
        ("2^-2", Fraction(1, 4)),
        ("2^3^2", Fraction(512)),
        ("(2^3)^2", Fraction(64)),
        ("8-4-2", Fraction(2)),
        ("8/4/2", Fraction(1)),
        ("50%", Fraction(1, 2)),
        ("12.5%*80", Fraction(10)),
        ("3*(1/2)", Fraction(3, 2)),
        ("(1/2)", Fraction(1, 2)),
        ("2e-06*1000000", Fraction(2)),
        ("1-(-(1/2))", Fraction(3, 2)),
        ("2*-3", Fraction(-6)),
        ("-2.0*-15.0", Fraction(30)),
    ],
)
def test_exact_evaluation(text, expected):
    result = value(text)
    assert isinstance(result, Fraction)
    assert result == expected


def test_irrational_power_is_float():
    result = value("2^0.5")
    assert isinstance(result, float) and result == pytest.approx(1.41421356)
    assert value("4^0.5") == Fraction(2)  # a rational root stays exact (test_gold_rules)
    assert value("2^(1/2)*2^(1/2)") == pytest.approx(2.0)


def test_prefix_sequence_evaluates_like_tree():
    assert evaluate(["+", "N0", "*", "N1", "0.5"], [Fraction(1), Fraction(3)]) == Fraction(5, 2)


# --- tokenizer: atoms and slots ---------------------------------------------------------


def test_atoms_stay_one_token():
    assert tokenize_infix("24/(1-(1/6))", atoms=["(1/6)"]) == ["24", "/", "(", "1", "-", "(1/6)", ")"]
    assert tokenize_infix("24/(1-(1/6))") == ["24", "/", "(", "1", "-", "(", "1", "/", "6", ")", ")"]


def test_atom_is_not_a_piece_of_a_longer_number():
    # '1' inside '12', '1.5' or '1%' is not the atom '1'; '(1/6)' in '3(1/6)' is not the atom either
    # (and the parser refuses the juxtaposition: test_gold_rules).
    assert tokenize_infix("12+1", atoms=["1"]) == ["12", "+", "1"]
    assert tokenize_infix("1.5*21", atoms=["1"]) == ["1.5", "*", "21"]
    assert tokenize_infix("3(1/6)+(1/6)", atoms=["(1/6)"]) == ["3", "(", "1", "/", "6", ")", "+", "(1/6)"]
    assert tokenize_infix("1.5%+1.5", atoms=["1.5"]) == ["1.5%", "+", "1.5"]
    assert tokenize_infix("24/(1-(1/6))*12", atoms=["(1/6)", "1"]) == ["24", "/", "(", "1", "-", "(1/6)", ")", "*", "12"]


def test_slot_n12_stays_n12():
    assert tokenize_infix("N12+N2") == ["N12", "+", "N2"]
    tree = parse_infix("N12+N2")
    assert leaves(tree) == ["N12", "N2"]
    numbers = [Fraction(k) for k in range(13)]
    numbers[12] = Fraction(1000)
    assert evaluate(tree, numbers) == Fraction(1002)
    assert evaluate(["*", "N12", "N1"], numbers) == Fraction(1000)


# --- invalid values ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "numbers", "message"),
    [
        ("1/0", (), "division by zero"),
        ("5/(2-2)", (), "division by zero"),
        ("N0/N1", (Fraction(1), Fraction(0)), "division by zero"),
        ("0^-1", (), "zero to a negative power"),
        ("(-8)^(1/3)", (), "negative base"),
        ("10^100000", (), "too large"),
        ("(2^1000)^1000", (), "too large"),
        ("N3+1", (Fraction(1), Fraction(2)), "N3"),
    ],
)
def test_invalid_values(text, numbers, message):
    tree = parse_infix(text)
    with pytest.raises(InvalidValue, match=message):
        evaluate(tree, numbers)
    assert try_evaluate(tree, numbers) is None
    assert try_evaluate(to_prefix(tree), numbers) is None


def test_huge_fraction_times_float_is_invalid_value():
    tree = parse_infix("10^400*2^0.5")
    assert try_evaluate(tree) is None
    with pytest.raises(InvalidValue):
        evaluate(tree)


def test_negative_float_base_integer_exponent():
    assert value("(0-4^0.5)^2") == pytest.approx(4.0)
    assert value("(0-2)^(4^0.5)") == pytest.approx(4.0)


def test_huge_literal_is_invalid_value():
    with pytest.raises(InvalidValue, match="too large"):
        value("1e100000")


# --- malformed expressions -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(1+2", r"unbalanced '\('"),
        ("((1+2)*3", r"unbalanced '\('"),
        ("1+2)", r"unbalanced '\)'"),
        ("2 & 3", r"unknown token '& 3'"),
        ("5 apples", r"unknown token 'apples'"),
        ("", "empty expression"),
        ("   ", "empty expression"),
        ("3 +", "ends too early"),
        ("3 * * 4", r"unexpected '\*'"),
        ("()", r"unexpected '\)'"),
        ("3 4", "unexpected '4'"),
    ],
)
def test_malformed_infix(text, message):
    with pytest.raises(ExpressionError, match=message) as info:
        parse_infix(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        (["+", "1"], "ends too early"),
        ([], "ends too early"),
        (["+", "1", "2", "3"], "1 extra tokens"),
        (["1", "2"], "1 extra tokens"),
    ],
)
def test_malformed_prefix(tokens, message):
    with pytest.raises(ExpressionError, match=message):
        from_prefix(tokens)
    with pytest.raises(ExpressionError, match=message):
        evaluate(tokens)
    assert try_evaluate(tokens) is None


def test_unreadable_literal_in_prefix():
    with pytest.raises(ExpressionError, match="not a number"):
        evaluate(["+", "1", "apples"])


# --- values_equal ----------------------------------------------------------------------


def test_values_equal_tolerance():
    assert value_module.VALUE_TOLERANCE == 1e-4
    assert values_equal(83.33, Fraction(500, 6))
    assert values_equal(Fraction("83.33"), Fraction(500, 6))
    assert values_equal(0.3333333333333333, Fraction(1, 3))
    assert not values_equal(0.165, 0.16665)
    assert not values_equal(Fraction("0.165"), Fraction("0.16665"))
    # Relative at every size, with an absolute floor of 1e-12 (float noise of a zero).
    assert not values_equal(Fraction(0), Fraction(9, 100_000))
    assert values_equal(Fraction(9, 100_000), Fraction(90_001, 1_000_000_000))
    assert not values_equal(Fraction(9, 100_000), Fraction(91, 1_000_000))
    assert values_equal(0.0, 4e-16) and values_equal(Fraction(0), Fraction(1, 10**13))
    assert values_equal(100_000.0, 100_009.0)
    assert not values_equal(100_000.0, 100_011.0)


def test_values_equal_none_and_huge():
    assert not values_equal(None, None)
    assert not values_equal(None, Fraction(1))
    assert not values_equal(1.0, None)
    huge = Fraction(2**5000)
    assert values_equal(huge, huge)
    assert not values_equal(huge, 1.0)
    assert not values_equal(1.0, huge)
    assert not values_equal(huge, Fraction(1))


# --- to_infix round trips ----------------------------------------------------------------


a, b, c = Node("N0"), Node("N1"), Node("N2")


@pytest.mark.parametrize(
    "tree",
    [
        Node("-", a, Node("-", b, c)),
        Node("-", Node("-", a, b), c),
        Node("/", a, Node("*", b, c)),
        Node("/", a, Node("/", b, c)),
        Node("+", a, Node("+", b, c)),
        Node("*", a, Node("+", b, c)),
        Node("^", Node("^", a, b), c),
        Node("^", a, Node("^", b, c)),
        Node("^", Node("-", Node("0"), a), Node("2")),
        Node("-", Node("0"), Node("-", Node("0"), a)),
    ],
)
def test_to_infix_round_trip(tree):
    assert parse_infix(to_infix(tree)) == tree


def test_to_infix_round_trip_fraction_constant():
    tree = Node("/", Node("2"), Node("1/3"))
    # Infix has no fraction literal, so the constant comes back as the division 1/3:
    # the value survives, the tree shape cannot.
    assert to_infix(tree) == "2 / (1/3)"
    assert evaluate(parse_infix(to_infix(tree))) == evaluate(tree) == 6


# --- numbers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (Fraction(12), "12"),
        (Fraction(0), "0"),
        (Fraction(-7), "-7"),
        (Fraction(1, 8), "0.125"),
        (Fraction(-1, 8), "-0.125"),
        (Fraction(5, 2), "2.5"),
        (Fraction(1, 100), "0.01"),
        (Fraction(1, 3), "1/3"),
        (Fraction(-1, 3), "-1/3"),
        (Fraction(2, 7), "2/7"),
        (Fraction(22, 7), "22/7"),
    ],
)
def test_canonical_round_trip(number, text):
    assert canonical(number) == text
    assert parse_number(text) == number


@given(st.fractions(max_denominator=10_000))
@settings(max_examples=300, deadline=None, derandomize=True)
def test_canonical_round_trip_property(number):
    assert parse_number(canonical(number)) == number


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("1,000", Fraction(1000)),
        ("12,345.5", Fraction(24691, 2)),
        ("(1/2)", Fraction(1, 2)),
        ("1/2", Fraction(1, 2)),
        ("3(1/2)", Fraction(7, 2)),
        ("50%", Fraction(1, 2)),
        ("80 %", Fraction(4, 5)),
        (".5", Fraction(1, 2)),
        ("2e-06", Fraction(2, 1_000_000)),
        (" 7 ", Fraction(7)),
    ],
)
def test_parse_number_forms(text, number):
    assert parse_number(text) == number


@pytest.mark.parametrize("text", ["(1/2", "1/2)", "", "abc", "1,00", "1/0", "(3/0)", "3(1/0)", "1.2.3", "5 apples"])
def test_parse_number_rejects(text):
    with pytest.raises(NumberError) as info:
        parse_number(text)
    assert repr(text) in str(info.value)


def test_parse_number_rejects_double_minus():
    with pytest.raises(NumberError):
        parse_number("--1/2")


# --- properties ------------------------------------------------------------------------

_CONSTANTS = st.one_of(
    st.integers(0, 20).map(str),
    st.sampled_from(["0.5", "0.25", "1.5", "2.75", "0.01", "12.5"]),
)
_LEAVES = st.one_of(st.integers(0, 5).map(lambda k: Node(f"N{k}")), _CONSTANTS.map(Node))


def _extend(children):
    binary = st.tuples(st.sampled_from(["+", "-", "*", "/"]), children, children).map(lambda t: Node(*t))
    power = st.tuples(children, st.integers(0, 3)).map(lambda t: Node("^", t[0], Node(str(t[1]))))
    return st.one_of(binary, power)


TREES = st.recursive(_LEAVES, _extend, max_leaves=12)
NUMBERS = st.lists(st.fractions(min_value=-100, max_value=100, max_denominator=50), min_size=6, max_size=6)


def _outcome(tree, numbers):
    try:
        return evaluate(tree, numbers)
    except InvalidValue:
        return InvalidValue


@given(TREES)
@settings(max_examples=300, deadline=None, derandomize=True)
def test_infix_round_trip_property(tree):
    text = to_infix(tree)
    parsed = parse_infix(text)
    assert to_prefix(parsed) == to_prefix(tree), text
    assert parsed == tree
    assert from_prefix(to_prefix(tree)) == tree


@given(TREES, NUMBERS)
@settings(max_examples=300, deadline=None, derandomize=True)
def test_infix_round_trip_evaluates_the_same(tree, numbers):
    original = _outcome(tree, numbers)
    reparsed = _outcome(parse_infix(to_infix(tree)), numbers)
    via_prefix = _outcome(to_prefix(tree), numbers)
    assert type(original) is type(reparsed) is type(via_prefix)
    assert reparsed == original and via_prefix == original


@pytest.mark.parametrize("text", ["[1+2)", "(1+2]", "1+2]", "[(1+2])"])
def test_brackets_close_their_own_kind(text):
    with pytest.raises(ExpressionError, match="unbalanced"):
        parse_infix(text)


# --- size limits: refused with a reason, never a RecursionError or Python's digit limit -------


def test_nesting_up_to_the_limit_parses_and_one_more_is_refused():
    assert value("(" * expr.MAX_DEPTH + "1+2" + ")" * expr.MAX_DEPTH) == 3
    with pytest.raises(ExpressionTooLarge, match="nested deeper than 100"):
        parse_infix("(" * (expr.MAX_DEPTH + 1) + "1+2" + ")" * (expr.MAX_DEPTH + 1))
    assert value("+".join(["1"] * expr.MAX_DEPTH)) == expr.MAX_DEPTH  # a left-deep tree 100 levels deep
    with pytest.raises(ExpressionTooLarge, match=r"nested deeper than 100 \(101 levels\)"):
        parse_infix("+".join(["1"] * (expr.MAX_DEPTH + 1)))


@pytest.mark.parametrize(
    "text",
    ["(" * 5000 + "1" + ")" * 5000, "-" * 5000 + "1", "^".join(["1"] * 5000), "+".join(["1"] * 300),
     "1+" * 5000 + "1", "1" * 20_000],
    ids=["brackets", "unary minuses", "power chain", "flat sum", "too many tokens", "too many characters"],
)
def test_oversized_infix_is_refused_not_a_recursion_error(text):
    with pytest.raises(ExpressionTooLarge) as info:
        parse_infix(text)
    assert len(str(info.value)) < 400  # the message quotes a shortened text


def test_prefix_depth_and_length_limits():
    ok = ["+", "N0"] * (expr.MAX_DEPTH - 1) + ["N0"]  # 100 levels, right-deep
    assert evaluate(ok, [Fraction(1)]) == expr.MAX_DEPTH
    with pytest.raises(ExpressionTooLarge, match="nested deeper than 100"):
        from_prefix(["+", "N0"] * expr.MAX_DEPTH + ["N0"])
    with pytest.raises(ExpressionTooLarge, match="1,001 tokens"):
        from_prefix(["+"] * 500 + ["1"] * 501)
    assert try_evaluate(["+"] * 5000 + ["1"] * 5001) is None


def test_evaluating_a_deep_tree_built_elsewhere_is_refused():
    node = Node("1")
    for _ in range(5000):
        node = Node("+", node, Node("1"))
    with pytest.raises(ExpressionTooLarge):
        evaluate(node)
    assert expr.depth(node) == 5001


@pytest.mark.parametrize("text", ["1" * 5000, "1" * 101, f"1.{'0' * 100}1", "1e400", "1e-400", f"1/{'9' * 101}",
                                  "1" * 5000 + "%", "(1/" + "7" * 5000 + ")"])
def test_over_long_numbers_are_refused(text):
    with pytest.raises(NumberTooLong, match="longer than 100 digits") as info:
        parse_number(text)
    assert len(str(info.value)) < 400


def test_numbers_at_the_limit_round_trip():
    assert parse_number("9" * 100) == 10 ** 100 - 1
    small = Fraction(1, 2 ** 300)  # 300 decimal places: stored as a fraction, which reads back
    assert canonical(small) == f"1/{2 ** 300}" and parse_number(canonical(small)) == small
    assert canonical(Fraction(1, 8)) == "0.125"


def test_huge_values_stay_writable():
    # 2^-9000 passes the evaluator's bound; writing it as a decimal would need a 6,000-digit
    # int, past Python's limit. As an answer it is refused by size, not by a crash.
    tiny = value("((1/2)^1000)^9")
    assert canonical(tiny) == f"1/{2 ** 9000}"
    assert len(canonical(value("(2^1000)^9"))) == 2710  # the largest the evaluator lets through...
    with pytest.raises(InvalidValue, match="too large"):
        value("(2^1000)^15")  # ...and 4,516 digits would be past Python's int-to-str limit
    with pytest.raises(RecordError) as info:
        parse_answer("((1/2)^1000)^9")
    assert info.value.reason == "over a size limit"
    with pytest.raises(RecordError) as info:
        parse_answer(float("nan"))
    assert info.value.reason == "answer not a number" and "not a finite number" in info.value.detail
