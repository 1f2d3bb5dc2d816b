"""The options of each `psedual analyze` command: one typed config per command. `analysis.cli`
generates the command line from them (one `--field` per field, its help the field's docstring,
its choices the field's Literal type), as `psedual.typed_cli` does for every other command.

A list option (`experiment`, `where`, `by`, `metric`, `allow_diff`, `treatment`) takes one value
(`--experiment NAME`), one more per `--key+ VALUE` (`--treatment+ gru --treatment+ gcn`), or a
whole list at once (`--treatment '[gru, gcn]'`); left out, it is empty. A plain `--key` given twice
is refused (`analysis.cli.parse`): jsonargparse would keep the last value only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Literal, Union, get_args

from analysis.claims.claims import METRICS
from analysis.stats.equivalence import DEFAULT_MARGIN
from analysis.stats.margins import check_margin
from analysis.stats.multiple import METHODS, Correction
from analysis.tables.text import FORMATS, Format
from psedual.reexamine.config import BASE
from psedual.results.best import SELECT_BY
from psedual.storage import DEFAULT_ROOT

Slots = Literal["all", "used"]
Names = Union[str, Sequence[str]]
"""A list option's type: one plain value, or a list (`+` appends)."""


def _check(what: str, values: Sequence[str], valid: Sequence[str]) -> None:
    unknown = [v for v in values if v not in valid]
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(map(repr, unknown))}; valid: {', '.join(valid)}")


@dataclass(frozen=True, kw_only=True)
class AnalyzeOptions:
    """What every `analyze` command reads, and how it resamples."""

    root: str = DEFAULT_ROOT
    """Results storage: a folder or any URI Polars reads."""
    experiment: Names = ()
    """Experiments to read (`--experiment NAME`; more: `--experiment+ NAME`); none: all."""
    where: Names = ()
    """Keep the runs whose columns match, each `KEY=VALUE` (`--where+ solver=gts --where+ fold=0`)."""
    by: Names = ()
    """One cell per value of these config columns as well (`--by+ COLUMN`, repeatable)."""
    format: Format = "markdown"
    """How tables are printed."""
    resamples: int = 10_000
    """Bootstrap and permutation resamples."""
    rng_seed: int = 0
    """Seed of the resampling RNG."""
    select_by: str = SELECT_BY
    """The column whose highest value picks one trial per slot."""

    def __post_init__(self) -> None:
        for f in fields(self):  # a list option as a tuple: the options are immutable
            value = getattr(self, f.name)
            if f.type == "Names" and isinstance(value, str):  # the annotation, as a string here
                object.__setattr__(self, f.name, (value,))
            elif isinstance(value, list):
                object.__setattr__(self, f.name, tuple(value))
        _check("format", [self.format], FORMATS)


@dataclass(frozen=True, kw_only=True)
class ClaimOptions(AnalyzeOptions):
    """What every command that makes claims adds: which metrics, the correction, what may differ."""

    metric: Names = ()
    """Per-example metrics to compare: `value`, `expression` (strict) or `expression_values` (the
    published definition) (`--metric+ NAME`, repeatable); none: value."""
    correction: Correction = "holm"
    """Multiple-comparison correction over the family of this command's comparisons."""
    allow_diff: Names = ()
    """Config columns the arms may differ in, each such claim flagged (`--allow_diff+ COLUMN`,
    repeatable); any other difference is refused."""
    name: str | None = None
    """The family's name, and its claims file's; none: the command and the experiments."""
    target_delta: float | None = None
    """The Δ (points) each claim gives the seeds needed for; none: the paper's Δ for the cell,
    else 1 point."""
    margin: float = DEFAULT_MARGIN
    """The equivalence margin in points of accuracy, from 0.1 to 10 (`analysis.stats.margins`): each
    claim's TOST and posterior ask whether |Δ| < margin, and a claim whose TOST decides reads `equivalent
    within ±margin`. A margin at or above a claim's target Δ (the paper's, or --target_delta) cannot test
    it, and its verdict says so; half the target is what a sweep in rounds takes by default."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _check("metric", self.metric, tuple(METRICS))
        _check("correction", [self.correction], METHODS)
        if self.target_delta is not None and not 0 < abs(self.target_delta) < 100:
            raise ValueError(f"target_delta must be a nonzero Δ in points, within ±100; got {self.target_delta}")
        check_margin(self.margin, name="--margin")  # one line: the option, the value, the unit and the bounds


@dataclass(frozen=True, kw_only=True)
class Table1Options(ClaimOptions):
    """Paper Table 1: test accuracy, solver × {base, each PseDual variant}."""


@dataclass(frozen=True, kw_only=True)
class Table3Options(ClaimOptions):
    """Paper Table 3: teacher forcing vs scheduled fusion."""


@dataclass(frozen=True, kw_only=True)
class CompareOptions(ClaimOptions):
    """Any arm against a base, per cell (`by`; none: data.dataset and solver)."""

    arm: str = "variant"
    """The column whose values are the arms."""
    base: str = BASE
    """The reference arm."""
    treatment: Names
    """The arms compared with `base` (`--treatment+ ARM`, repeatable)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.treatment or self.base in self.treatment:
            raise ValueError(f"treatment {list(self.treatment)} must be non-empty and exclude base {self.base!r}")


Over = Literal["train_size", "epoch"]


@dataclass(frozen=True, kw_only=True)
class CurveOptions(ClaimOptions):
    """A curve per arm (PNG and table): test accuracy against the training size (the paper's
    Figure 1), or validation accuracy against the epoch (learning curves: where the arms stand)."""

    over: Over = "train_size"
    """`train_size`: each arm's test value accuracy against the training size (the runs of a
    data.train_size sweep); `epoch`: each arm's validation value accuracy by epoch, mean ± sd over
    the seeds, from the runs the claims pair (`arm`, `base`, `treatment`)."""
    png: str | None = None
    """The figure's path; none: training_size.png or learning_curve.png."""
    arm: str = "variant"
    """`over epoch`: the column whose values are the arms."""
    base: str = BASE
    """`over epoch`: the reference arm."""
    treatment: Names = ()
    """`over epoch`: the arms compared with `base` (`--treatment+ ARM`); none: every PseDual
    expression encoder present."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _check("over", [self.over], get_args(Over))
        if self.over == "train_size" and (self.treatment or self.arm != "variant" or self.base != BASE):
            raise ValueError("arm, base and treatment are for --over epoch; the training-size curve compares "
                             "every PseDual variant with base")
        if self.base in self.treatment:
            raise ValueError(f"treatment {list(self.treatment)} must exclude base {self.base!r}")

    @property
    def figure_path(self) -> str:
        return self.png or ("training_size.png" if self.over == "train_size" else "learning_curve.png")


@dataclass(frozen=True, kw_only=True)
class InfillOptions(AnalyzeOptions):
    """Infilling accuracy and perfect match per dataset, solver and variant."""

    slots: Slots = "all"
    """Score every masked slot (`all`: the paper's Table 4, 'absolute accuracy over all the masked
    numbers'), or only those the gold expression uses (`used`: ours, not the paper's metric)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _check("slots", [self.slots], get_args(Slots))


@dataclass(frozen=True, kw_only=True)
class ReportOptions(ClaimOptions):
    """The paper as one Markdown report: Tables 1-4 and Figure 1 beside the paper's figures."""

    out: str
    """Folder for report.md and figure1.png (always Markdown: `format` is not read)."""


@dataclass(frozen=True, kw_only=True)
class OptunaOptions:
    """An Optuna sweep's study: Optuna's history, per-epoch and importance plots (PNG), the best trials per arm."""

    root: str = DEFAULT_ROOT
    """Results storage: a folder or a URI (the study is `<root>/<experiment>/optuna.journal`)."""
    experiment: str
    """The experiment (the study's name)."""
    out: str | None = None
    """Folder for the PNGs; none: the experiment's folder for a local root, else ./optuna-<experiment>."""

    def __post_init__(self) -> None:
        if not self.experiment or "/" in self.experiment:
            raise ValueError(f"bad experiment name {self.experiment!r}")


@dataclass(frozen=True, kw_only=True)
class StudyOptions:
    """A grid study's report: its arms, planned claims, unplanned pairs, forest plot and learning curves."""

    space: str
    """The sweep file the study ran: its `compare:` entries are the planned comparisons."""
    experiment: str
    """The study's experiment."""
    root: str = DEFAULT_ROOT
    """Results storage: a folder or any URI Polars reads (the exploratory pairs are written beside its claims)."""
    out: str
    """Folder for report.md, forest.png and learning.png."""
    wall: str = ""
    """The job's wall time as it printed it ('50 trials in 3712 s'): the runs table does not record
    first start to last end; empty: not given."""
    resamples: int = 10_000
    """Bootstrap and permutation resamples."""

    def __post_init__(self) -> None:
        if not self.experiment or "/" in self.experiment:
            raise ValueError(f"bad experiment name {self.experiment!r}")
        if not self.space or not self.out:
            raise ValueError(f"space and out must be given (got space {self.space!r}, out {self.out!r})")
        if self.resamples < 1:
            raise ValueError(f"resamples must be a positive count; got {self.resamples}")


@dataclass(frozen=True, kw_only=True)
class LeakageOptions:
    """How much of a test score is memory: accuracy on test problems that repeat a training problem, and the rest."""

    root: str = DEFAULT_ROOT
    """Results storage: a folder or any URI Polars reads (its runs and predictions tables)."""
    experiment: str
    """The experiment whose runs are split."""

    def __post_init__(self) -> None:
        if not self.experiment or "/" in self.experiment:
            raise ValueError(f"bad experiment name {self.experiment!r}")


LIST_OPTIONS = tuple(dict.fromkeys(f.name for options in (CompareOptions, CurveOptions, InfillOptions, ReportOptions,
                                                             Table1Options, Table3Options)
                                       for f in fields(options) if f.type == "Names"))
"""The options typed `Names`, of every command: a plain one given twice is refused (`analysis.cli`)."""
