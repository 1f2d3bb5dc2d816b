"""Golds mean what the data says (docs/data.md, "Gold expressions"): each rule with a known
answer, through the parser and evaluator and through a whole JSON Lines load."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from psedual.data.gold_rules import (
    GOLD_RULES,
    JUXTAPOSITION_REFUSED,
    MINUS_BEFORE_POWER,
    MIXED_ANSWER,
    NEGATED_NUMBER,
    RELATIVE_CHECK,
    SLOT_REFUSED,
    TEXT_MIXED_NUMBER,
    ZERO_DENOMINATOR,
    ZERO_ONLY_EXACT,
)
from psedual.data.cache import load_dataset
from psedual.data.expr import ExpressionError, parse_infix, to_prefix
from psedual.data.numbers import parse_number
from psedual.data.stats import stats
from psedual.data.value import InvalidValue, evaluate, values_equal


@pytest.mark.parametrize(("text", "value"), [
    ("-3^2", Fraction(-9)),          # unary minus binds looser than ^, as in mathematics
    ("-3^2+10", Fraction(1)),
    ("2*-3^2", Fraction(-18)),
    ("(-3)^2", Fraction(9)),         # brackets still say (-3)^2
    ("2^-1", Fraction(1, 2)),        # a minus in the exponent is the exponent's
    ("2^-3^2", Fraction(1, 512)),
    ("-2.0*-15.0", Fraction(30)),    # a signed number with no power stays one literal
    ("4^0.5-2", Fraction(0)),        # rational roots are exact
    ("(27/8)^(1/3)", Fraction(3, 2)),
    ("(8/27)^(-2/3)", Fraction(9, 4)),
])
def test_known_values(text, value):
    got = evaluate(parse_infix(text))
    assert isinstance(got, Fraction) and got == value


def test_minus_before_a_power_is_not_a_signed_literal():
    assert to_prefix(parse_infix("-3^2")) == ["-", "0", "^", "3", "2"]
    assert to_prefix(parse_infix("-3*2")) == ["*", "-3", "2"]


@pytest.mark.parametrize("text", ["4(1/2)", "2(3)", "(2)(3)", "(1+1)(2)"])
def test_juxtaposition_is_refused(text):
    with pytest.raises(ExpressionError, match=r"directly before '\(' at token \d+ of .*: write the product"):
        parse_infix(text)


def test_a_mixed_number_the_text_writes_stays_one():
    # Math23K's text writes 4(1/2): the equation's 4(1/2) is that number, 9/2
    assert evaluate(parse_infix("4(1/2)*2", atoms=["4(1/2)"])) == 9


@pytest.mark.parametrize("text", ["1/(4^0.5-2)", "1/((2^0.5)^2-2)", "1/(3^0.5*3^0.5-3)", "5/(2^(1/2)*2^(1/2)-2)"])
def test_a_denominator_zero_in_real_arithmetic_is_refused(text):
    with pytest.raises(InvalidValue, match="division by zero"):
        evaluate(parse_infix(text))


def test_the_answer_check_is_relative():
    assert not values_equal(Fraction(0), Fraction(8, 100_000))
    assert not values_equal(Fraction(8, 100_000), Fraction(0))
    assert not values_equal(Fraction(1, 10_000), Fraction(2, 10_000))
    assert values_equal(Fraction(500, 6), Fraction("83.33"))
    assert values_equal(2.0000000000000004, Fraction(2))


def test_underscore_groups_thousands():
    assert parse_number("1_000") == 1000 and parse_number("12_345.5") == Fraction(24691, 2)


def _load(tmp_path, rows):
    folder = tmp_path / "mine"
    folder.mkdir()
    lines = [json.dumps(r) for r in rows]
    (folder / "train.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "test.jsonl").write_text(json.dumps({"text": "Tom has 5 apples and eats 2.", "equation": "x=5-2",
                                                    "answer": 3}) + "\n")
    return load_dataset("jsonl", user_path=folder, use_cache=False)


def test_gold_rules_through_a_load(tmp_path):
    ds = _load(tmp_path, [
        {"id": "neg", "text": "It was 10 degrees, then -4 degrees more. How warm?", "equation": "x=10 -4", "answer": 6},
        {"id": "neg2", "text": "It was 10 degrees, then -4 degrees more. How warm?", "equation": "x=(10)-4", "answer": 6},
        {"id": "pow", "text": "Take 3 and 2 and 18.", "equation": "x=-3^2+18", "answer": 9},
        {"id": "mixed", "text": "A rope of 4 m is cut in 1 of 2 parts.", "equation": "x=4(1/2)", "answer": 4.5},
        {"id": "zero", "text": "Take 4 and 2 and 1.", "equation": "x=1/(4^0.5-2)", "answer": 1},
        {"id": "wrong", "text": "Take 8 and 0.00001.", "equation": "x=8*0.00001", "answer": 0},
        {"id": "under", "text": "A farm has 1_000 hens and sells 10.", "equation": "x=1000-10", "answer": 990},
    ])
    kept = {p.id.split(":")[1]: p for p in ds.problems}
    # `10 -4` and `(10)-4` over the text's -4: 10 + (-4), both slots from the text
    assert kept["neg"].numbers == ("10", "-4") and kept["neg"].prefix == ("+", "N0", "N1")
    assert kept["neg2"].prefix == ("+", "N0", "N1") and kept["neg2"].answer_agrees
    assert kept["pow"].answer_agrees and kept["pow"].prefix == ("+", "-", "0", "^", "N0", "N1", "N2")
    assert not kept["wrong"].answer_agrees  # 8e-5 is not 0
    assert kept["under"].numbers == ("1000", "10") and kept["under"].prefix == ("-", "N0", "N1")
    skipped = {s.origin.rsplit(":", 1)[1]: s for s in ds.skips if s.split == "train"}
    assert skipped["4"].reason == "unparseable equation" and "write the product" in skipped["4"].detail
    assert skipped["5"].reason == "invalid equation value" and "division by zero" in skipped["5"].detail
    assert ds.notes[NEGATED_NUMBER] == 2
    assert ds.notes[MINUS_BEFORE_POWER] == 1


def test_every_gold_rule_has_its_count_in_data_stats(tmp_path):
    """Each rule of docs/data.md's "Gold expressions" (and "Slots") is counted where it acted, the
    refusals too, and `data stats` prints every rule with its count, zeros included."""
    ds = _load(tmp_path, [
        {"id": "pow", "text": "Take 3 and 2 and 18.", "equation": "x=-3^2+18", "answer": 9},
        {"id": "jux", "text": "A rope of 4 m is cut in 1 of 2 parts.", "equation": "x=4(1/2)", "answer": 4.5},
        {"id": "jux2", "text": "Take 2 and 3.", "equation": "x=(2)(3)", "answer": 6},
        {"id": "zh", "language": "zh", "text": "一 根 绳子 长 3(1/2) 米 , 2 根 长 多少 米 ?", "equation": "x=3(1/2)*2",
         "answer": 7},
        {"id": "ans", "text": "Take 4 and 0.5.", "equation": "x=4+0.5", "answer": "4(1/2)"},
        {"id": "exact", "text": "Take 2 and 1.", "equation": "x=1/((2^0.5)^2-2)", "answer": 1},
        {"id": "zero", "text": "Take 2 and 1.", "equation": "x=1/(2-2)", "answer": 1},
        {"id": "neg", "text": "It was 10 degrees, then -4 degrees more. How warm?", "equation": "x=10 -4", "answer": 6},
        {"id": "rel", "text": "Take 8 and 0.00001.", "equation": "x=8*0.00001", "answer": 0},
        {"id": "slot", "text": "Take 2 and 3.", "prefix": "+ N0 N01", "answer": 5},
    ])
    expected = {MINUS_BEFORE_POWER: 1, JUXTAPOSITION_REFUSED: 2, TEXT_MIXED_NUMBER: 1, MIXED_ANSWER: 1,
                ZERO_DENOMINATOR: 2, ZERO_ONLY_EXACT: 1, NEGATED_NUMBER: 1, RELATIVE_CHECK: 1, SLOT_REFUSED: 1}
    assert set(expected) == set(GOLD_RULES)
    assert {k: ds.notes[k] for k in GOLD_RULES} == expected
    kept = {p.id.split(":")[1] for p in ds.problems if p.split == "train"}
    assert kept == {"pow", "zh", "ans", "neg", "rel"}
    out = stats(["jsonl"], user_path=str(tmp_path / "mine"), use_cache=False)
    line = next(x for x in out.splitlines() if "gold rules" in x)
    for rule, label in GOLD_RULES.items():
        assert f"{label}: {expected[rule]}" in line
    # A dataset where no rule acted still shows each, at 0
    clean = tmp_path / "clean"
    clean.mkdir()
    _load(clean, [{"id": "a", "text": "Take 2 and 3.", "equation": "x=2+3", "answer": 5}])
    line = next(x for x in stats(["jsonl"], user_path=str(clean / "mine"), use_cache=False).splitlines()
                if "gold rules" in x)
    assert all(f"{label}: 0" in line for label in GOLD_RULES.values())
