"""A run's label checked against its own config (issue 52, item 3).

Every claim on `variant` trusts the label: a run called `gcn` is PseDual-GCN. A run's config says
it too: `psedual.expression_encoder` is the variant's own field in the config (`TrainConfig`,
`VARIANT_KEY`), null with every other `psedual.*` field on a run without a reexamining module. A
label the config contradicts is refused, naming the run: a `gcn` run whose config holds no PseDual
setting (the base solver under PseDual's name), a `gcn` run whose config is GRU's, a `base` (or
LLM) run whose config has an expression encoder. Tables without the config column (written by hand,
or by another tool) have nothing to check the label against, and are read as before.
"""

from __future__ import annotations

import polars as pl

from analysis.checks.guardrails import GuardrailError, run_name
from psedual.reexamine.config import EXPRESSION_ENCODERS

LABEL = "variant"
ENCODER = "psedual.expression_encoder"
"""The config's own name for the variant (`psedual.train.config.VARIANT_KEY`)."""
PREFIX = "psedual."
FIX = "fix the rows or leave them out with --where+"


def _refuse(runs: pl.DataFrame, said: str) -> None:
    r = runs.sort("experiment", "trial").row(0, named=True)
    raise GuardrailError(f"{run_name((r['experiment'], r['trial']))} is labelled variant {r[LABEL]}, but "
                         f"{said.format(encoder=r[ENCODER])} ({runs.height} run(s)); {FIX}")


def check(runs: pl.DataFrame) -> None:
    """Refuse the runs whose variant their config contradicts (see the module's docstring)."""
    if LABEL not in runs.columns or ENCODER not in runs.columns:
        return
    module = pl.col(LABEL).is_in(list(EXPRESSION_ENCODERS)).fill_null(False)
    settings = [c for c in runs.columns if c.startswith(PREFIX)]
    bare = runs.filter(module & pl.all_horizontal(pl.col(c).is_null() for c in settings))
    if bare.height:
        _refuse(bare, f"its config holds no PseDual setting ({ENCODER} null): the solver alone under a PseDual "
                      f"arm's name?")
    other = runs.filter(module & pl.col(ENCODER).ne_missing(pl.col(LABEL)))
    if other.height:
        _refuse(other, f"its config's {ENCODER} is {{encoder!r}}")
    posing = runs.filter(~module & pl.col(ENCODER).is_not_null())
    if posing.height:
        _refuse(posing, f"its config's {ENCODER} is {{encoder!r}}: a PseDual run under another arm's name?")
