"""The `looks` table of a sweep in rounds (a sweep file's `seeds` rule): one row per planned
comparison and look, as the searcher judged it (`psedual/tune/rounds.py`).

    <root>/looks/experiment=<name>/looks.parquet

Written whole at every look, atomically: a resumed sweep rewrites it with every look so far, so no
row is duplicated. Read with Polars (`pl.read_parquet(path)`) or `analysis.tables.looks.read_looks`.
Figures are in points of accuracy (treatment − base, test value accuracy).
"""

from __future__ import annotations

import pyarrow as pa

from psedual.atomic import write_parquet
from psedual.storage import filesystem

TABLE = "looks"
"""The table's folder under a storage root."""

LOOKS_SCHEMA = pa.schema([
    ("claim", pa.string()), ("look", pa.int64()), ("of", pa.int64()), ("planned_look", pa.int64()),
    ("seeds", pa.int64()), ("planned_seeds", pa.int64()), ("delta", pa.float64()), ("ci_low", pa.float64()),
    ("ci_high", pa.float64()), ("statistic", pa.float64()), ("boundary", pa.float64()), ("spent_alpha", pa.float64()),
    ("margin", pa.float64()), ("equivalence_low", pa.float64()), ("equivalence_high", pa.float64()),
    ("equivalence_boundary", pa.float64()), ("spent_alpha_one_sided", pa.float64()), ("target", pa.float64()),
    ("better", pa.bool_()), ("worse", pa.bool_()), ("equivalent", pa.bool_()), ("below_target", pa.bool_()),
    ("decided", pa.bool_()), ("verdict", pa.string()), ("design", pa.string()), ("not_seeds", pa.int64()),
    ("not_seeds_list", pa.string()),
])
"""One row per comparison and look: `look` of `of` is the design's (a look skipped for want of
new pairs is not counted), `planned_look` the schedule's; `seeds` the complete pairs judged,
`planned_seeds` the look's planned count; Δ and the repeated interval (ci_low, ci_high) in
points of accuracy; `statistic` the paired t, `boundary` its |t| boundary, `spent_alpha` the
difference test's α spent by this look; the TOST interval and boundary; the decisions; the
verdict; `not_seeds`: seeds below this look of either arm that failed, stopped or were lost
(`not_seeds_list` names each with its side and why, in the runs table's words: `3 (treatment: lost)`)."""


def looks_path(root: str, experiment: str) -> str:
    """Where an experiment's looks table lies (a path on the root's filesystem)."""
    _, base = filesystem(root)
    return f"{base}/{TABLE}/experiment={experiment}/looks.parquet"


def write_looks(root: str, experiment: str, rows: list[dict]) -> str:
    """Write the experiment's looks table whole (atomically); returns its path. A row's key the
    table does not have is a ValueError naming it."""
    names = set(LOOKS_SCHEMA.names)
    for row in rows:
        extra = set(row) - names
        if extra:
            raise ValueError(f"the looks table has no column {', '.join(sorted(extra))} (row of {row.get('claim')!r})")
    fs, _ = filesystem(root)
    table = pa.Table.from_pylist([{name: row.get(name) for name in LOOKS_SCHEMA.names} for row in rows],
                                 schema=LOOKS_SCHEMA)
    return write_parquet(table, looks_path(root, experiment), fs)
