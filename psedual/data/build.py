"""From a source record's pieces to a `Problem`: the rules every loader shares.

How an equation's literals become number slots: a literal whose value equals
a number of the text (exactly, or within MATCH_TOLERANCE for float-printed
values such as 0.3333333333333333 for 1/3) becomes that number's slot; when the
value occurs several times in the text, the first occurrence is used. Every
other literal is a constant, stored canonically. Which constants a solver may
produce is decided later, from the training split only (`vocab.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fractions import Fraction

from psedual.data.expr import (
    MATCH_TOLERANCE,
    SLOT,
    ExpressionError,
    InvalidValue,
    Node,
    evaluate,
    from_prefix,
    parse_infix,
    to_prefix,
    values_equal,
)
from psedual.data.numbers import NumberError, canonical, find_numbers, parse_number
from psedual.data.record import NUM_TOKEN, Problem

# English tokens: a word that mixes letters and digits (`mp3`, `2d`, `h8`: not a
# quantity), a number (with its sign when `-` stands alone before it: "-2 , -15"),
# a run of letters, or any other single visible character.
_EN_TOKEN = re.compile(
    r"[^\W\d_]+\d[^\W_]*|\d+[^\W\d_][^\W_]*"
    r"|(?:(?<![\w.)])-)?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.\d+|\d+/\d+|\d+)"
    r"|[^\W\d_]+|\S")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


class RecordError(ValueError):
    """One source record that cannot become a Problem; loaders turn it into a counted Skip."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def split_tokens(words: Sequence[str], language: str) -> tuple[list[str], list[int], list[str], list[int]]:
    """Replace numbers inside words by NUM_TOKEN, splitting `10cm` into `[NUM] cm`.

    Returns tokens, slot positions, the numbers as written, and for every input
    word the index of the token it now starts at (to remap source token indices).
    """
    tokens: list[str] = []
    num_pos: list[int] = []
    texts: list[str] = []
    starts: list[int] = []
    for word in words:
        starts.append(len(tokens))
        last = 0
        for m in find_numbers(word, language):
            if m.start() > last:
                tokens.append(word[last:m.start()])
            num_pos.append(len(tokens))
            texts.append(m.group())
            tokens.append(NUM_TOKEN)
            last = m.end()
        if last < len(word):
            tokens.append(word[last:])
    return tokens, num_pos, texts, starts


def english_words(text: str) -> list[str]:
    """Tokenise raw English text so every number is a word of its own."""
    return _EN_TOKEN.findall(text)


def text_tokens(text: str, language: str) -> tuple[list[str], list[int], list[str]]:
    """Raw problem text to tokens, slot positions and numbers as written: English is
    tokenised here; Chinese text is expected to be segmented into space-separated words."""
    words = english_words(text) if language == "en" else text.split()
    tokens, num_pos, texts, _ = split_tokens(words, language)
    return tokens, num_pos, texts


def equation_side(equation: str) -> str:
    """The expression side of `x=expr`, `expr=x` or a bare `expr`."""
    sides = [s.strip() for s in equation.split("=")]
    if len(sides) == 1:
        return sides[0]
    if len(sides) != 2:
        raise RecordError("unparseable equation", f"{len(sides) - 1} '=' signs in {equation!r}")
    left_var, right_var = (bool(_VARIABLE.fullmatch(s)) for s in sides)
    if left_var == right_var:
        raise RecordError("unparseable equation", f"no single unknown on one side of {equation!r}")
    return sides[1] if left_var else sides[0]


def slot_literals(node: Node, values: Sequence[Fraction]) -> Node:
    """Map every literal leaf to its number slot, or to a canonical constant."""
    if not node.is_leaf:
        return Node(node.token, slot_literals(node.left, values), slot_literals(node.right, values))
    if SLOT.fullmatch(node.token):
        return node
    try:
        value = parse_number(node.token)
    except NumberError as err:
        raise RecordError("unparseable equation", str(err)) from err
    for k, v in enumerate(values):
        if v == value:
            return Node(f"N{k}")
    tolerance = MATCH_TOLERANCE * max(1, abs(value))
    for k, v in enumerate(values):
        if abs(v - value) <= tolerance:
            return Node(f"N{k}")
    return Node(canonical(value))


def parse_answer(answer: object) -> Fraction:
    """A gold answer as a Fraction: numbers, `50%`, `((4)/(7))`, `7((2)/(3))`."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float, str)):
        raise RecordError("answer not a number", f"answer {answer!r}")
    if isinstance(answer, (int, float)):
        return Fraction(repr(answer)) if isinstance(answer, float) else Fraction(answer)
    text = re.sub(r"(\d+)\(\((\d+)\)/\((\d+)\)\)", r"\1(\2/\3)", answer.strip())  # 7((2)/(3))
    try:
        value = evaluate(parse_infix(text))
    except (ExpressionError, InvalidValue, NumberError) as err:
        raise RecordError("answer not a number", f"answer {answer!r}: {err}") from err
    if not isinstance(value, Fraction):
        raise RecordError("answer not a number", f"answer {answer!r} is not exact")
    return value


def make_problem(
    *,
    dataset: str,
    source_id: str,
    split: str,
    fold: int,
    language: str,
    tokens: Sequence[str],
    num_pos: Sequence[int],
    number_texts: Sequence[str],
    answer: object,
    origin: str,
    equation: str | None = None,
    prefix: Sequence[str] | None = None,
    cells: Sequence[int] = (),
) -> Problem:
    """Check and assemble one Problem from an infix `equation` (literals matched to
    numbers) or a `prefix` already over slots `N<k>` and constant literals."""
    try:
        values = [parse_number(t) for t in number_texts]
    except NumberError as err:
        raise RecordError("unreadable number", str(err)) from err
    if (equation is None) == (prefix is None):
        raise RecordError("no equation", "the record needs exactly one of an equation or a prefix")
    if equation is not None and not isinstance(equation, str):
        raise RecordError("unparseable equation", f"equation must be a string, found {equation!r}")
    if prefix is not None and (not isinstance(prefix, (list, tuple)) or not all(isinstance(t, str) for t in prefix)):
        raise RecordError("unparseable equation", f"prefix must be a list of strings, found {prefix!r}")
    try:
        if equation is not None:
            atoms = [t for t in number_texts if not t.isdigit()]
            tree = slot_literals(parse_infix(equation_side(equation), atoms), values)
        else:
            tree = slot_literals(from_prefix(list(prefix)), values)
        value = evaluate(tree, values)
    except ExpressionError as err:
        raise RecordError("unparseable equation", str(err)) from err
    except InvalidValue as err:
        raise RecordError("invalid equation value", str(err)) from err
    gold = parse_answer(answer)
    return Problem(
        id=f"{dataset}:{source_id}",
        dataset=dataset,
        split=split,
        fold=fold,
        language=language,
        tokens=tuple(tokens),
        num_pos=tuple(num_pos),
        numbers=tuple(canonical(v) for v in values),
        number_texts=tuple(number_texts),
        prefix=tuple(to_prefix(tree)),
        answer=canonical(gold),
        answer_agrees=values_equal(value, gold),
        cells=tuple(cells),
        origin=origin,
    )
