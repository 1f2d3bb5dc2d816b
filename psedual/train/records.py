"""One typed record per table row, and the Arrow schemas derived from them.

A run folder holds `epochs.parquet` (one `Epoch` per epoch), `predictions.parquet` (one
`Prediction` per test problem; an LLM run's are `LLMPrediction`s) and `metrics.parquet` (one
row of `METRICS_SCHEMA`: the run's `RunInfo`, its config's flat keys, its `RunCost`, its
`RunResult`, its `DataRecord` and, for an LLM run, its `LLMRecord` as `llm.*`). The result tables
(`psedual.results.tables`) hold the same rows, each with its trial; a runs row is a `Trial`
followed by the metrics row. Every column's type comes from its field's annotation
(`arrow_type`): a row's shape is said here and nowhere else. Rows are written through
`arrow_table`, which refuses a key its record does not have.

It sits in the train layer because the trainer writes these files; the LLM runs and the result
tables, above it, read the same records.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Annotated, Literal, Union, get_args, get_origin, get_type_hints

import pyarrow as pa
import pyarrow.parquet as pq

from psedual.train.config import TrainConfig

Int32 = Annotated[int, pa.int32()]
"""An int stored in 32 bits (epochs, slot indices, rounds), as the tables always held them."""

_SCALARS: dict[type, pa.DataType] = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string()}


def arrow_type(hint: object, name: str = "") -> pa.DataType:
    """The Arrow type of a field's resolved type: bool, int, float, str; `Annotated[X, arrow
    type]` (that type); a Literal of one of them; `X | None` (a nullable X); `tuple[X, ...]` or
    `list[X]` (a list of X). Any other type is a TypeError naming the field: a column is never
    given a guessed type."""
    origin, args = get_origin(hint), get_args(hint)
    if hint in _SCALARS:
        return _SCALARS[hint]
    if origin is Annotated and isinstance(hint.__metadata__[0], pa.DataType):
        return hint.__metadata__[0]
    if origin is Literal and len({type(a) for a in args}) == 1 and type(args[0]) in _SCALARS:
        return _SCALARS[type(args[0])]
    if origin in (Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        if len(kept) == 1:
            return arrow_type(kept[0], name)
    if (origin is list and len(args) == 1) or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return pa.list_(arrow_type(args[0], name))
    raise TypeError(f"config field {name or '?'}: no Arrow type for {hint!r}; give psedual/train/records.py a "
                    f"mapping for it")


RUN_FOLDER_ONLY = {"runs": False}
"""A field's metadata for a metrics column the runs table leaves out: `psedual analyze` would
compare it between arms as configuration (a path, an outcome count, the arm itself again)."""


def columns(record: type, prefix: str = "", runs: bool = False) -> list[pa.Field]:
    """The columns of a record's fields, in order, each named `prefix + name`; a field whose
    metadata says `column=False` is none, and with `runs` one marked `RUN_FOLDER_ONLY` neither."""
    assert is_dataclass(record), record
    hints = get_type_hints(record, include_extras=True)
    return [pa.field(prefix + f.name, arrow_type(hints[f.name], prefix + f.name)) for f in fields(record)
            if f.metadata.get("column", True) and not (runs and not f.metadata.get("runs", True))]


def values(record: object, prefix: str = "") -> dict:
    """A record's column values, named as `columns` names them."""
    return {prefix + f.name: getattr(record, f.name) for f in fields(record) if f.metadata.get("column", True)}


def config_columns() -> list[pa.Field]:
    """The columns of `TrainConfig.flat()`'s keys, typed by the config's annotations."""
    return [pa.field(k, arrow_type(t, k)) for k, t in TrainConfig.field_hints().items()]


def arrow_table(rows: list[dict], schema: pa.Schema, table: str) -> pa.Table:
    """`rows` as an Arrow table of `schema`, a key the row does not have as null. A key the
    schema does not know is a ValueError naming it and `table`: nothing is dropped unsaid."""
    known = set(schema.names)
    unknown = sorted({k for r in rows for k in r} - known)
    if unknown:
        raise ValueError(f"{table}: unknown column(s) {', '.join(unknown)}; its record (psedual/train/records.py) "
                         f"has no such field")
    return pa.Table.from_pylist([{k: r.get(k) for k in schema.names} for r in rows], schema=schema)


def read(path: Path, schema: pa.Schema) -> list[dict]:
    """The rows of a run folder's file, as `schema`'s columns: columns an older version wrote
    and the record no longer has (`out_dir`) are not read, and ones it did not yet write are null."""
    have = set(pq.read_schema(path).names)
    data = pq.read_table(path, columns=[n for n in schema.names if n in have]).to_pylist()
    return [{n: r.get(n) for n in schema.names} for r in data]


@dataclass(frozen=True)
class Epoch:
    """One epoch of a training run (`epochs.parquet`)."""

    epoch: Int32
    """1-based epoch number."""
    train_loss: float
    """Mean training loss over the epoch's problems (the solver's, plus PseDual's infilling loss)."""
    lr: float
    """The solver's learning rate at the epoch's end."""
    valid_value_acc: float
    """Validation value accuracy (the selection metric, `psedual.train.best`)."""
    valid_expr_acc: float
    """Validation expression accuracy (token for token)."""
    seconds: float
    """Wall time of the epoch's training and validation."""
    infill_loss: float | None
    """PseDual runs: mean infilling loss (else null)."""
    epsilon: float | None
    """PseDual runs: ε at the epoch's last step (else null)."""
    tau: float | None
    """PseDual runs that sample expressions: τ at the epoch's last step (else null)."""


@dataclass(frozen=True)
class Prediction:
    """One test problem of a run (`predictions.parquet`)."""

    id: str
    """The problem's stable id (`mawps:3588`)."""
    predicted: list[str]
    """The predicted prefix expression over slots and constants (empty: nothing usable)."""
    gold: list[str]
    """The gold prefix expression."""
    value_correct: bool
    """The predicted expression's value equals the answer."""
    expression_correct: bool
    """Strict: equal to the gold token for token over slot names."""
    expression_correct_values: bool
    """The published definition: equal after slots are replaced by their numbers' values."""
    infill_predicted: list[Int32] | None
    """PseDual runs: each masked slot's filling from the gold expression, as canonical slots
    (-1: unused); null where not scored."""
    infill_gold: list[Int32] | None
    """PseDual runs: each masked slot's right filling, as `infill_predicted`."""
    unscored: str | None
    """Why the problem was not decoded and so scored wrong (the solver cannot represent it:
    more numbers than its slots, more subwords than its encoder's positions); null if decoded."""


@dataclass(frozen=True)
class LLMPrediction(Prediction):
    """One test problem of a `psedual llm` run: a `Prediction` and how the model got there."""

    reply: str | None
    """The model's final reply, verbatim."""
    failure: str | None
    """Why the reply gave no usable expression; null if it did."""
    reexamined: bool | None
    """With reexamination: whether a usable solution was reexamined (else null)."""
    rounds_used: Int32 | None
    """With reexamination: re-solves used (else null)."""
    changed: bool | None
    """With reexamination: it changed the answer's value (else null)."""
    first_value_correct: bool
    """The first solution's value was right."""


@dataclass(frozen=True)
class RunInfo:
    """Which arm a run is (a metrics or runs row's first column, before the config's)."""

    variant: str
    """`base`, a PseDual expression encoder's name (`psedual.reexamine.config`), `llm` or `llm+reexamine`."""


@dataclass(frozen=True)
class RunCost:
    """How far a run went and its test step's time (after the config's columns: the guardrails
    name a differing config column before these)."""

    epochs_done: int
    """Epochs trained (0 for an LLM run)."""
    test_seconds: float | None
    """Wall time of the test evaluation (null in run folders written before it was recorded)."""


@dataclass(frozen=True)
class RunResult:
    """A run's tested result: the kept epoch's validation and its one test evaluation."""

    best_epoch: int
    """The kept epoch (best validation value accuracy); null for an LLM run."""
    valid_value_acc: float
    """Its validation value accuracy."""
    valid_expr_acc: float
    """Its validation expression accuracy."""
    test_value_acc: float
    """Test value accuracy."""
    test_expr_acc: float
    """Strict: token for token over slot names."""
    test_expr_acc_values: float
    """The published definition: equal after each slot is replaced by its number's value."""
    test_infill_acc: float | None
    """PseDual runs: share of all test slots filled right from the gold expression."""
    test_perfect_match: float | None
    """PseDual runs: share of test problems with every slot filled right."""
    test_infill_acc_used: float | None
    """PseDual runs: the same over the slots the gold expression uses (the paper's Table 4)."""
    test_perfect_match_used: float | None
    """PseDual runs: share of test problems whose used slots are all filled right."""
    final_epsilon: float | None
    """PseDual runs: ε at the run's last step."""
    final_tau: float | None
    """PseDual runs that sample expressions: τ at the run's last step."""
    train_seconds: float
    """Wall time of training (the epochs' sum); null for an LLM run."""
    out_dir: str = field(default="", metadata={"column": False})
    """The run folder (not a column: a sweep trial's is a temporary copy)."""


@dataclass(frozen=True)
class DataRecord:
    """The data a run trained and was tested on (`psedual.data.identity`, `psedual.data.stats`);
    null where a run has no such split or a table predates the column."""

    n_train: int | None
    """Training problems."""
    n_valid: int | None
    """Validation problems."""
    n_test: int | None
    """Test problems."""
    n_test_infilled: int | None
    """PseDual runs: test problems whose infilling was scored."""
    data_key: str | None
    """The cache key of the dataset's source files."""
    data_train_hash: str | None
    """Hash of the training split's ids and golds."""
    data_test_hash: str | None
    """Hash of the test split's ids and golds."""
    n_test_unscored: int | None = None
    """Test problems the solver could not represent (scored wrong)."""
    data_root: str | None = field(default=None, metadata=RUN_FOLDER_ONLY)
    """The folder the dataset was read from (run folder only: it differs between machines)."""
    data_kept: int | None = None
    """Records kept when the dataset was read."""
    data_skipped: int | None = None
    """Records skipped as bad input."""
    data_left_out: int | None = None
    """Records the run's view left out (inconsistent golds, rare constants)."""
    data_skipped_by_reason: str | None = None
    """JSON: skipped records per reason."""
    data_left_out_by_reason: str | None = None
    """JSON: left-out records per reason."""


@dataclass(frozen=True)
class LLMRecord:
    """A `psedual llm` run's settings and counts (columns `llm.<field>`; null for trained runs)."""

    model: str
    """The endpoint's model name."""
    prompt_version: str
    """The prompt files' version (`psedual.llm.run.PROMPT_VERSION`)."""
    reexamine: bool = field(metadata=RUN_FOLDER_ONLY)
    """Whether solutions were reexamined (run folder only: the runs table's `variant` says it)."""
    rounds: int
    """Re-solves allowed per problem."""
    samples: int
    """Candidate solutions drawn per problem."""
    temperature: float
    """Sampling temperature."""
    failures: int
    """Replies without a usable expression."""
    changed: int
    """Answers whose value reexamination changed."""
    changed_to_right: int = field(metadata=RUN_FOLDER_ONLY)
    """Of those, wrong at first and right at the end (run folder only)."""
    changed_to_wrong: int = field(metadata=RUN_FOLDER_ONLY)
    """Of those, right at first and wrong at the end (run folder only)."""
    calls: int
    """Requests sent to the endpoint."""
    cache_hits: int = field(metadata=RUN_FOLDER_ONLY)
    """Requests answered from the run's cache (run folder only)."""
    prompt_tokens: int
    """Prompt tokens the endpoint counted."""
    completion_tokens: int
    """Completion tokens the endpoint counted."""


@dataclass(frozen=True)
class Trial:
    """What the result tables add to a run's metrics row: which trial it was and how it ended."""

    trial: str
    """Tune's trial id, or the run folder's name (`psedual results add`)."""
    status: str
    """`completed`, `stopped` (by ASHA before its last epoch) or `error`."""
    error: str | None
    """`Type: message` of the exception that ended the trial, or null."""
    code_version: str
    """`git describe` of the code that wrote the row."""


TRIAL_COLUMN = pa.field("trial", pa.string())
EPOCHS_SCHEMA = pa.schema(columns(Epoch))
PREDICTIONS_SCHEMA = pa.schema(columns(Prediction))
LLM_PREDICTIONS_SCHEMA = pa.schema(columns(LLMPrediction))
METRICS_SCHEMA = pa.schema([*columns(RunInfo), *config_columns(), *columns(RunCost), *columns(RunResult),
                            *columns(DataRecord), *columns(LLMRecord, "llm.")])
"""A run folder's `metrics.parquet`: one row, a trained run's or an LLM run's."""
RUNS_SCHEMA = pa.schema([*columns(Trial), *columns(RunInfo), *config_columns(), *columns(RunCost),
                         *columns(RunResult), *columns(DataRecord, runs=True), *columns(LLMRecord, "llm.", runs=True)])
"""The runs table: a `Trial`, then its metrics row less the `RUN_FOLDER_ONLY` columns."""


def runs_row(metrics: dict) -> dict:
    """The runs table's columns of a metrics row (the `RUN_FOLDER_ONLY` ones stay in the run folder)."""
    return {k: v for k, v in metrics.items() if k in RUNS_SCHEMA.names}
