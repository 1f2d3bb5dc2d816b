"""From a source record's pieces to a `Problem`: the rules every loader shares.

How an equation's literals become number slots: a literal whose value equals
a number of the text (exactly, or within MATCH_TOLERANCE for float-printed
values such as 0.3333333333333333 for 1/3) becomes that number's slot; when the
value occurs several times in the text, the first occurrence is used. Every
other literal is a constant, stored canonically. Which constants a solver may
produce is decided later, from the training split only (`splits.constant_vocabulary`). A kept
problem whose gold uses such a literal (a number not in its text) is counted by
the loaders (`sources.common`), and so is one whose gold also disagrees with
its answer (`3+7` where the text has 3 and 5): `data stats` shows both, and
`DataConfig.drop_inconsistent` leaves the latter out of training.

Limits: one record that breaks any of these is a counted skip with reason
"over a size limit"; the rest of its file loads, and no record can take more
than a fraction of a second or reach Python's recursion or int-digit limits.
- MAX_TEXT_CHARS (10,000): characters of a problem text (real benchmarks: < 700);
- MAX_NUMBERS (100): numbers in one problem (real benchmarks: <= 26);
- `numbers.MAX_DIGITS` (100): digits of a number's numerator or denominator,
  in the text, the equation or the answer;
- `expr.MAX_EXPRESSION_CHARS` (10,000), `expr.MAX_TOKENS` (1,000) and
  `expr.MAX_DEPTH` (100): size and nesting of an equation or a prefix.
Other per-record refusals: a NaN or infinite answer ("answer not a number"),
a field that is there but blank ("empty field"), text that is not valid
Unicode, such as a lone surrogate from a JSON `\ud800` escape ("invalid
text"; checked here, so the Parquet cache never sees it).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import fields
from fractions import Fraction

from psedual.data.expr import (
    MATCH_TOLERANCE,
    MAX_TOKENS,
    SLOT,
    ExpressionError,
    Juxtaposition,
    Node,
    SlotNotCanonical,
    check_slot,
    from_prefix,
    parse_infix,
    to_prefix,
)
from psedual.data.numbers import (
    GROUPED,
    SCIENTIFIC,
    UNIT_ALTERNATIVES,
    NumberError,
    SizeLimitError,
    canonical,
    check_size,
    find_numbers,
    parse_number,
    quote,
)
from psedual.data.gold_rules import (JUXTAPOSITION_REFUSED, MINUS_BEFORE_POWER, MIXED_ANSWER, NEGATED_NUMBER,
                                     RELATIVE_CHECK, SLOT_REFUSED, TEXT_MIXED_NUMBER, ZERO_DENOMINATOR, ZERO_ONLY_EXACT)
from psedual.data.record import NUM_TOKEN, Problem
from psedual.data.value import DivisionByZero, InvalidValue, Value, evaluate, float_value, values_equal

_MIXED_WRITTEN = re.compile(r"\d+\(\(?\d+\)?/\(?\d+\)?\)")  # 3(1/2), 7((2)/(3))
_MINUS_BEFORE_POWER = re.compile(r"(?:^|[-+*/^(\[])\s*-\s*[\d.]+%?\s*\^")
MAX_TEXT_CHARS = 10_000
MAX_NUMBERS = 100
OVER_LIMIT = "over a size limit"

# English tokens, first match wins: a number in scientific notation (`2e-3`); a number
# glued to a unit (`5kg`: the number, then `kg` as the next token); a word that mixes
# letters and digits (`mp3`, `2d`, `h8`: not a quantity); a mixed number (`2 1/2`,
# kept only when its fraction is proper, see `english_words`); a number (with its sign
# when `-` stands alone before it: "-2 , -15"); a run of letters; any other visible
# character. The rules are listed in `numbers` (docs/data.md, "Numbers in the text").
_SIGN = r"(?:(?<![\w.)])-)?"
_EN_GLUED = (rf"{_SIGN}{SCIENTIFIC}(?![^\W_])"
             rf"|{_SIGN}(?:{GROUPED}|\d*\.\d+|\d+)(?=(?i:{UNIT_ALTERNATIVES})(?![^\W_]))")
_EN_WORDS = r"[^\W\d_]+\d[^\W_]*|\d+[^\W\d_][^\W_]*"
_EN_MIXED = rf"{_SIGN}\d+ \d+/\d+(?![\d/.])"
_EN_REST = rf"{_SIGN}(?:{GROUPED}|\d*\.\d+|\d+/\d+|\d+)|[^\W\d_]+|\S"
_EN_TOKEN = re.compile(f"{_EN_GLUED}|{_EN_WORDS}|{_EN_MIXED}|{_EN_REST}")
# The same without the alternatives that need a digit before a letter (`2e-3`, `5kg`) or a
# spaced fraction (`2 1/2`): a text with neither (most) is read the same by it, faster.
_EN_PLAIN_TOKEN = re.compile(f"{_EN_WORDS}|{_EN_REST}")
_NEEDS_FULL = re.compile(r"\d(?:[^\W\d_]| \d+/)")
_MIXED = re.compile(r"-?(\d+) (\d+)/(\d+)")
# Answers written as a text writes numbers: `1,250`, `2 1/2`, and Math23K's mixed `7(2/3)` (an
# expression has no commas or spaced fractions, and refuses a number before a bracket).
_WRITTEN_ANSWER = re.compile(rf"-?{GROUPED}%?|\d+ \d+/\d+|\d+\(\d+/\d+\)")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


class RecordError(ValueError):
    """One source record that cannot become a Problem; loaders turn it into a counted Skip (and
    count `rules`, the gold rules that refused it, among their notes)."""

    def __init__(self, reason: str, detail: str, rules: tuple[str, ...] = ()) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail, self.rules = reason, detail, rules


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
    """Tokenise raw English text so every number is a word of its own. `2 1/2` is one
    number when its fraction is proper (0 < 1 < 2); `3 4/3` stays two numbers."""
    if _NEEDS_FULL.search(text) is None:
        return _EN_PLAIN_TOKEN.findall(text)
    words = []
    for word in _EN_TOKEN.findall(text):
        m = _MIXED.fullmatch(word)
        if m is not None and not 0 < int(m.group(2)) < int(m.group(3)):
            whole, fraction = word.split(" ")
            words += [whole, fraction]
        else:
            words.append(word)
    return words


def check_text(text: str, name: str, limit: int = MAX_TEXT_CHARS) -> str:
    """`text`, field `name` of a record, or a RecordError when it is blank or longer than
    `limit` (checked before tokenizing: a 5-million-number text would take a minute and
    gigabytes)."""
    if len(text) > limit:
        raise RecordError(OVER_LIMIT, f"{name!r} has {len(text):,} characters (limit {limit:,})")
    if not text.strip():
        raise RecordError("empty field", f"{name!r} is there but blank: {quote(text)}")
    return text


def text_tokens(text: str, language: str) -> tuple[list[str], list[int], list[str]]:
    """Raw problem text to tokens, slot positions and numbers as written: English is
    tokenised here; Chinese text is expected to be segmented into space-separated words.
    A text over MAX_TEXT_CHARS is refused here, before tokenizing (a blank one, by the loaders)."""
    if len(text) > MAX_TEXT_CHARS:
        raise RecordError(OVER_LIMIT, f"text has {len(text):,} characters (limit {MAX_TEXT_CHARS:,})")
    words = english_words(text) if language == "en" else text.split()
    tokens, num_pos, texts, _ = split_tokens(words, language)
    return tokens, num_pos, texts


def equation_side(equation: str) -> str:
    """The expression side of `x=expr`, `expr=x` or a bare `expr`."""
    sides = [s.strip() for s in equation.split("=")]
    if len(sides) == 1:
        return sides[0]
    if len(sides) != 2:
        raise RecordError("unparseable equation", f"{len(sides) - 1} '=' signs in {quote(equation)}")
    left_var, right_var = (bool(_VARIABLE.fullmatch(s)) for s in sides)
    if left_var == right_var:
        raise RecordError("unparseable equation", f"no single unknown on one side of {quote(equation)}")
    return sides[1] if left_var else sides[0]


def slot_literals(node: Node, values: Sequence[Fraction], rules: list[str] | None = None) -> Node:
    """Map every literal leaf to its number slot, or to a canonical constant. `a - 4` where
    the text holds -4 and no 4 (`10 -4`, `(10)-4`) is `a + N<k>`, the same value over the
    text's number: the minus was the number's sign (noted in `rules` as NEGATED_NUMBER)."""
    if not node.is_leaf:
        if node.token == "-" and node.right.is_leaf and not SLOT.fullmatch(node.right.token):
            right = slot_literals(node.right, values)
            if not SLOT.fullmatch(right.token) and (k := _slot_of(-parse_number(node.right.token), values)) is not None:
                if rules is not None:
                    rules.append(NEGATED_NUMBER)
                return Node("+", slot_literals(node.left, values, rules), Node(f"N{k}"))
            return Node("-", slot_literals(node.left, values, rules), right)
        return Node(node.token, slot_literals(node.left, values, rules), slot_literals(node.right, values, rules))
    try:
        if SLOT.fullmatch(check_slot(node.token)):
            return node
    except ExpressionError as err:
        raise RecordError("unparseable equation", str(err), _refusing_rules(err)) from err
    try:
        value = parse_number(node.token)
    except SizeLimitError as err:
        raise RecordError(OVER_LIMIT, f"equation literal: {err}") from err
    except NumberError as err:
        raise RecordError("unparseable equation", str(err)) from err
    k = _slot_of(value, values)
    return Node(canonical(value) if k is None else f"N{k}")


def _slot_of(value: Fraction, values: Sequence[Fraction]) -> int | None:
    """The first number of the text equal to `value` (exactly, else within MATCH_TOLERANCE)."""
    for k, v in enumerate(values):
        if v == value:
            return k
    tolerance = MATCH_TOLERANCE * max(1, abs(value))
    for k, v in enumerate(values):
        if abs(v - value) <= tolerance:
            return k
    return None


def parse_answer(answer: object) -> Fraction:
    """A gold answer as a Fraction: numbers, `50%`, `((4)/(7))`, `7((2)/(3))`."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float, str)):
        raise RecordError("answer not a number", f"answer {quote(answer)}")
    if isinstance(answer, float) and not math.isfinite(answer):  # JSON's NaN and Infinity
        raise RecordError("answer not a number", f"answer {answer!r} is not a finite number")
    try:
        if isinstance(answer, (int, float)):
            return check_size(Fraction(repr(answer)) if isinstance(answer, float) else Fraction(answer), answer)
        text = re.sub(r"(\d+)\(\((\d+)\)/\((\d+)\)\)", r"\1(\2/\3)", answer.strip())  # 7((2)/(3))
        value = parse_number(text) if _WRITTEN_ANSWER.fullmatch(text) else evaluate(parse_infix(text))
    except SizeLimitError as err:
        raise RecordError(OVER_LIMIT, f"answer: {err}") from err
    except (ExpressionError, InvalidValue, NumberError) as err:
        raise RecordError("answer not a number", f"answer {quote(answer)}: {err}") from err
    if not isinstance(value, Fraction):
        raise RecordError("answer not a number", f"answer {quote(answer)} is not exact")
    try:
        return check_size(value, answer)  # its canonical string must read back (`Problem.answer_value`)
    except SizeLimitError as err:
        raise RecordError(OVER_LIMIT, f"answer: {err}") from err


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
    notes: Counter[str] | None = None,
) -> Problem:
    """Check and assemble one Problem from an infix `equation` (literals matched to
    numbers) or a `prefix` already over slots `N<k>` and constant literals. The gold
    rules the equation needed are added to `notes` once the problem is kept."""
    if len(number_texts) > MAX_NUMBERS:
        raise RecordError(OVER_LIMIT, f"{len(number_texts):,} numbers in the text (limit {MAX_NUMBERS})")
    if tokens.count(NUM_TOKEN) != len(num_pos):
        # A word `[NUM]` of the text itself would be read as a number's place that has no number:
        # the solvers embed it as one, a pretrained encoder masks it, an LLM's prompt shifts numbers.
        raise RecordError("invalid text", f"the text writes {NUM_TOKEN} itself, the mask that stands for its numbers: "
                          f"{quote(' '.join(tokens), 160)}")
    try:
        values = [parse_number(t) for t in number_texts]
    except SizeLimitError as err:
        raise RecordError(OVER_LIMIT, f"in the text: {err}") from err
    except NumberError as err:
        raise RecordError("unreadable number", str(err)) from err
    _check_expression_fields(equation, prefix)
    rules: list[str] = []
    tree = None
    try:
        if equation is not None:
            atoms = [t for t in number_texts if not t.isdigit()]
            side = equation_side(equation)
            written = parse_infix(side, atoms)
            if any("(" in a for a in atoms) and _uses_mixed(written, atoms):
                rules.append(TEXT_MIXED_NUMBER)
            tree = slot_literals(written, values, rules)
            if "^" in side and _MINUS_BEFORE_POWER.search(side):
                rules.append(MINUS_BEFORE_POWER)
        else:
            tree = slot_literals(from_prefix(list(prefix)), values)
        value = evaluate(tree, values)
    except SizeLimitError as err:  # before its bases ExpressionError and InvalidValue
        raise RecordError(OVER_LIMIT, str(err)) from err
    except ExpressionError as err:
        raise RecordError("unparseable equation", str(err), _refusing_rules(err)) from err
    except DivisionByZero as err:
        # What floats would have made of it (1/((2^0.5)^2-2): 4.5e15) is worked out only here, for the count.
        floats_kept = tree is not None and float_value(tree, values) is not None
        raise RecordError("invalid equation value", str(err),
                          (ZERO_DENOMINATOR, ZERO_ONLY_EXACT) if floats_kept else (ZERO_DENOMINATOR,)) from err
    except InvalidValue as err:
        raise RecordError("invalid equation value", str(err)) from err
    gold = parse_answer(answer)
    agrees = values_equal(value, gold)
    if not agrees and _absolute_check(value, gold):
        rules.append(RELATIVE_CHECK)
    if isinstance(answer, str) and "(" in answer and _MIXED_WRITTEN.search(answer):
        rules.append(MIXED_ANSWER)
    problem = _checked_text(Problem(
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
        answer_agrees=agrees,
        cells=tuple(cells),
        origin=origin,
    ))
    if notes is not None:
        notes.update(rules)
    return problem


def _refusing_rules(err: ExpressionError) -> tuple[str, ...]:
    """The gold rule (its note) that refused an equation, if one did."""
    if isinstance(err, Juxtaposition):
        return (JUXTAPOSITION_REFUSED,)
    return (SLOT_REFUSED,) if isinstance(err, SlotNotCanonical) else ()


def _uses_mixed(node: Node, atoms: Sequence[str]) -> bool:
    """Whether a parsed gold (leaves as written) holds one of the text's mixed numbers (`3(1/2)`)."""
    mixed = {a for a in atoms if "(" in a and a[0].isdigit()}
    stack = [node]
    while stack:
        n = stack.pop()
        if n.is_leaf:
            if n.token in mixed:
                return True
        else:
            stack += (n.left, n.right)
    return False


def _absolute_check(value: Value, gold: Fraction) -> bool:
    """The answer check before the relative rule (|v - b| <= 1e-4 * max(1, |b|)): only to count the
    problems the relative check now calls disagreeing (`RELATIVE_CHECK`)."""
    try:
        return abs(float(value) - float(gold)) <= 1e-4 * max(1.0, abs(float(gold)))
    except OverflowError:
        return False


def _check_expression_fields(equation: object, prefix: object) -> None:
    """Exactly one of `equation` (a string) and `prefix` (a list of strings), not blank."""
    given = equation if equation is not None else prefix
    if isinstance(given, (str, list, tuple)) and not (given.strip() if isinstance(given, str) else given):
        which = "equation" if equation is not None else "prefix"
        raise RecordError("empty field", f"the {which} is there but blank: {quote(given)}")
    if equation is not None and prefix is not None:
        raise RecordError("no equation", "the record has both an equation and a prefix; give exactly one")
    if equation is None and prefix is None:
        raise RecordError("no equation", "the record has neither an equation nor a prefix; give exactly one")
    if equation is not None and not isinstance(equation, str):
        raise RecordError("malformed record", f"equation must be a string, found {quote(equation)}")
    if prefix is None:
        return
    if not isinstance(prefix, (list, tuple)):
        raise RecordError("malformed record", f"prefix must be a list of strings, found {quote(prefix)}")
    if len(prefix) > MAX_TOKENS:  # before looking at every token of a million
        raise RecordError(OVER_LIMIT, f"prefix of {len(prefix):,} tokens (limit {MAX_TOKENS:,})")
    if not all(isinstance(t, str) for t in prefix):
        raise RecordError("malformed record", f"prefix must be a list of strings, found {quote(prefix)}")


def _checked_text(problem: Problem) -> Problem:
    """`problem`, or a RecordError when a string in it is not valid Unicode: JSON's `\\ud800`
    escape gives a lone surrogate that no UTF-8 writer (the Parquet cache) accepts."""
    for f in fields(Problem):
        value = getattr(problem, f.name)
        for text in value if isinstance(value, tuple) else (value,):
            if isinstance(text, str) and not text.isascii():
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError as err:
                    raise RecordError("invalid text", f"{f.name}: lone surrogate {text[err.start]!r} at character "
                                      f"{err.start} of {quote(text)} (not valid Unicode)") from None
    return problem
