"""A run's row, built in one place: a `MetricsRow` (a run folder's `metrics.parquet`) and a
`RunsRow` (the runs table's: a `Trial`, then its metrics row), each from its typed records, and
`Tested`, what a trained run's one test evaluation returns in memory.

Every path that makes a row goes through these: a trained run's test (`psedual.train.test`), the
tables after a sweep and `psedual results add` (`psedual.results.collect`), and `psedual llm`.
The Arrow schemas are derived from these row types (`psedual.results.schema`), and so are the
runs columns a claim's arms must share (`NOT_COMPARED`). Torch-free: the analysis reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from psedual.results.records import (ENV_PREFIX, EXECUTION, LLM_PREFIX, DataRecord, Environment, Epoch, LLMRecord,
                                     LLMResult, Prediction, RunCost, RunInfo, RunResult, Trial, is_column, values)

if TYPE_CHECKING:  # an annotation only: the analysis reads this module without torch
    from psedual.train.config import TrainConfig


def _part(record: type, prefix: str = "") -> dict:
    """A row field's metadata: the record whose columns it holds, and their prefix."""
    return {"record": record, "prefix": prefix}


CONFIG = {"config": True}
"""A row field's metadata: the run's config, as its flat keys (`TrainConfig.flat()`)."""


@dataclass(frozen=True)
class MetricsRow:
    """A run's one row of metrics: the whole of its `metrics.parquet`, and its runs row without the
    trial. A trained run's comes from its test (`Tested.metrics`), an LLM run's from `psedual llm`;
    a sweep trial that was never tested has only its arm, config and cost."""

    info: RunInfo = field(metadata=_part(RunInfo))
    """Which arm the run is (the row's first column)."""
    config: Mapping[str, object] = field(metadata=CONFIG)
    """The config's columns: `TrainConfig.flat()`, or an LLM run's `llm_config`."""
    cost: RunCost = field(metadata=_part(RunCost))
    """How far it went and its test's time."""
    result: RunResult | LLMResult | None = field(default=None, metadata=_part(RunResult))
    """Its tested result; None for a trial never tested (its columns null)."""
    data: DataRecord | None = field(default=None, metadata=_part(DataRecord))
    """The data it trained and was tested on; None where unknown."""
    environment: Environment | None = field(default=None, metadata=_part(Environment, ENV_PREFIX))
    """Where it trained (`env.*`); None for an LLM run, or a folder from before it was recorded."""
    llm: LLMRecord | None = field(default=None, metadata=_part(LLMRecord, LLM_PREFIX))
    """An LLM run's settings and counts (`llm.*`); None for a trained run."""

    def __post_init__(self) -> None:
        if not all(isinstance(k, str) for k in self.config):
            raise TypeError(f"a metrics row's config columns are named by strings: {list(self.config)}")
        if isinstance(self.result, LLMResult) != (self.llm is not None) and self.result is not None:
            raise ValueError("an LLMResult goes with an LLM run's LLMRecord, and only with one")

    def values(self) -> dict:
        """The row's columns, in the order of `psedual.results.schema.METRICS_SCHEMA`."""
        out: dict = {}
        for f in fields(self):
            part = getattr(self, f.name)
            if f.metadata.get("config"):
                out.update(part)
            elif part is not None:
                out.update(values(part, f.metadata["prefix"]))
        return out


@dataclass(frozen=True)
class RunsRow:
    """One row of the runs table: which trial it was and how it ended, then its run's metrics."""

    trial: Trial = field(metadata=_part(Trial))
    """The trial (a sweep's, or a run folder's, `psedual results add`)."""
    metrics: MetricsRow = field(metadata={"row": MetricsRow})
    """Its run's metrics row."""

    def values(self) -> dict:
        """The row's columns, in the order of `psedual.results.schema.RUNS_SCHEMA`."""
        return {**values(self.trial), **self.metrics.values()}


def records_of(row: type) -> tuple[tuple[type, str], ...]:
    """The records of a row type's columns besides the config, with their prefixes, in order."""
    out: list[tuple[type, str]] = []
    for f in fields(row):
        if "row" in f.metadata:
            out += records_of(f.metadata["row"])
        elif "record" in f.metadata:
            out.append((f.metadata["record"], f.metadata["prefix"]))
    return tuple(out)


RUN_RECORDS = records_of(RunsRow)
"""The records of a runs row besides the config, with their columns' prefixes."""


def not_compared(records: tuple[tuple[type, str], ...] = RUN_RECORDS) -> frozenset[str]:
    """The runs columns a claim's arms need not share: every field of `records` not marked
    `COMPARED` or `ARM` (outcomes; the data identity, which `analysis.checks.guardrails` checks pair by
    pair; paths; the environment), and `EXECUTION`."""
    return frozenset({prefix + f.name for record, prefix in records for f in fields(record)
                      if is_column(f) and not f.metadata.get("compared")} | set(EXECUTION))


NOT_COMPARED = not_compared()
ARM_COLUMNS = frozenset(prefix + f.name for record, prefix in RUN_RECORDS for f in fields(record)
                        if f.metadata.get("arm"))
"""The columns that say which arm a run is (`variant`, `llm.reexamine`)."""


BEFORE_COLUMN = {"model.problem_vector": "final_state", "optimizer": "adam", "selection": "best"}
"""Config columns added after runs tables were committed, with the behaviour a run had before its
column existed (an option added later defaults to the behaviour before it; a test holds these equal
to `TrainConfig`'s defaults). A table written earlier reads null there: labels show the value with
`(not recorded)` (`before_column`), so a reader sees the setting and that it was inferred."""


def before_column(column: str, value: object) -> str:
    """`value` as a label shows it: a null in a column of `BEFORE_COLUMN` is the behaviour before it."""
    if value is None and column in BEFORE_COLUMN:
        return f"{BEFORE_COLUMN[column]} (not recorded)"
    return str(value)


def llm_config(model: str, dataset: str, fold: int | None) -> dict:
    """The config columns an LLM run fills: its solver `llm:<model>`, seed 0 (one pass, its
    sampling seeded by the endpoint if at all) and its data; it has no other config."""
    return {"solver": f"llm:{model}", "seed": 0, "data.dataset": dataset, "data.fold": fold}


@dataclass(frozen=True)
class Tested:
    """A trained run's one test evaluation (`psedual.train.test.test_run`, in the process that
    trained it or in a Ray task after a sweep), returned in memory: the run folder's metrics row,
    and the epochs and predictions tables' rows, as records."""

    config: TrainConfig
    """The config the run trained with (its folder's `config.json`)."""
    result: RunResult
    """The kept epoch's validation and the test's scores."""
    cost: RunCost
    """Epochs trained (its epochs table's rows) and the test's time."""
    data: DataRecord
    """The data it trained and was tested on, and whether they changed since."""
    epochs: tuple[Epoch, ...]
    """Its epochs table, in epoch order."""
    predictions: tuple[Prediction, ...]
    """One per test problem, in the test split's order."""
    environment: Environment | None
    """Where it trained; None for a folder from before it was recorded."""

    def __post_init__(self) -> None:
        if len(self.epochs) != self.cost.epochs_done:
            raise ValueError(f"a test of {self.cost.epochs_done} epochs holds {len(self.epochs)} epoch rows")
        if self.result.best_epoch not in {e.epoch for e in self.epochs}:
            raise ValueError(f"best epoch {self.result.best_epoch} is not among the run's epochs")
        if self.data.n_test is not None and len(self.predictions) != self.data.n_test:
            raise ValueError(f"{len(self.predictions)} predictions for {self.data.n_test} test problems")

    def metrics(self) -> MetricsRow:
        """The run's metrics row."""
        return MetricsRow(RunInfo(self.config.variant), self.config.flat(), self.cost, self.result, self.data,
                          self.environment)
