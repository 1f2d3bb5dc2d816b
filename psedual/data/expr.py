"""Expressions without eval: infix parser, prefix and tree forms (evaluation: `value.py`).

A tree's leaves are number slots (`N0`, `N1`, ... the problem's numbers in
order of appearance) or constant literals (canonical strings, see
`numbers.canonical`); inner nodes are the binary operators + - * / ^.
Infix is parsed by recursive descent, and nothing derived from data is ever
handed to `eval`.

Size limits (`ExpressionTooLarge`, checked before any recursion can go deep, so
no input reaches Python's recursion limit):
- MAX_EXPRESSION_CHARS (10,000): characters of infix text, checked before tokenizing;
- MAX_TOKENS (1,000): tokens of an infix or prefix expression;
- MAX_DEPTH (100): nesting, counted as brackets, unary minuses and `^` chains
  while parsing, and as the depth of the tree built (a flat sum of 200 terms is
  a tree 200 deep). Real benchmarks reach depth 21 (Math23K, MathQA).
Trees from `parse_infix` and `from_prefix` are therefore at most MAX_DEPTH deep,
which is what makes the recursive helpers (`to_infix` here, `value._eval`) safe;
`value.evaluate` checks a tree built elsewhere before recursing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from psedual.data.numbers import SizeLimitError, quote

OPERATORS = ("+", "-", "*", "/", "^")
PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "^": 3}
# Slots are canonical: ASCII digits, no leading zero (N0, N12). `N00` or `N٣` would be a
# second name for a slot, which a solver's vocabulary (N0..Nk) cannot produce.
SLOT = re.compile(r"N(0|[1-9][0-9]*)")
_SLOT_LIKE = re.compile(r"N\d+")
UNUSED = -1
"""The filling of a slot whose number the gold expression does not use: the infilling targets
(`reexamine.targets`), its metrics (`metrics`) and the analysis's infilling summaries read it."""

# Literal-to-number matching (`build`) only has to absorb float repr noise such as
# 0.3333333333333333 for 1/3; values are compared more tolerantly (`value.VALUE_TOLERANCE`).
MATCH_TOLERANCE = 1e-9
MAX_EXPRESSION_CHARS = 10_000
MAX_TOKENS = 1_000
MAX_DEPTH = 100



class ExpressionError(ValueError):
    """Text that is not a well-formed expression."""


class ExpressionTooLarge(ExpressionError, SizeLimitError):
    """An expression over MAX_EXPRESSION_CHARS, MAX_TOKENS or MAX_DEPTH."""


class Juxtaposition(ExpressionError):
    """A number or bracket directly before a bracket (`4(1/2)`, `(2)(3)`): a product or a mixed
    number, and the gold must say which (its own class so that `data stats` counts the rule)."""


class SlotNotCanonical(ExpressionError):
    """A slot spelt `N00`, `N01` or with non-ASCII digits: no solver vocabulary holds it."""


@dataclass(frozen=True, slots=True)
class Node:
    """One node of an expression tree: an operator with two children, or a leaf."""

    token: str
    left: Node | None = None
    right: Node | None = None

    @property
    def is_leaf(self) -> bool:
        return self.left is None


# --- infix text -> tokens -------------------------------------------------------

# No `4(1/2)` here: in an equation a number before a bracket is refused (`_InfixParser.primary`),
# never read as the mixed number 4 1/2; a text that writes `3(1/2)` passes it as an atom.
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?%?")
_CLOSING = {"(": ")", "[": "]"}  # `[ ]` work as parentheses, but each must close its own kind


def tokenize_infix(text: str, atoms: Sequence[str] = ()) -> list[str]:
    """Split infix text into literals, slots, operators and brackets.

    `atoms` are number strings that must stay one literal even though they
    contain operators: Math23K writes the fraction `(1/6)` in the text and
    means the same quantity when `(1/6)` appears in the equation.
    """
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionTooLarge(f"expression of {len(text):,} characters (limit {MAX_EXPRESSION_CHARS:,}): "
                                 f"{quote(text)}")
    atoms = sorted(set(atoms), key=len, reverse=True)
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if len(tokens) > MAX_TOKENS:
            raise ExpressionTooLarge(f"expression of more than {MAX_TOKENS:,} tokens: {quote(text)}")
        ch = text[pos]
        if ch.isspace():
            pos += 1
            continue
        # After an operand a `-` is subtraction, never the sign of an atom: `10 -4` is 10 - 4
        # even when the text writes -4 (`build.slot_literals` then reads it as 10 + (-4)).
        signed_ok = not tokens or tokens[-1] in OPERATORS or tokens[-1] in _CLOSING
        atom = next((a for a in atoms if text.startswith(a, pos) and _standalone(text, pos, a)
                     and (signed_ok or a[0] != "-")), None)
        if atom is not None:
            tokens.append(atom)
            pos += len(atom)
        elif m := _SLOT_LIKE.match(text, pos):
            tokens.append(check_slot(m.group()))
            pos = m.end()
        elif m := _NUMBER.match(text, pos):
            tokens.append(m.group())
            pos = m.end()
        elif ch in OPERATORS:
            tokens.append(ch)
            pos += 1
        elif ch in "()[]":
            tokens.append(ch)
            pos += 1
        else:
            raise ExpressionError(f"unknown token {text[pos:pos + 12]!r} at position {pos} of {quote(text)}")
    return tokens


def check_slot(token: str) -> str:
    """`token` if it is not slot-like (`N` and digits) or is a canonical slot; else ExpressionError."""
    if token[:1] == "N" and _SLOT_LIKE.fullmatch(token) and not SLOT.fullmatch(token):
        raise SlotNotCanonical(f"slot {quote(token)} is not canonical: write N0, N1, ... (ASCII digits, "
                              "no leading zero)")
    return token


def _standalone(text: str, pos: int, atom: str) -> bool:
    """An atom must not be a piece of a longer number (`1` inside `12`, `1.5` inside `1.5E3`)."""
    before = text[pos - 1] if pos > 0 else " "
    after = text[pos + len(atom)] if pos + len(atom) < len(text) else " "
    return not (before.isdigit() or before == ".") and not (after.isdigit() or after in ".%(eE")


# --- tokens -> tree ---------------------------------------------------------------


def parse_infix(text: str, atoms: Sequence[str] = ()) -> Node:
    """Parse an infix expression (no `x=`) into a tree; leaves keep their written form."""
    tokens = tokenize_infix(text, atoms)
    if not tokens:
        raise ExpressionError(f"empty expression {quote(text)}")
    parser = _InfixParser(tokens, text)
    node = parser.expression()
    if parser.pos != len(tokens):
        extra = tokens[parser.pos]
        what = f"unbalanced {extra!r}" if extra in ")]" else f"unexpected {extra!r}"
        raise ExpressionError(f"{what} at token {parser.pos} of {quote(text)}")
    check_depth(node, text)
    return node


def depth(node: Node) -> int:
    """Levels of a tree (a leaf is 1), counted without recursion."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        if not n.is_leaf:
            stack += [(n.left, d + 1), (n.right, d + 1)]
    return deepest


def check_depth(node: Node, source: object = None) -> Node:
    """`node`, or ExpressionTooLarge when it is deeper than MAX_DEPTH."""
    levels = depth(node)
    if levels > MAX_DEPTH:
        shown = f": {quote(source)}" if source is not None else ""
        raise ExpressionTooLarge(f"expression nested deeper than {MAX_DEPTH} ({levels} levels){shown}")
    return node


class _InfixParser:
    """expression := term (('+'|'-') term)*; term := unary (('*'|'/') unary)*;
    unary := '-' unary | power; power := primary ('^' unary)?   (right-associative);
    primary := atom | '(' expression ')'.

    A unary minus binds looser than `^`, as in mathematics: `-3^2` is -(3^2) = -9, and
    `2^-1` is 2^(-1). Juxtaposition (`4(1/2)`, `(2)(3)`) is refused: it could mean a
    product or a mixed number, and the gold must say which."""

    def __init__(self, tokens: list[str], text: str) -> None:
        self.tokens, self.text, self.pos = tokens, text, 0
        self.nesting = 0  # open brackets, unary minuses and `^` levels: the recursion's depth

    def deeper(self) -> None:
        """Enter one more level; every recursive call goes through here, so the stack stays
        within a few frames per level (about 6 * MAX_DEPTH in all)."""
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            raise ExpressionTooLarge(f"expression nested deeper than {MAX_DEPTH}: {quote(self.text)}")

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise ExpressionError(f"expression ends too early: {quote(self.text)}")
        self.pos += 1
        return token

    def binary(self, ops: str, operand) -> Node:
        node = operand()
        while self.peek() is not None and self.peek() in ops:
            op = self.take()
            node = Node(op, node, operand())
        return node

    def expression(self) -> Node:
        return self.binary("+-", self.term)

    def term(self) -> Node:
        return self.binary("*/", self.unary)

    def unary(self) -> Node:
        if self.peek() == "-":
            self.take()
            following = self.peek()
            after = self.tokens[self.pos + 1] if self.pos + 1 < len(self.tokens) else None
            # A minus before a number is part of it (MAWPS: -2.0*-15.0), so it can match the
            # text's -2, unless a power follows (`-3^2` is -(3^2)); negating anything else
            # (Math23K: 1-(-(1/2))) is 0 - x, keeping trees binary.
            if following is not None and _NUMBER.fullmatch(following) and after != "^":
                self.take()
                return Node("-" + following)
            self.deeper()
            operand = self.unary()
            self.nesting -= 1
            return Node("-", Node("0"), operand)
        return self.power()

    def power(self) -> Node:
        base = self.primary()
        if self.peek() == "^":
            self.take()
            self.deeper()
            exponent = self.unary()
            self.nesting -= 1
            return Node("^", base, exponent)
        return base

    def primary(self) -> Node:
        node = self.atom()
        if self.peek() in _CLOSING:
            raise Juxtaposition(f"a number or bracket directly before {self.peek()!r} at token {self.pos} of "
                                  f"{quote(self.text)}: write the product (4*(1/2)) or the sum (4+1/2) it means")
        return node

    def atom(self) -> Node:
        token = self.take()
        if token in _CLOSING:
            self.deeper()
            node = self.expression()
            self.nesting -= 1
            if self.peek() != _CLOSING[token]:
                raise ExpressionError(f"unbalanced {token!r} in {quote(self.text)}")
            self.take()
            return node
        if token in OPERATORS or token in ")]":
            raise ExpressionError(f"unexpected {token!r} at token {self.pos - 1} of {quote(self.text)}")
        return Node(token)


# --- tree <-> prefix / infix ----------------------------------------------------


def literals(prefix: Sequence[str]) -> set[str]:
    """The constant literals of a prefix expression: its tokens that are neither operators nor slots."""
    return {t for t in prefix if t not in OPERATORS and not SLOT.fullmatch(t)}


def to_prefix(node: Node) -> list[str]:
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        out.append(n.token)
        if not n.is_leaf:
            stack.append(n.right)
            stack.append(n.left)
    return out


def from_prefix(tokens: Sequence[str]) -> Node:
    """Build the tree of a prefix sequence, without recursion; malformed sequences raise
    ExpressionError, ones over MAX_TOKENS or MAX_DEPTH ExpressionTooLarge."""
    if len(tokens) > MAX_TOKENS:
        raise ExpressionTooLarge(f"prefix expression of {len(tokens):,} tokens (limit {MAX_TOKENS:,})")
    # Operators still waiting for a child: [token, left child or None]. Each is an ancestor
    # of the next token, so the stack's height is that token's depth minus one.
    pending: list[list] = []
    for pos, token in enumerate(tokens):
        if len(pending) >= MAX_DEPTH:
            raise ExpressionTooLarge(f"prefix expression nested deeper than {MAX_DEPTH}: {_shown(tokens)}")
        if token in OPERATORS:
            pending.append([token, None])
            continue
        node = Node(token)
        while pending:
            op, left = pending[-1]
            if left is None:
                pending[-1][1] = node
                break
            pending.pop()
            node = Node(op, left, node)
        else:  # nothing pending: `node` is the whole expression
            if pos != len(tokens) - 1:
                raise ExpressionError(f"prefix expression has {len(tokens) - pos - 1} extra tokens: {_shown(tokens)}")
            return node
    raise ExpressionError(f"prefix expression ends too early: {_shown(tokens)}")


def _shown(tokens: Sequence[str]) -> str:
    return quote(" ".join(map(str, tokens)))


def infix_with_numbers(prefix: Sequence[str], texts: Sequence[str]) -> str:
    """A prefix over slots as infix, each slot written as its number's text in the problem."""
    return to_infix(from_prefix([texts[int(m.group(1))] if (m := SLOT.fullmatch(t)) else t for t in prefix]))


def to_infix(node: Node) -> str:
    """Readable infix with only the brackets the parser needs to rebuild the same tree."""
    if node.is_leaf:
        # A fraction constant (`1/3`) is one leaf; bracket it so `2 / (1/3)` keeps its value.
        return f"({node.token})" if "/" in node.token else node.token
    prec = PRECEDENCE[node.token]
    left, right = to_infix(node.left), to_infix(node.right)
    lp = PRECEDENCE.get(node.left.token, 9)
    rp = PRECEDENCE.get(node.right.token, 9)
    # `^` is right-associative; the others are left-associative, so an equal-
    # precedence right child (a - (b - c), a + (b + c)) keeps its brackets.
    if lp < prec or (lp == prec and node.token == "^"):
        left = f"({left})"
    if rp < prec or (rp == prec and node.token != "^"):
        right = f"({right})"
    return f"{left} {node.token} {right}"
