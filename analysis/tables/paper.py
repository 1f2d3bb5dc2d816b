"""The paper's published figures (Bin et al. 2023, arXiv 2310.09590), read from
`paper_numbers.csv` with Polars, and found for a cell of our tables.

`paper_numbers.csv` is made from the paper's own transcription, `../shared/paper/figures.csv` (all
159 figures of its Tables 1-4, one row each, read from `paper.tex`), by

    python -m analysis.tables.paper --sync      # rewrite paper_numbers.csv from ../shared/paper/figures.csv
    python -m analysis.tables.paper --check     # exit 1 if they differ (tests/test_analysis_report.py does this)

so the package carries the figures where `shared/` is not beside the checkout. The sync only renames
the paper's rows into this platform's names (`NAMES`): Table 1's `reproduced` rows (the authors' rerun
without PseDual, the comparison the paper draws) become arm `base`, its `reported` rows (the
solver's own paper) stay `reported` and stand beside our base as a second figure; GRU and GCN rows
stay apart (`gru`, `gcn`); the paper's expression accuracy (by values) is metric `expression_values`;
Table 3's scheduled fusion is our `scheduled`; Table 4's rows (infilling from the gold expression,
encoder not stated) are arm `psedual`, set beside both our GRU and GCN. The paper's LLM rows are
ChatGPT's: solver `chatgpt` stands beside any `llm:` model. Figure 1 is an image not in the source:
no figure of it is known.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from psedual.reexamine.config import BASE, EXPRESSION_ENCODERS

PATH = Path(__file__).with_name("paper_numbers.csv")
SOURCE = Path(__file__).resolve().parents[1].parent / "shared" / "paper" / "figures.csv"
"""the paper's transcription, `../shared/paper/figures.csv` beside the checkout"""
SCHEMA = {"table": pl.String, "dataset": pl.String, "solver": pl.String, "arm": pl.String, "metric": pl.String,
          "value": pl.Float64, "source": pl.String, "via": pl.String}
SOURCE_SCHEMA = {"table": pl.String, "dataset": pl.String, "solver": pl.String, "arm": pl.String,
                 "metric": pl.String, "value": pl.Float64, "note": pl.String}
TEST_PROBLEMS: dict[str, dict[int | None, int]] = {
    "math23k": {None: 1000}, "svamp": {None: 1000}, "mathqa": {None: 2410}, "mawps-single": {None: 199},
    "mawps": {0: 397, 1: 397, 2: 397, 3: 397, 4: 399},
}
"""Each benchmark's test problems, per fold (None: no folds), as the platform reads them (the data is not
loaded here: tests/test_protocol.py keeps them equal to the loaded benchmarks)."""


def benchmark_size(dataset: str) -> int | None:
    """A benchmark's test problems over all its folds (MAWPS: 1,987); None for one the platform does not list."""
    return sum(TEST_PROBLEMS.get(dataset, {}).values()) or None


TABLES = ("table1", "table2", "table3", "table4", "figure1")
METRICS = ("value", "expression_values", "infill_acc", "perfect_match")
PSEDUAL = "psedual"
"""the paper's PseDual row where its expression encoder is not stated (Table 4)"""
REPORTED = "reported"
"""Table 1's figure from the solver's own paper, set beside our base as a second figure"""
LLM = "chatgpt"
"""the paper's LLM"""
TABLE3_ENCODER = "gcn"
"""the expression encoder of every Table 3 row"""
NAMES = {
    "arm": {"reproduced": BASE, "scheduled_fusion": "scheduled", "gold_expression": PSEDUAL},
    "metric": {"expression": "expression_values"},
}
"""the paper's names (figures.csv) that differ from this platform's, per column"""
NO_FIGURES = {"figure1": "Figure 1 is an image not in the paper's source (paper.tex); only its training sizes "
                         "(3,000-20,000 Math23K problems) are known"}
"""the tables of ours with no published figure, and why"""
_ARM_WORDS = {"reported": "as reported in the solver's own paper", "reproduced": "reproduced by the authors, "
              "without PseDual", "gru": "+ PseDual, GRU expression encoder", "gcn": "+ PseDual, GCN expression "
              "encoder", "teacher_forcing": "+ PseDual (GCN), teacher forcing", "scheduled_fusion": "+ PseDual (GCN), "
              "scheduled fusion", "gold_expression": "+ PseDual, infilling from the gold expression", "llm": "alone",
              "llm+reexamine": "with reexamination"}
_METRIC_WORDS = {"value": "value accuracy", "expression": "expression accuracy", "infill_acc": "infilling accuracy",
                 "perfect_match": "perfect-match ratio"}


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


def from_source(source: str | Path = SOURCE) -> pl.DataFrame:
    """`paper_numbers.csv`'s rows made from the paper's `figures.csv`: its rows in its order, renamed
    into this platform's names (`NAMES`), each with the sentence that says what it is."""
    try:
        rows = pl.read_csv(source, schema=SOURCE_SCHEMA)
    except (pl.exceptions.PolarsError, OSError) as err:
        raise ValueError(f"{source}: not the paper's figures table ({', '.join(SOURCE_SCHEMA)}): "
                         f"{' '.join(str(err).split())}") from err
    out = []
    for i, r in enumerate(rows.iter_rows(named=True), start=2):
        unknown = [f"{k} {r[k]!r}" for k, words in (("arm", _ARM_WORDS), ("metric", _METRIC_WORDS))
                   if r[k] not in words]
        if unknown:
            raise ValueError(f"{source}:{i}: unknown {', '.join(unknown)}; known arms: {', '.join(_ARM_WORDS)}; "
                             f"metrics: {', '.join(_METRIC_WORDS)}")
        number = r["table"].removeprefix("table")
        out.append({**{k: NAMES.get(k, {}).get(r[k], r[k]) for k in ("table", "dataset", "solver", "arm", "metric")},
                    "value": r["value"],
                    "source": f"Bin et al. 2023 (arXiv 2310.09590), Table {number}: {r['solver']} "
                              f"{_ARM_WORDS[r['arm']]}, {r['dataset']} {_METRIC_WORDS[r['metric']]}",
                    "via": f"shared/paper/figures.csv line {i}, transcribed from paper.tex: {r['note']}"})
    return pl.DataFrame(out, schema=SCHEMA)


def render(numbers: pl.DataFrame) -> str:
    """The CSV text of `numbers` as `paper_numbers.csv` holds it."""
    return numbers.write_csv()


@dataclass(frozen=True)
class Published:
    value: float
    label: str
    """what the paper's row is, where it is not our cell exactly (e.g. `PseDual`, `ChatGPT`, `GCN`)"""
    cells: tuple[tuple[str, str, str, str, str], ...] = ()
    """the rows of `paper_numbers.csv` (table, dataset, solver, arm, metric) this figure shows"""
    reported: float | None = None
    """Table 1's figure from the solver's own paper, beside our base"""

    def __str__(self) -> str:
        text = number(self.value) + (f" ({self.label})" if self.label else "")
        return text + ("" if self.reported is None else f"; own paper {number(self.reported)}")


def number(value: float) -> str:
    """As the paper prints it: one decimal (Tables 1-3) or two (Table 4)."""
    return f"{value:.1f}" if round(value, 1) == value else f"{value:.2f}"


def _lookup(numbers: pl.DataFrame, key: tuple[str, str, str, str, str]) -> float | None:
    hit = numbers.filter(pl.all_horizontal(pl.col(c) == v for c, v in
                                           zip(("table", "dataset", "solver", "arm", "metric"), key)))
    return hit["value"][0] if hit.height else None


def find(numbers: pl.DataFrame, table: str, dataset: str, solver: str, arm: str, metric: str,
         encoder: str | None = None) -> Published | None:
    """The paper's figure for our cell, or None where the paper has none. `encoder`: our run's
    expression encoder, where the arm is not it (Table 3: the paper's rows are GCN's). Our strict
    expression accuracy gets the paper's (by values), labelled so. A Table 1 base the paper's Table 1
    lacks gets its Table 2 figure of the solver's own paper (RE-Deduction on SVAMP)."""
    solvers = [solver, LLM] if solver.startswith("llm:") else [solver]
    arms = [arm, PSEDUAL] if arm in EXPRESSION_ENCODERS else [arm]
    metrics = [metric, "expression_values"] if metric == "expression" else [metric]
    for s in solvers:
        for a in arms:
            for m in metrics:
                key = (table, dataset, s, a, m)
                value = _lookup(numbers, key)
                if value is None:
                    continue
                labels = [x for x, differs in (("ChatGPT", s != solver), ("PseDual", a != arm),
                                               ("by values", m != metric),
                                               ("GCN", table == "table3" and encoder not in (None, TABLE3_ENCODER)))
                          if differs]
                cells = [key]
                reported = None
                if table == "table1" and a == BASE:
                    own = (table, dataset, s, REPORTED, m)
                    reported = _lookup(numbers, own)
                    cells += [own] if reported is not None else []
                return Published(value, ", ".join(labels), tuple(cells), reported)
    if table == "table1" and arm == BASE:  # SVAMP: Table 2's RE-Deduction, as its own paper reports it
        key = ("table2", dataset, solver, REPORTED, metric)
        value = _lookup(numbers, key)
        if value is not None:
            return Published(value, "Table 2, the solver's own paper", (key,))
    return None


def delta(numbers: pl.DataFrame, table: str, dataset: str, solver: str, base: str, treatment: str, metric: str,
          encoder: str | None = None) -> float | None:
    """The paper's Δ (treatment − base, in points) for our cell, or None where it lacks either figure."""
    pair = [find(numbers, table, dataset, solver, a, metric, encoder) for a in (base, treatment)]
    return None if None in pair else round(pair[1].value - pair[0].value, 2)


def main(argv: list[str] | None = None) -> int:
    """`python -m analysis.tables.paper --sync|--check [--source FIGURES_CSV]`."""
    cli = argparse.ArgumentParser(prog="python -m analysis.tables.paper", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    what = cli.add_mutually_exclusive_group(required=True)
    what.add_argument("--sync", action="store_true", help=f"rewrite {PATH.name} from the paper's figures.csv")
    what.add_argument("--check", action="store_true", help=f"exit 1 if {PATH.name} differs from figures.csv")
    cli.add_argument("--source", default=str(SOURCE), help="the paper's figures.csv (default: %(default)s)")
    args = cli.parse_args(argv)
    try:
        made = render(from_source(args.source))
    except ValueError as err:
        print(f"python -m analysis.tables.paper: error: {err}", file=sys.stderr)
        return 2
    if args.sync:
        PATH.write_text(made, encoding="utf-8")
        load(PATH)
        print(f"{PATH}: {made.count(chr(10)) - 1} figures from {args.source}")
        return 0
    if PATH.read_text(encoding="utf-8") != made:
        print(f"{PATH} differs from {args.source}: run python -m analysis.tables.paper --sync", file=sys.stderr)
        return 1
    print(f"{PATH}: the same {made.count(chr(10)) - 1} figures as {args.source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
