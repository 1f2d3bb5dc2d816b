"""The number-reading rules (docs/data.md, "Numbers in the text"): what each written form
reads as, in English and in Chinese, and which rule `data stats` counts for it."""

from __future__ import annotations

from fractions import Fraction

import pytest

from psedual.data import number_rules
from psedual.data.build import parse_answer, text_tokens
from psedual.data.expr import tokenize_infix
from psedual.data.numbers import parse_number

F = Fraction

# (text, language, the numbers read, the rules counted)
CASES = [
    # thousands: a comma then exactly three digits groups thousands, in both languages
    ("He paid 1,000 dollars and 12,345.5 cents .", "en", [1000, F(24691, 2)], [number_rules.THOUSANDS]),
    ("共 有 1,000 元", "zh", [1000], [number_rules.THOUSANDS]),
    ("the number 12,3456 is odd", "en", [12, 3456], [number_rules.COMMA]),
    # no decimal comma: any other comma between digits separates two numbers
    ("points ( 0,4 ) and 3,5", "en", [0, 4, 3, 5], [number_rules.COMMA]),
    ("数 3,5 的 和", "zh", [3, 5], [number_rules.COMMA]),
    # scientific notation is one number, a sign after the `e` included
    ("it weighs 2e-3 kg ; 3e5 of them and 1.5E3 more", "en", [F(1, 500), 300000, 1500],
     [number_rules.SCIENTIFIC_NOTATION]),
    ("约 3e5 米", "zh", [300000], [number_rules.SCIENTIFIC_NOTATION]),
    # English mixed numbers, only with a proper fraction
    ("add 2 1/2 cups", "en", [F(5, 2)], [number_rules.MIXED]),
    ("scores 3 4/3 and 5 0/2", "en", [3, F(4, 3), 5, 0], []),
    # glued units: English only before a listed unit; Chinese inside any word
    ("a 5kg box , 10cm wide , 2.5KM away", "en", [5, 10, F(5, 2)], [number_rules.GLUED]),
    ("size 2d nails in the 8th week on an mp3", "en", [], []),
    ("身高 145cm 重 5千克", "zh", [145, 5], [number_rules.GLUED]),
]


@pytest.mark.parametrize(("text", "language", "numbers", "rules"), CASES, ids=[c[0] for c in CASES])
def test_numbers_read_from_text(text, language, numbers, rules):
    _, _, written = text_tokens(text, language)
    assert [parse_number(w) for w in written] == numbers
    assert number_rules.rules_touched(text, language) == rules


def test_glued_unit_is_the_next_token():
    tokens, num_pos, written = text_tokens("a 5kg box", "en")
    assert (tokens, num_pos, written) == (["a", "[NUM]", "kg", "box"], [1], ["5"])


@pytest.mark.parametrize(("answer", "value"), [("1,250", 1250), ("-1,250.5", F(-2501, 2)), ("1.5E3", 1500),
                                               ("2 1/2", F(5, 2))])
def test_answers_written_as_texts_write_numbers(answer, value):
    assert parse_answer(answer) == value


def test_an_exponent_after_a_number_of_the_text_stays_one_literal():
    assert tokenize_infix("1.5E3*2", ["1.5"]) == ["1.5E3", "*", "2"]
    assert tokenize_infix("1.5*2", ["1.5"]) == ["1.5", "*", "2"]
