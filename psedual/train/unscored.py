"""Test and validation problems a trained solver cannot represent: decoded as empty, so
scored wrong (on test with the reason kept), instead of an exception that would lose a finished
run's test step. What a solver cannot represent raises ValueError while its batch is built
or encoded: more numbers than its slots (`Vocab.word_ids`), more subwords than a pretrained
encoder's positions (`plm.WordAligner`). Any other error still stops the test; the run's
checkpoints stay, and `psedual test RUN_DIR` finishes it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from psedual.data.record import Problem

Decoded = tuple[tuple[str, ...], str | None]
MAX_REASON = 300


def decode_each(decode: Callable[[list[Problem]], list], chunk: list[Problem]) -> list[Decoded]:
    """(prediction, None) for each problem of `chunk`, decoded together; when the chunk raises
    ValueError, each problem is decoded alone, and one that still raises is ((), its reason)."""
    try:
        return [(tuple(p), None) for p in decode(chunk)]
    except ValueError as err:
        if len(chunk) == 1:
            return [((), _reason(err))]
    out: list[Decoded] = []
    for problem in chunk:
        try:
            out.append((tuple(decode([problem])[0]), None))
        except ValueError as err:
            out.append(((), _reason(err)))
    return out


def _reason(err: ValueError) -> str:
    text = str(err)
    return text if len(text) <= MAX_REASON else f"{text[:MAX_REASON]}..."


def report_unscored(problems: Sequence[Problem], reasons: Sequence[str | None]) -> None:
    """Say on stderr how many test problems were scored wrong undecoded, and one example."""
    failed = [(p, why) for p, why in zip(problems, reasons) if why is not None]
    if failed:
        p, why = failed[0]
        print(f"test: {len(failed):,} of {len(problems):,} problems could not be decoded and are scored wrong "
              f"(predictions.parquet, column unscored), e.g. {p.origin}: {why}", file=sys.stderr, flush=True)
