"""A run's folder: the one list of the files a run writes (`FILES`), and their writing and reading.

`psedual train --out` writes a trained run's folder (its training files, then its test's), a sweep
trial trains in a temporary one whose training files travel in each Ray checkpoint (`CHECKPOINT`,
derived from `FILES`: a file added to a run is never left out of its checkpoint, as data.json once
was), and `psedual llm` writes an LLM run's. The trainer's `.pt` files are written and read by
`psedual.train.checkpoint` (torch); their names and every other file's shape are here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import pyarrow as pa

from psedual.atomic import write_parquet
from psedual.results.best import best_epoch
from psedual.results.records import (ENV_PREFIX, LLM_PREFIX, DataRecord, Environment, Epoch, LLMPrediction,
                                     LLMRecord, LLMResult, RunCost, RunInfo, RunResult, from_values, values)
from psedual.results.row import MetricsRow, Tested
from psedual.results.schema import (EPOCHS_SCHEMA, LLM_PREDICTIONS_SCHEMA, METRICS_SCHEMA, PREDICTIONS_SCHEMA,
                                    arrow_table, config_columns, read)
from psedual.train.config import TrainConfig


@dataclass(frozen=True)
class RunFile:
    """One file of a run folder."""

    name: str
    """Its name in the folder."""
    what: str
    """What it holds."""
    trained: Literal["training", "test"] | None
    """When a trained run writes it: while it trains (so a sweep trial's checkpoint holds it), or at
    its test; None if it never does."""
    llm: bool
    """Whether a `psedual llm` run writes it."""

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or not self.what:
            raise ValueError(f"a run file needs a plain name and what it holds: {self}")
        if self.trained is None and not self.llm:
            raise ValueError(f"{self.name}: a run file is written by a trained run, an LLM run or both")


CONFIG, DATA, ENV, ENCODER, EPOCHS, BEST, LAST, PREDICTIONS, METRICS, CACHE = (
    "config.json", "data.json", "env.json", "encoder.json", "epochs.parquet", "best.pt", "last.pt",
    "predictions.parquet", "metrics.parquet", "cache.sqlite")
FILES = (
    RunFile(CONFIG, "the run's config (`TrainConfig`, as JSON; an LLM run's settings under `llm`)", "training", True),
    RunFile(DATA, "what the run read and left out (`data.stats.summary`), and the identity of its splits, which "
            "its test must find again (`data.identity.splits_identity`)", "training", False),
    RunFile(ENV, "where it trained (`Environment`)", "training", False),
    RunFile(ENCODER, "a pretrained encoder's name, folder and hub commit (`solvers.hub`); only a solver that reads "
            "subwords writes it", "training", False),
    RunFile(EPOCHS, "one `Epoch` per epoch trained", "training", False),
    RunFile(BEST, "the kept epoch's weights (`psedual.results.best`), which its test evaluates", "training", False),
    RunFile(LAST, "the last epoch's weights, optimiser, schedules, RNG states and history: what resumes it",
            "training", False),
    RunFile(PREDICTIONS, "one `Prediction` per test problem (an LLM run's: `LLMPrediction`)", "test", True),
    RunFile(METRICS, "its one `MetricsRow`", "test", True),
    RunFile(CACHE, "an LLM run's replies, so that a rerun asks the endpoint nothing twice", None, True),
)
"""Every file a run writes, in the order a trained run writes them."""
CHECKPOINT = tuple(f.name for f in FILES if f.trained == "training")
"""What a sweep trial's checkpoint holds: every file its training writes (what resumes it, and
what its test after the sweep reads)."""
TEST_NEEDS = (CONFIG, EPOCHS, BEST)
"""The files a test cannot do without (a folder from before data.json and env.json is tested,
saying what it cannot check)."""
FINISHED = (CONFIG, EPOCHS, PREDICTIONS, METRICS)
"""What `psedual results add` reads of a finished folder (an LLM run's has no epochs)."""


def write_rows(rows: list[dict], path: Path, schema: pa.Schema) -> None:
    """Write `rows` to `path` as `schema`, atomically; a key the schema does not know is refused,
    naming the file."""
    write_parquet(arrow_table(rows, schema, str(path)), path)


@dataclass(frozen=True)
class RunFolder:
    """A run's folder: each of its `FILES` written and read here."""

    path: Path
    """The folder."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))  # a str is taken as the path it names

    def file(self, name: str) -> Path:
        """The path of one of `FILES`."""
        if name not in {f.name for f in FILES}:
            raise ValueError(f"{name!r} is no run file; a run writes {', '.join(f.name for f in FILES)}")
        return self.path / name

    def missing(self, names: Sequence[str]) -> list[str]:
        """Those of `names` the folder does not hold, in their order."""
        return [n for n in names if not self.file(n).is_file()]

    # ---- a trained run: written while it trains (rank 0), then by its test ----------------------

    def start(self, config: TrainConfig, data: dict, environment: Environment, encoder: dict | None = None) -> None:
        """Before the first epoch (and at each resumption): the config, what the run reads, where it
        trains and, for a solver with a pretrained encoder, which encoder (`encoder`)."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.file(CONFIG).write_text(json.dumps(asdict(config), indent=2))
        self.file(DATA).write_text(json.dumps(data, indent=2))
        self.file(ENV).write_text(json.dumps(asdict(environment), indent=2))
        if encoder is not None:
            self.file(ENCODER).write_text(json.dumps(encoder, indent=2))

    def write_epochs(self, epochs: Sequence[Epoch]) -> None:
        write_rows([values(e) for e in epochs], self.file(EPOCHS), EPOCHS_SCHEMA)

    def write_tested(self, tested: Tested) -> None:
        """A test's predictions, then its metrics row (a folder with metrics has its predictions)."""
        write_rows([values(p) for p in tested.predictions], self.file(PREDICTIONS), PREDICTIONS_SCHEMA)
        write_rows([tested.metrics().values()], self.file(METRICS), METRICS_SCHEMA)

    def config(self) -> TrainConfig:
        """Its `config.json`, or one line naming it and what is wrong (not JSON, not an object, a
        field of the wrong type), never a traceback from deep inside the config's checks."""
        path = self.file(CONFIG)
        try:
            return TrainConfig.from_dict(self._json_object(CONFIG))
        except (OSError, UnicodeDecodeError) as err:
            raise ValueError(f"{path}: cannot read the run's config ({type(err).__name__}: {err})") from None
        except (ValueError, TypeError, KeyError, AttributeError) as err:  # json's, and the config's own checks
            raise ValueError(f"{path}: not a run's config ({type(err).__name__}: {str(err)[:200]})") from None

    def holds_data_record(self) -> bool:
        """Whether it has a data.json (a link to nothing counts: reading it says what is wrong)."""
        return self.file(DATA).exists() or self.file(DATA).is_symlink()

    def recorded_identity(self) -> dict[str, str] | None:
        """The splits' identity its data.json records; None for a run from before it did. A
        data.json that cannot be read, or whose identity is not what a run writes, is a ValueError
        saying why (the caller names the file)."""
        try:
            recorded = json.loads(self.file(DATA).read_text(encoding="utf-8"))
            recorded = recorded["identity"] if isinstance(recorded, dict) and "identity" in recorded else (
                None if isinstance(recorded, dict) else recorded)
            if recorded is not None and not (isinstance(recorded, dict)
                                             and all(isinstance(recorded.get(k), str) for k in ("train", "test"))):
                raise ValueError(f"its identity is {str(recorded)[:80]!r}, not the train and test hashes a run writes")
        except (OSError, ValueError) as err:  # a folder, unreadable, not JSON, a foreign identity
            raise ValueError(f"{type(err).__name__}: {str(err)[:160]}") from None
        return recorded

    def epochs(self) -> tuple[Epoch, ...]:
        """Its epochs table, in epoch order; one line naming the file where it is not one."""
        path = self.file(EPOCHS)
        try:
            epochs = tuple(sorted((from_values(Epoch, row) for row in read(path, EPOCHS_SCHEMA)), key=lambda e: e.epoch))
            best_epoch(values(e) for e in epochs)  # a table whose kept epoch cannot be told is none
            return epochs
        except (OSError, ValueError, TypeError) as err:  # pyarrow's errors (and nulls met) name no file
            raise ValueError(f"{path}: not a run's epoch table ({type(err).__name__}: "
                             f"{str(err).splitlines()[0][:200] if str(err) else ''})") from None

    def environment(self) -> Environment | None:
        """Where it trained; None for a folder trained before env.json was written."""
        path = self.file(ENV)
        return Environment(**json.loads(path.read_text())) if path.is_file() else None

    # ---- a finished folder, as `psedual results add` reads it --------------------------------------

    def is_llm(self) -> bool:
        """Whether it is a `psedual llm` run's (its config.json holds `llm`)."""
        return self.file(CONFIG).is_file() and "llm" in self._json_object(CONFIG)

    def require_finished(self) -> None:
        """FileNotFoundError naming what a finished run folder lacks."""
        llm = self.is_llm()
        missing = self.missing([f.name for f in FILES if f.name in FINISHED and (f.llm or not llm)])
        if missing:
            raise FileNotFoundError(f"{self.path}: not a finished run folder (missing {', '.join(missing)})")

    def metrics(self) -> MetricsRow:
        """Its metrics row, as its records: a trained run's arm and config from its config.json
        (older metrics lack the arm) and its epochs done from its epochs table."""
        row, = read(self.file(METRICS), METRICS_SCHEMA)
        cost = from_values(RunCost, row)
        if self.is_llm():
            info, config = RunInfo(row["variant"]), {f.name: row[f.name] for f in config_columns()}
            result: RunResult | LLMResult = from_values(LLMResult, row)
            llm = from_values(LLMRecord, row, LLM_PREFIX)
        else:
            trained = self.config()
            info, config, llm = RunInfo(trained.variant), trained.flat(), None
            result = from_values(RunResult, row)
            cost = RunCost(len(self.epochs()), cost.test_seconds)
        environment = from_values(Environment, row, ENV_PREFIX) if row[ENV_PREFIX + "device"] is not None else None
        return MetricsRow(info, config, cost, result, from_values(DataRecord, row), environment, llm)

    def predictions(self) -> list[dict]:
        """Its predictions' scored columns (an LLM run's replies stay in its folder)."""
        return read(self.file(PREDICTIONS), PREDICTIONS_SCHEMA)

    # ---- an LLM run ---------------------------------------------------------------------------------

    def write_llm(self, settings: dict, predictions: Sequence[LLMPrediction], metrics: MetricsRow) -> None:
        """An LLM run's predictions, metrics row and settings."""
        write_rows([values(p) for p in predictions], self.file(PREDICTIONS), LLM_PREDICTIONS_SCHEMA)
        write_rows([metrics.values()], self.file(METRICS), METRICS_SCHEMA)
        self.file(CONFIG).write_text(json.dumps({"llm": settings}, indent=2))

    def _json_object(self, name: str) -> dict:
        raw = json.loads(self.file(name).read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise TypeError(f"an object of options, found a {type(raw).__name__}")
        return raw

