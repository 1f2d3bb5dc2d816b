"""Input words and output tokens of a solver, fixed from the training split.

Output tokens are, in this order: the operators, the constant vocabulary of the
training split (`splits.constant_vocabulary`), and number slots N0..N{max_slots-1}.
The vocabulary travels inside every checkpoint, so a checkpoint can only be
used with the tokens it was trained on.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from psedual.data.expr import OPERATORS
from psedual.data.record import NUM_TOKEN, Problem

PAD, UNK = "[PAD]", "[UNK]"


class VocabularyError(ValueError):
    """A problem or checkpoint that does not fit a solver's vocabulary."""


@dataclass(frozen=True)
class Vocab:
    words: tuple[str, ...]
    """Input words; index 0 is PAD, 1 is UNK, 2 is the number token."""
    constants: tuple[str, ...]
    """Constant literals the solver may produce."""
    max_slots: int
    """Number slots the solver can point at; a problem with more numbers is refused."""
    operators: tuple[str, ...] = OPERATORS

    def __post_init__(self) -> None:
        if self.words[:3] != (PAD, UNK, NUM_TOKEN):
            raise VocabularyError(f"words must start with {PAD}, {UNK}, {NUM_TOKEN}")
        object.__setattr__(self, "_word_id", {w: i for i, w in enumerate(self.words)})
        object.__setattr__(self, "_out_id", {t: i for i, t in enumerate(self.output_tokens)})

    @classmethod
    def build(cls, train: Sequence[Problem], constants: Sequence[str], min_word_count: int = 1,
              max_slots: int | None = None) -> Vocab:
        counts = Counter(w for p in train for w in p.tokens if w != NUM_TOKEN)
        words = sorted(w for w, n in counts.items() if n >= min_word_count)
        slots = max_slots if max_slots is not None else max((len(p.numbers) for p in train), default=1)
        return cls((PAD, UNK, NUM_TOKEN, *words), tuple(constants), max(slots, 1))

    @property
    def output_tokens(self) -> tuple[str, ...]:
        return (*self.operators, *self.constants, *(f"N{k}" for k in range(self.max_slots)))

    @property
    def num_start(self) -> int:
        """Output id of the first constant; constants and slots follow the operators."""
        return len(self.operators)

    def word_ids(self, problem: Problem) -> list[int]:
        if not problem.tokens:
            raise VocabularyError(f"{problem.id}: empty problem text")
        if len(problem.numbers) > self.max_slots:
            raise VocabularyError(f"{problem.id}: {len(problem.numbers)} numbers, but the solver has "
                                  f"{self.max_slots} number slots")
        return [self._word_id.get(w, 1) for w in problem.tokens]

    def output_ids(self, tokens: Sequence[str], problem_id: str = "") -> list[int]:
        try:
            return [self._out_id[t] for t in tokens]
        except KeyError as err:
            raise VocabularyError(f"{problem_id}: token {err.args[0]!r} is not in the solver's output vocabulary "
                                  f"({' '.join(self.output_tokens)})") from None

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Vocab:
        data = json.loads(text)
        return cls(tuple(data["words"]), tuple(data["constants"]), int(data["max_slots"]), tuple(data["operators"]))
