"""Runs validated on their own test split (issue 52, item 2).

A run's checkpoint is chosen by its validation score (`psedual.results.best`); a run whose
validation split was its test split chose it on test, and its test score is a maximum over epochs,
not an estimate. The tables record no hash of the validation split, but such a run leaves a
fingerprint: its validation scores at its best epoch are its test scores, value and expression
accuracy alike. One run may show it by chance (two splits of one size can score alike), so
- a run whose validation split is as large as its test split and whose scores are its test scores
  is flagged `test-selected? ... validated on its test split?` (`flag`);
- an arm every one of whose runs (at least `MIN_RUNS`) shows it is refused (`check_arm`): every
  checkpoint of the arm was chosen on test.
"""

from __future__ import annotations

import polars as pl

from analysis.checks.guardrails import GuardrailError, non_finite, run_name

MIN_RUNS = 3
"""An arm this large whose every run scores on validation what it scores on test was validated on
test: by chance, with splits of a few hundred problems, that is about one arm in ten thousand."""
SAME = 1e-12
"""Scores closer than this are the same score (each is a share of its split, written as a float)."""
PAIRS = (("valid_value_acc", "test_value_acc"), ("valid_expr_acc", "test_expr_acc"))
"""(validation column, test column): the scores that coincide on a run validated on its test split."""


def on_test(r: dict) -> bool:
    """Whether the run's validation scores at its best epoch are its test scores: the value
    accuracy recorded and equal, and the expression accuracy equal where both are recorded."""
    v, t = r.get(PAIRS[0][0]), r.get(PAIRS[0][1])
    if v is None or t is None or non_finite(v) or non_finite(t) or abs(v - t) > SAME:
        return False
    ve, te = r.get(PAIRS[1][0]), r.get(PAIRS[1][1])
    return ve is None or te is None or abs(ve - te) <= SAME


def flag(r: dict) -> str | None:
    """The flag of one run that may have been validated on its test split: its validation split as
    large as its test split, and its scores the same (`on_test`)."""
    if not on_test(r) or not r.get("n_valid") or r.get("n_valid") != r.get("n_test"):
        return None
    return (f"test-selected? {run_name((r['experiment'], r['trial']))}: its validation scores at best_epoch are its "
            f"test scores (valid_value_acc {r[PAIRS[0][0]]:.4g}, n_valid = n_test = {r['n_valid']}): validated on its "
            f"test split?")


def check_arm(where: str, runs: pl.DataFrame) -> None:
    """Refuse an arm of at least MIN_RUNS runs every one of which has its test scores as its
    validation scores: its checkpoints were chosen on the test split."""
    if runs.height < MIN_RUNS:
        return
    rows = runs.sort("experiment", "trial").to_dicts()
    if all(on_test(r) for r in rows):
        r = rows[0]
        raise GuardrailError(f"{where}: every one of its {runs.height} runs has its test scores as its validation "
                             f"scores (e.g. {run_name((r['experiment'], r['trial']))}: {PAIRS[0][0]} "
                             f"{r[PAIRS[0][0]]:.4g} = {PAIRS[0][1]}): its checkpoints were chosen on the test split; "
                             f"compare runs validated on a split of their own")
