"""`psedual solve`: one problem text through a trained checkpoint."""

from __future__ import annotations

from pathlib import Path

from psedual.data.build import text_tokens
from psedual.data.expr import from_prefix, to_infix, try_evaluate
from psedual.data.numbers import canonical, parse_number
from psedual.data.record import Problem
from psedual.solvers.batch import collate
from psedual.train import checkpoint


def solve(checkpoint_path: str | Path, text: str, beam_size: int = 5) -> tuple[str, str]:
    """(readable infix over the problem's numbers, answer or 'invalid')."""
    path = Path(checkpoint_path)
    model = checkpoint.build_model(checkpoint.load(path), path)
    language = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"
    tokens, num_pos, texts = text_tokens(text, language)
    if not tokens:
        raise ValueError("empty problem text")
    values = [parse_number(t) for t in texts]
    problem = Problem("input", "input", "test", -1, language, tuple(tokens), tuple(num_pos),
                      tuple(canonical(v) for v in values), tuple(texts), (), "0", False, (), "command line")
    prefix = model.decode(collate([problem], model.vocab, with_targets=False), beam_size=beam_size)[0]
    value = try_evaluate(prefix, values)
    tree = from_prefix(_with_numbers(prefix, texts))
    answer = "invalid" if value is None else (canonical(value) if not isinstance(value, float) else f"{value:g}")
    return to_infix(tree), answer


def _with_numbers(prefix, texts) -> list[str]:
    """Slots replaced by the numbers as the problem wrote them, for reading."""
    return [texts[int(t[1:])] if t.startswith("N") and t[1:].isdigit() else t for t in prefix]
