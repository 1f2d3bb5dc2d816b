"""The typed record of each table row's parts.

A run folder holds `epochs.parquet` (one `Epoch` per epoch), `predictions.parquet` (one
`Prediction` per test problem; an LLM run's are `LLMPrediction`s) and `metrics.parquet` (one
`psedual.results.row.MetricsRow`: which arm the run is, its config's flat keys, its `RunCost`,
its `RunResult` (an LLM run's `LLMResult`), its `DataRecord`, the `Environment` it trained in as
`env.*` and, for an LLM run, its `LLMRecord` as `llm.*`). The result tables hold the same rows,
each with its trial; a runs row is a `Trial` followed by the metrics row. The Arrow schemas are
derived from these records in `psedual.results.schema`.

A runs row's record fields are outcomes (a score, a count, a time, the data a run read) unless
marked `COMPARED` or `ARM`: `psedual analyze` compares only the config and those between the
arms of a claim (`psedual.results.row.NOT_COMPARED`), so a new outcome field is never compared
as if it were config. The environment (`env.*`) is not compared either: the trials of one sweep
land on whichever node is free, and two arms that differ only in the GPU or the patch release
they happened to get are still one comparison (`analysis.checks.guardrails.environment_flags` says so
on the claim instead). This module imports neither torch nor the config, so the analysis reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Annotated, TypeVar

import pyarrow as pa

Int32 = Annotated[int, pa.int32()]
"""An int stored in 32 bits (epochs, slot indices, rounds), as the tables always held them."""

COMPARED = {"compared": True}
"""A field's metadata for a runs column that, like the config, the arms of a claim must share
(a different code version or a run stopped early is a confound, not a result)."""
ARM = {"compared": True, "arm": True}
"""A field's metadata for a runs column that says which arm a run is, as `variant` does: when a
claim's arm is one of them, the others differ with it by definition and are not compared."""
EXECUTION = ("threads", "device")
"""Config fields that change how a run executes, not what it is (the summation order and
kernels; `precision` is compared): not compared between arms."""


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
    """Validation value accuracy (the selection metric, `psedual.results.best`)."""
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

    variant: str = field(metadata=ARM)
    """`base`, a PseDual expression encoder's name (`psedual.reexamine.config`), `llm` or `llm+reexamine`."""


@dataclass(frozen=True)
class RunCost:
    """How far a run went and its test step's time (after the config's columns: the guardrails
    name a differing config column before these)."""

    epochs_done: int = field(metadata=COMPARED)
    """Epochs trained (0 for an LLM run)."""
    test_seconds: float | None
    """Wall time of the test evaluation (null in run folders written before it was recorded)."""


@dataclass(frozen=True)
class RunResult:
    """A run's tested result: the kept epoch's validation and its one test evaluation."""

    best_epoch: int
    """The kept epoch (best validation value accuracy)."""
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
    """PseDual runs: share of all test slots filled right from the gold expression (the paper's
    Table 4 "Acc", over all masked numbers)."""
    test_perfect_match: float | None
    """PseDual runs: share of test problems with every slot filled right."""
    test_infill_acc_used: float | None
    """PseDual runs: the same over the slots the gold expression uses only."""
    test_perfect_match_used: float | None
    """PseDual runs: share of test problems whose used slots are all filled right."""
    final_epsilon: float | None
    """PseDual runs: ε at the run's last step."""
    final_tau: float | None
    """PseDual runs that sample expressions: τ at the run's last step."""
    train_seconds: float
    """Wall time of training (the epochs' sum)."""
    out_dir: str = field(default="", metadata={"column": False})
    """The run folder (not a column: a sweep trial's is a temporary copy)."""


@dataclass(frozen=True)
class LLMResult:
    """A `psedual llm` run's tested result: its test accuracies. It has no epochs, no validation
    split and no infiller, so its runs row's other `RunResult` columns are null."""

    test_value_acc: float
    """Test value accuracy."""
    test_expr_acc: float
    """Strict: token for token over slot names."""
    test_expr_acc_values: float
    """The published definition: equal after each slot is replaced by its number's value."""

    def __post_init__(self) -> None:
        bad = {f.name: getattr(self, f.name) for f in fields(self) if not 0.0 <= getattr(self, f.name) <= 1.0}
        if bad:
            raise ValueError(f"an LLM result's accuracies are shares in [0, 1]: {bad}")


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
    data_root: str | None = None
    """The folder the dataset was read from (it differs between machines)."""
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
    data_test_leaked: int | None = None
    """Test problems whose normalised text and gold also occur in the training split under another
    id (`data.splits.leaked`): analysis flags a claim on runs that have any."""
    data_changed: bool | None = None
    """True where `psedual test --allow_changed_data` tested the run on data other than it was
    trained and tested on (its splits' hashes differed); analysis flags such a claim."""


CPU_BUILD = "none"
"""`Environment.cuda` of a torch built without CUDA (null is a table written before the column)."""
NOT_INSTALLED = "none"
"""`Environment.ray` where Ray is not installed (the trainer runs without it)."""


@dataclass(frozen=True)
class Environment:
    """Where and with what a trained run trained (columns `env.<field>`), as the process that
    trained it saw them at its (last) start: a trial resumed on another node records that node.
    Null throughout in tables written before the columns, and for an LLM run. Not compared between
    the arms of a claim (see the module's docstring)."""

    python: str
    """The Python version (`platform.python_version()`)."""
    torch: str
    """torch's version (`torch.__version__`, with its build tag: `2.7.1+cpu`)."""
    cuda: str
    """The CUDA torch was built for (`torch.version.cuda`), or `none` for a CPU build."""
    ray: str
    """Ray's installed version, or `none` (the trainer runs without Ray)."""
    device: str
    """The device the run trained on, as resolved (`cpu`, `cuda:0`), never `auto`."""
    gpu: str | None
    """That device's GPU model (`NVIDIA A10G`) when it is a GPU, else null."""
    node: str
    """The host name of the node it trained on (rank 0's, under DDP)."""
    plm_commit: str | None = None
    """The commit of the hub snapshot its pretrained encoder was read from (`model.plm` a hub id;
    `encoder.json` in the run folder); null for a folder, the shipped MiniLM or no encoder."""
    precision: str | None = None
    """The precision its steps ran at, resolved (`fp32`, `bf16`): the config's `auto` (a recipe's)
    is chosen by solver and device (`recipe_table.precision_for`), so the table keeps the outcome;
    null in tables written before the column."""

    def __post_init__(self) -> None:
        if self.precision not in (None, "fp32", "bf16"):
            raise ValueError(f"env.precision {self.precision!r}: the precision a run trained at, resolved (fp32, bf16)")
        if self.device == "auto" or not self.device:
            raise ValueError(f"env.device {self.device!r}: the device a run trained on, resolved (cpu, cuda:0)")
        if (self.gpu is not None) != self.device.startswith("cuda"):
            raise ValueError(f"env.gpu {self.gpu!r} with env.device {self.device!r}: a GPU's name goes with a CUDA "
                             "device and only with one")
        optional = ("gpu", "plm_commit", "precision")
        empty = [f.name for f in fields(self) if f.name not in optional and not getattr(self, f.name)]
        if empty:
            raise ValueError(f"env: empty {', '.join(empty)} (say `none` where a package is absent)")


@dataclass(frozen=True)
class LLMRecord:
    """A `psedual llm` run's settings and counts (columns `llm.<field>`; null for trained runs)."""

    model: str = field(metadata=COMPARED)
    """The endpoint's model name."""
    prompt_version: str = field(metadata=COMPARED)
    """The prompt files' version (`psedual.llm.run.PROMPT_VERSION`)."""
    reexamine: bool = field(metadata=ARM)
    """Whether solutions were reexamined (the arm `llm+reexamine`, as `variant` says)."""
    rounds: int = field(metadata=COMPARED)
    """Re-solves allowed per problem."""
    samples: int = field(metadata=COMPARED)
    """Candidate solutions drawn per problem."""
    temperature: float = field(metadata=COMPARED)
    """Sampling temperature."""
    failures: int
    """Replies without a usable expression."""
    changed: int
    """Answers whose value reexamination changed."""
    changed_to_right: int
    """Of those, wrong at first and right at the end."""
    changed_to_wrong: int
    """Of those, right at first and wrong at the end."""
    calls: int
    """Requests sent to the endpoint."""
    cache_hits: int
    """Requests answered from the run's cache."""
    prompt_tokens: int
    """Prompt tokens the endpoint counted."""
    completion_tokens: int
    """Completion tokens the endpoint counted."""


STATUSES = ("completed", "stopped", "error", "lost")
"""How a trial ended, as the runs table's `status` says: all its epochs; stopped by the scheduler
(ASHA) before its last; failed by itself; or its node died under it and its retries were spent (its
`error` names the node and when; `--resume` reruns it)."""
FAILED = ("error", "lost")
"""The statuses of a trial that did not finish: no result, whatever its checkpoint's test scored."""


@dataclass(frozen=True)
class Trial:
    """What the result tables add to a run's metrics row: which trial it was and how it ended."""

    trial: str
    """Tune's trial id, or the run folder's name (`psedual results add`)."""
    status: str = field(metadata=COMPARED)
    """One of `STATUSES`: `completed`, `stopped` (by ASHA before its last epoch), `error` or `lost`
    (its node died under it)."""
    error: str | None
    """`Type: message` of the exception that ended the trial (a lost node's: `NodeLost: node ID
    (ADDRESS) lost at TIME UTC after epoch N of M ...`), or null."""
    code_version: str = field(metadata=COMPARED)
    """`git describe` of the code that wrote the row."""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"trial {self.trial}: status {self.status!r} is none the runs table records; valid: "
                             f"{', '.join(STATUSES)}")


ENV_PREFIX = "env."
"""The prefix of the `Environment` columns."""
LLM_PREFIX = "llm."
"""The prefix of the `LLMRecord` columns."""


def is_column(f) -> bool:
    """Whether a record's field is a column (`out_dir` is not: a sweep trial's is a temporary copy)."""
    return f.metadata.get("column", True)


def values(record: object, prefix: str = "") -> dict:
    """A record's column values, each named `prefix + field`."""
    return {prefix + f.name: getattr(record, f.name) for f in fields(record) if is_column(f)}


R = TypeVar("R")


def from_values(record: type[R], row: Mapping, prefix: str = "") -> R:
    """The record whose columns `row` holds (a column the row lacks, as an older table's, as null):
    what `values` wrote, read back into its type."""
    return record(**{f.name: row.get(prefix + f.name) for f in fields(record) if is_column(f)})


def _percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def result_line(result: RunResult, control: str | None = None) -> str:
    """One line of a run's result: accuracies (both expression definitions), infilling (all and
    used slots), the final ε and τ, training time. `control` is the run's `psedual.control`: under
    `no_expression` the infiller reads no expression, so ε and τ (which mix and sample one) are
    named unused, not printed as if they had shaped the run."""
    line = (f"best epoch {result.best_epoch}: valid value {_percent(result.valid_value_acc)} "
            f"expr {_percent(result.valid_expr_acc)} | test value {_percent(result.test_value_acc)} "
            f"expr {_percent(result.test_expr_acc)} (by values, the paper's definition: "
            f"{_percent(result.test_expr_acc_values)})")
    if result.final_epsilon is not None:
        tau = "unused" if result.final_tau is None else f"{result.final_tau:.4g}"
        line += (f" | infilling {_percent(result.test_infill_acc)} perfect match {_percent(result.test_perfect_match)}"
                 f" (used slots {_percent(result.test_infill_acc_used)} / {_percent(result.test_perfect_match_used)})"
                 + (" | ε, τ unused (control no_expression: the infiller reads no expression)"
                    if control == "no_expression" else f" | final ε {result.final_epsilon:.4g} τ {tau}"))
    return f"{line} | {result.train_seconds:.0f} s training | {result.out_dir}"
