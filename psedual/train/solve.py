"""`psedual solve`: one problem text through a trained checkpoint."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from psedual.data.build import text_tokens
from psedual.data.expr import infix_with_numbers
from psedual.data.numbers import canonical, parse_number, quote
from psedual.data.record import Problem
from psedual.data.value import try_evaluate
from psedual.results.folder import BEST, LAST
from psedual.solvers.batch import collate
from psedual.train import checkpoint


@dataclass(frozen=True)
class SolveConfig:
    """`psedual solve`: one problem through a trained checkpoint."""

    text: str
    """The problem, as plain text with its numbers written out."""
    checkpoint: str
    """A run's `best.pt`, or its run folder (the folder `psedual train --out` wrote: its `best.pt`)."""
    beam_size: int = 5
    """Beam width of the decoder."""

    def __post_init__(self) -> None:
        if self.beam_size < 1:
            raise ValueError(f"beam_size must be at least 1, got {self.beam_size}")


def checkpoint_file(path: str | Path) -> Path:
    """The checkpoint `path` names: a run folder's `best.pt`, or the file itself. A folder without
    one is refused, saying what would write it."""
    path = Path(path)
    if not path.is_dir():
        return path
    if (path / BEST).is_file():
        return path / BEST
    began = " (it holds last.pt: `psedual train ... --out {0} --resume` finishes it)".format(path) \
        if (path / LAST).is_file() else ""
    raise checkpoint.CheckpointError(f"{path}: a folder with no {BEST}{began}: give a checkpoint file, or a run "
                                     f"folder `psedual train ... --out {path}` has trained")


def solve(checkpoint_path: str | Path, text: str, beam_size: int = 5) -> tuple[str, str]:
    """(readable infix over the problem's numbers, answer or 'invalid')."""
    path = checkpoint_file(checkpoint_path)
    model = checkpoint.build_model(checkpoint.load(path), path)
    language = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"
    tokens, num_pos, texts = text_tokens(text, language)
    if not tokens:
        raise ValueError("empty problem text")
    if not texts:  # a solver's expression is over the text's numbers: with none it has nothing to write
        raise ValueError(f"no numbers in the problem text {quote(text)}: write its numbers out (5, 2.5, 1/2, 50%)")
    values = [parse_number(t) for t in texts]
    problem = Problem("input", "input", "test", -1, language, tuple(tokens), tuple(num_pos),
                      tuple(canonical(v) for v in values), tuple(texts), (), "0", False, (), "command line")
    prefix = model.decode(collate([problem], model.vocab, with_targets=False), beam_size=beam_size)[0]
    value = try_evaluate(prefix, values)
    answer = "invalid" if value is None else (canonical(value) if not isinstance(value, float) else f"{value:g}")
    return infix_with_numbers(prefix, texts), answer
