"""Whether a value read from a sweep file has the type of the field it sets, said in words.

A sweep file's values reach a TrainConfig (or the sweep's own settings) as YAML gave them: a
string learning rate failed later with Python's `'<=' not supported between 'str' and 'int'`,
and a list of lists as seeds reached Ray, which failed on a 192,000-character trial name. Here
every value is checked against its field's annotation first, and the error says what the field
takes the way a user writes it (`a number`, `a whole number`, `one of step, linear`), never a
Python type's name.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
from collections.abc import Iterable
from difflib import get_close_matches
from typing import Literal, Union, get_args, get_origin, get_type_hints

SHOWN = 60
"""Characters of a refused value shown in its error line (a list of lists can be huge)."""
FLOAT_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")
"""A number in exponent form. PyYAML (YAML 1.1) reads one without a dot or without the exponent's
sign (`1e-3`, `1.5e3`) as a string."""


def words(annotation: object) -> str:
    """What a field of `annotation` takes, as a user would say it."""
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "a whole number"
    if annotation is float:
        return "a number"
    if annotation is str:
        return "a string"
    if annotation is dict or get_origin(annotation) is dict:
        return "a mapping"
    if annotation in (list, tuple) or get_origin(annotation) in (list, tuple):
        return "a list"
    if get_origin(annotation) is Literal:
        return "one of " + ", ".join(map(str, get_args(annotation)))
    if _is_union(annotation):
        named = [words(a) for a in get_args(annotation) if a is not type(None)]
        return " or ".join(named) + (", or null" if type(None) in get_args(annotation) else "")
    if dataclasses.is_dataclass(annotation):
        return "a mapping of " + ", ".join(f.name for f in dataclasses.fields(annotation))
    return "a value of another kind"  # an annotation this module does not know: never a Python name


def fits(value: object, annotation: object) -> bool:
    """Whether `value` (as YAML read it) is of `annotation`'s type. A choice (Literal) takes any
    value of its choices' type: which one is the config's own check, which lists the valid ones."""
    if _is_union(annotation):
        return any(fits(value, a) for a in get_args(annotation))
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:  # YAML's true is no number of epochs, nor 2.5
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if annotation is str:
        return isinstance(value, str)
    if annotation is dict or get_origin(annotation) is dict or dataclasses.is_dataclass(annotation):
        return isinstance(value, dict)
    if annotation in (list, tuple) or get_origin(annotation) in (list, tuple):
        return isinstance(value, list)
    if get_origin(annotation) is Literal:
        return any(type(value) is type(choice) for choice in get_args(annotation))
    return True  # an annotation this module does not know: the config's own check decides


def problem(name: str, value: object, annotation: object) -> str | None:
    """None if `value` fits `annotation`; else one line: `lr must be a number, got 'abc'`."""
    if fits(value, annotation):
        return None
    expected = words(annotation)
    if isinstance(value, float) and not math.isfinite(value) and fits(0.0, annotation):
        expected = "a finite number"  # YAML's .nan and .inf are floats no schedule can use
    return f"{name} must be {expected}, got {shown(value)}{_exponent_hint(value, annotation)}"


def shown(value: object) -> str:
    """A value as the error line shows it: YAML's words for true, false and null, a string
    quoted, a long value cut to `SHOWN` characters with its length."""
    text = "null" if value is None else str(value).lower() if isinstance(value, bool) else repr(value)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text):,} characters)"


def _exponent_hint(value: object, annotation: object) -> str:
    """How to write `1e-3` so that YAML reads a number (PyYAML wants a dot and a signed exponent)."""
    if not (isinstance(value, str) and FLOAT_TEXT.fullmatch(value.strip()) and fits(float(value), annotation)):
        return ""
    mantissa, _, exponent = value.strip().lower().partition("e")
    mantissa = mantissa if "." in mantissa else f"{mantissa}.0"
    exponent = exponent if exponent[0] in "+-" else f"+{exponent}"
    return f" (YAML reads {value.strip()} as a string: write {mantissa}e{exponent})"


def unknown(names: Iterable[object], valid: Iterable[str], what: str = "key") -> str:
    """`unknown key 'lrr'; did you mean lr? The other valid keys: ...`: the valid names nearest each
    unknown one first, then the rest, in `valid`'s order. Without a near one: `unknown key 'x';
    valid: ...`."""
    names, valid = sorted(map(str, names)), list(valid)
    # a typo is near its word (difflib); a part of a name is inside it (`cpus` in cpus_per_worker)
    near = list(dict.fromkeys(m for n in names for m in [*get_close_matches(n, valid, n=3, cutoff=0.6),
                                                         *[v for v in valid if len(n) >= 3 and n in v][:3]]))
    said = f"unknown {what}{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))}"
    if not near:
        return f"{said}; valid: {', '.join(valid)}"
    rest = [v for v in valid if v not in near]
    return f"{said}; did you mean {' or '.join(near)}? The other valid {what}s: {', '.join(rest)}"


def dataclass_problems(cls: type, values: dict) -> list[str]:
    """The lines of `values`' entries that do not fit `cls`'s fields (unknown keys are the caller's)."""
    hints = get_type_hints(cls)
    return [said for key, value in values.items() if key in hints
            for said in [problem(key, value, hints[key])] if said is not None]


def _is_union(annotation: object) -> bool:
    return isinstance(annotation, types.UnionType) or get_origin(annotation) is Union
