"""The paper's published figures (Bin et al. 2023, arXiv 2310.09590), read from
`paper_numbers.csv` with Polars, and found for a cell of our tables.

One row per published figure: the report table it belongs beside (`table1`..`table4`, `figure1`),
dataset, solver and arm in this platform's names, metric, value (%), its source, and where it was
read (`via`). A figure not in the file was not found in a source, and the report says so. The
paper's Table 1 gives one PseDual row per solver: arm `psedual` stands beside both our GRU and GCN
variants. The paper's LLM rows are ChatGPT's: solver `chatgpt` stands beside any `llm:` model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from psedual.reexamine.config import EXPRESSION_ENCODERS

PATH = Path(__file__).with_name("paper_numbers.csv")
SCHEMA = {"table": pl.String, "dataset": pl.String, "solver": pl.String, "arm": pl.String, "metric": pl.String,
          "value": pl.Float64, "source": pl.String, "via": pl.String}
TABLES = ("table1", "table2", "table3", "table4", "figure1")
METRICS = ("value", "infill_acc", "perfect_match")
PSEDUAL = "psedual"
"""the paper's PseDual row of a solver, its expression encoder not stated"""
LLM = "chatgpt"
"""the paper's LLM"""


def load(path: str | Path = PATH) -> pl.DataFrame:
    """The published figures, checked: the columns above, a known table and metric, a value in
    [0, 100], a source, and one row per cell. Anything else is a ValueError naming the file and row."""
    try:
        rows = pl.read_csv(path, schema=SCHEMA)
    except (pl.exceptions.PolarsError, OSError) as err:
        raise ValueError(f"{path}: not a paper-numbers table ({', '.join(SCHEMA)}): {' '.join(str(err).split())}") \
            from err
    for i, r in enumerate(rows.iter_rows(named=True), start=2):  # line 1 is the header
        bad = [k for k in ("table", "dataset", "solver", "arm", "metric", "source") if not r[k]]
        if bad:
            raise ValueError(f"{path}:{i}: empty {', '.join(bad)}")
        if r["table"] not in TABLES or r["metric"] not in METRICS:
            raise ValueError(f"{path}:{i}: table {r['table']!r} / metric {r['metric']!r}; valid tables: "
                             f"{', '.join(TABLES)}; metrics: {', '.join(METRICS)}")
        if r["value"] is None or not math.isfinite(r["value"]) or not 0 <= r["value"] <= 100:
            raise ValueError(f"{path}:{i}: value {r['value']} is not a percentage")
    cell = ["table", "dataset", "solver", "arm", "metric"]
    dup = rows.filter(pl.struct(cell).is_duplicated())
    if dup.height:
        raise ValueError(f"{path}: {dup.height} rows share a cell, e.g. {dup.select(cell).row(0)}")
    return rows


@dataclass(frozen=True)
class Published:
    value: float
    label: str
    """what the paper's row is, where it is not our cell exactly (e.g. `PseDual`, `ChatGPT`)"""

    def __str__(self) -> str:
        return f"{self.value:.1f}" + (f" ({self.label})" if self.label else "")


def find(numbers: pl.DataFrame, table: str, dataset: str, solver: str, arm: str, metric: str) -> Published | None:
    """The paper's figure for our cell, or None where the paper (as recorded) has none."""
    solvers = [solver, LLM] if solver.startswith("llm:") else [solver]
    arms = [arm, PSEDUAL] if arm in EXPRESSION_ENCODERS else [arm]
    for s in solvers:
        for a in arms:
            hit = numbers.filter((pl.col("table") == table) & (pl.col("dataset") == dataset) & (pl.col("solver") == s)
                                 & (pl.col("arm") == a) & (pl.col("metric") == metric))
            if hit.height:
                label = ", ".join(x for x, differs in (("ChatGPT", s != solver), ("PseDual", a != arm)) if differs)
                return Published(hit["value"][0], label)
    return None
