"""Checks that a claim compares what it says it compares, before any statistic is computed.
Each is run as a named guardrail of `registry.GUARDRAILS` (its scope says where).

- Results: a non-finite value (NaN, ±inf: a diverged run) is never a result and never wins a
  slot.
- Data: paired runs trained and tested on the same data (`n_train`, `data_train_hash`,
  `data_test_hash`, and the golds of every paired example). Tables written before the hashes
  were recorded are flagged: their data identity is not checked.
- Slots: the trials of one slot may differ only in what a sweep searched; trials that differ
  in their data are refused (add the column to the cell), and replicates (the same config and
  seed) are refused rather than the luckiest kept.
- Runs: each run against its own tables (predictions, epochs, replicate seeds): `run_checks`.
- Pooling: the runs of one arm of a cell share their config but for numbers searched within the
  slots (`check_pooled`); a choice column picked per arm by validation is refused with `--by`.
- Configs: the two arms of a claim may differ in the arm and nothing else. Every runs column
  but the records' outcomes and the execution details (`psedual.results.row.NOT_COMPARED`) is
  compared between the arms' runs: hyperparameters, epochs, training size and subset seed,
  status and epochs done, experiment, code version, an LLM's settings. When the arm is a
  column that names the arm (`variant`, `llm.reexamine`), the others differ with it and are
  not compared. A difference is refused, unless the column was searched within the slots (a
  tuned sweep: then it is flagged, with the tuning budget) or the user allowed it
  (`--allow_diff`: then it is flagged on that claim). A column null throughout one arm is that
  arm's not having the setting only where `ABSENT_BY_DESIGN` says so (`psedual.*` on base runs).
- Environment: where a run trained (`env.*`: Python, torch, CUDA, Ray, device, GPU, node) is never
  compared as config: the trials of one sweep take whichever node is free, so one arm may get
  more of one GPU type by chance. Arms whose torch, CUDA or GPU differ as sets are flagged
  (`environment_flags`), not refused.
"""

from __future__ import annotations

import math
from dataclasses import fields

import polars as pl

from psedual.reexamine.config import BASE
from psedual.results.row import ARM_COLUMNS, NOT_COMPARED, RUN_RECORDS

SHOWN_IDS = 5
SEED, FOLD = "seed", "data.fold"
"""The columns a claim pairs its arms' runs by (with the test example)."""
DATA_IDENTITY = ("n_train", "data_train_hash", "data_test_hash")
"""What paired runs must share, seed by seed and fold by fold: the data they trained and tested on."""


class GuardrailError(ValueError):
    """Two arms cannot be compared: their test examples, folds, seeds, configs or data versions do
    not line up, a slot holds replicates, a result is not finite, or a run's predictions are incomplete."""


def run_name(key: tuple[str, str]) -> str:
    return f"{key[0]}/{key[1]}"


def non_finite(value) -> bool:
    """NaN or ±inf (a diverged run's score); None is missing, not non-finite."""
    return isinstance(value, float) and not math.isfinite(value)


def _values(column: pl.Series) -> list:
    """A column's distinct values in order, a missing one last."""
    return column.drop_nulls().unique().sort().to_list() + ([None] if column.null_count() else [])


def check_slots(runs: pl.DataFrame, slot: list[str], compared: list[str]) -> None:
    """Refuse a slot whose trials trained on different data, or that holds replicates (the same
    config and seed): keeping the best of replicates by a score would cherry-pick one."""
    for part in runs.partition_by(slot, maintain_order=True):
        if part.height < 2:
            continue
        names = [run_name((e, t)) for e, t in part.select("experiment", "trial").rows()]
        where = ", ".join(f"{k}={part[k][0]}" for k in slot)
        # the data config, and what the runs recorded of their data (a missing record is no difference)
        data = {c: _values(part[c]) for c in compared if c.startswith("data.") and part[c].n_unique() > 1}
        data |= {c: _values(part[c]) for c in DATA_IDENTITY
                 if c in part.columns and part[c].drop_nulls().n_unique() > 1}
        if data:
            said = "; ".join(f"{c} {v}" for c, v in data.items())
            config = [c for c in data if c.startswith("data.")]
            fix = f"add --by+ {config[0]} (or --where+)" if config else "leave one data version out with --where+"
            raise GuardrailError(f"slot {where}: its runs {names} trained on different data ({said}); {fix} so "
                                 f"each cell holds one data version")
        seen: dict[tuple, str] = {}
        for name, row in zip(names, part.select([c for c in compared if c != "experiment"]).rows()):
            same = seen.setdefault(tuple(map(str, row)), name)
            if same != name:
                raise GuardrailError(f"slot {where}: {same} and {name} are replicates (the same config and seed); "
                                     f"keeping the better one would cherry-pick it: give each run its own seed, or "
                                     f"keep one with --where+ trial=...")


def data_flags(cell: str, pairs: list[tuple[dict, dict]], allowed: set[str]) -> list[str]:
    """Paired runs (base, treatment) must have trained and tested on the same data: a GuardrailError
    naming both where they did not (a flag where --allow_diff names the column), and a flag where
    the runs table does not record it (tables written before `data_*_hash`)."""
    flags, unknown = [], []
    for b, t in pairs:
        names = f"{run_name((b['experiment'], b['trial']))} and {run_name((t['experiment'], t['trial']))}"
        for col in DATA_IDENTITY:
            x, y = b.get(col), t.get(col)
            if x is None or y is None:
                # a zero-shot LLM run trained on nothing: only its test split has an identity
                trained = b.get("llm.model") is None or t.get("llm.model") is None
                if col == "data_test_hash" or (col == "data_train_hash" and trained):
                    unknown.append(names)
                continue
            if x != y:
                said = f"{names} trained or tested on different data: {col} {x} vs {y}"
                if col not in allowed:
                    raise GuardrailError(f"{cell}: {said}; compare runs on the same data, or pass --allow_diff+ {col} "
                                         f"to compare anyway (the claim is then flagged)")
                flags.append(f"data differs (allowed by --allow_diff): {said}")
    runs = {(r["experiment"], r["trial"]): r for pair in pairs for r in pair}
    leaked = {k: r["data_test_leaked"] for k, r in runs.items() if (r.get("data_test_leaked") or 0) > 0}
    if leaked:
        most = max(leaked.values())
        flags.append(f"leakage: up to {most} test problem(s) per run also in its training split under other ids "
                     f"({len(leaked)} of {len(runs)} runs, e.g. {run_name(next(iter(leaked)))}): the test is not wholly "
                     f"held out (psedual data stats counts them)")
    changed = sorted(run_name(k) for k, r in runs.items() if r.get("data_changed"))
    if changed:
        flags.append(f"tested on data changed since training (psedual test --allow_changed_data): "
                     f"{', '.join(changed[:3])}{', ...' if len(changed) > 3 else ''}")
    if unknown:
        shown = sorted(set(unknown))
        flags.append(f"data identity not recorded for {len(shown)} pair(s) ({'; '.join(shown[:2])}"
                     f"{', ...' if len(shown) > 2 else ''}): tables written before data_train_hash/data_test_hash; "
                     f"that the arms saw the same data is not checked (re-collect or rerun them to check it)")
    return flags


ENVIRONMENT = ("env.torch", "env.cuda", "env.gpu", "env.plm_commit", "env.precision")
"""The environment columns whose values, differing between a claim's arms, flag it: the kernels a
run used (a GPU model, a CPU run: `cpu`) and the encoder snapshot it read (the same hub id, another
commit), not the node or the device index it happened to get."""


def environment_flags(base_arm: str, treat: str, base: pl.DataFrame, other: pl.DataFrame,
                      columns: tuple[str, ...] = ENVIRONMENT) -> list[str]:
    """A flag per environment column (`columns`, default all of `ENVIRONMENT`) whose values differ between
    the arms' runs; none where either arm does not record it (tables written before the columns, LLM runs)."""
    flags = []
    for col in columns:
        a, b = _environment(base, col), _environment(other, col)
        if a and b and a != b:
            flags.append(f"environment differs (not refused: trials take the nodes that are free): {col}: "
                         f"{base_arm} {sorted(a)} vs {treat} {sorted(b)}")
    return flags


def _environment(runs: pl.DataFrame, col: str) -> set[str]:
    """The recorded values of an environment column; a run that trained on the CPU has GPU `cpu`."""
    if col not in runs.columns:
        return set()
    if col == "env.gpu" and "env.device" in runs.columns:
        return {gpu or "cpu" for gpu, device in runs.select(col, "env.device").rows() if device is not None}
    return set(runs[col].drop_nulls().to_list())


def config_columns(columns: list[str], exclude: list[str]) -> list[str]:
    """The runs table's columns the arms must share (all but the records' outcomes and the
    execution details: `psedual.results.row.NOT_COMPARED`), less `exclude` (the arm and the slot
    keys) and, where `exclude` holds a column that names the arm, the others that do."""
    skip = {*NOT_COMPARED, *exclude, *(ARM_COLUMNS if ARM_COLUMNS & set(exclude) else ())}
    return [c for c in columns if c not in skip]


def tuning(runs: pl.DataFrame, slot: list[str], compared: list[str]) -> dict[tuple, tuple[int, set[str]]]:
    """Per slot, before one run is kept: its number of trials (the tuning budget) and the config
    columns that vary among them (what was searched)."""
    out = {}
    for part in runs.partition_by(slot, maintain_order=True):
        key = tuple(part.row(0, named=True)[k] for k in slot)
        varying = {c for c in compared if part[c].n_unique() > 1}
        out[key] = (part.height, varying)
    return out


LLM_VARIANTS = ("llm", "llm+reexamine")
"""The variants of a `psedual llm` run (`psedual.llm.run.LLMConfig.variant`): no training, no PseDual."""
ABSENT_BY_DESIGN = {"psedual.": (pl.col("variant") == BASE) | pl.col("variant").is_in(LLM_VARIANTS),
                    "llm.": ~pl.col("variant").is_in(LLM_VARIANTS)}
"""Columns (by prefix) a run has no value in by design, and which runs those are: the PseDual
fields on a run without a reexamining module (`TrainConfig.flat`: all None), an LLM's settings on
a trained run. Only there is a column null throughout one arm that arm's not having the setting;
anywhere else a column missing from one arm's files is a difference like any other."""


def _absent_by_design(col: str, runs: pl.DataFrame) -> bool:
    """`col` is null in every one of `runs`, and each is a run that has no such field by design."""
    design = next((rule for prefix, rule in ABSENT_BY_DESIGN.items() if col.startswith(prefix)), None)
    return (design is not None and "variant" in runs.columns and runs[col].null_count() == runs.height
            and bool(runs.select(design.fill_null(False).all()).item()))


def _categorical(dtype: pl.DataType) -> bool:
    """A column whose values name a choice (a solver, an encoder, a flag), not a point of a range."""
    return not (dtype.is_numeric() or dtype == pl.Null)


def config_flags(cell: str, base_arm: str, treat: str, base: pl.DataFrame, other: pl.DataFrame,
                 compared: list[str], searched: set[str], allowed: set[str]) -> list[str]:
    """The flags of a claim whose arms differ in searched or allowed columns; a GuardrailError
    naming every other difference. A column null throughout one arm counts as that arm's not
    having the setting only where the record says so (`ABSENT_BY_DESIGN`: `psedual.*` on base
    runs); a choice (a solver) picked per slot by validation is no tuning but a second arm, and
    refused with the column to `--by`."""
    flags, refused, pooled = [], [], []
    for col in compared:
        a, b = set(base[col].to_list()), set(other[col].to_list())
        if a == b or _absent_by_design(col, base) or _absent_by_design(col, other):
            continue
        said = f"{col}: {base_arm} {sorted(a, key=str)} vs {treat} {sorted(b, key=str)}"
        if col in allowed:
            flags.append(f"config differs (allowed by --allow_diff): {said}")
        elif col in searched and _categorical(base.schema[col]) and col not in RECORD_COLUMNS:
            pooled.append(col)
        elif col in searched:
            flags.append(f"tuned: {said} (searched within the slots)")
        else:
            refused.append(said)
    if refused:
        first = refused[0].split(":")[0]
        raise GuardrailError(f"{cell}: the arms differ in more than {base_arm} vs {treat}: {'; '.join(refused)}; "
                             f"compare runs that differ in the arm only, or pass --allow_diff+ {first} to compare "
                             f"anyway (the claim is then flagged)")
    if pooled:
        check_pooled(cell, pl.concat([base, other], how="diagonal_relaxed"), pooled, set(), set())
    return flags


RECORD_COLUMNS = frozenset(prefix + f.name for record, prefix in RUN_RECORDS for f in fields(record))
"""The runs columns of the row records (a run's status, its code version, an LLM's settings), as
against its config's."""


def check_pooled(cell: str, runs: pl.DataFrame, compared: list[str], searched: set[str], allowed: set[str]) -> None:
    """The runs one figure is made of (one arm of a claim's cell, or an infilling row) share every
    config column and code version, but what a sweep searched among numbers (a tuned learning rate)
    and what `--allow_diff` allows: else the figure pools over two configs (two solvers, two hidden
    sizes) and is refused with the column to `--by`."""
    varied = []
    for col in compared:
        if col in allowed or (col in RECORD_COLUMNS and col != "code_version") or col == "experiment":
            continue
        if runs[col].n_unique() > 1 and not (col in searched and not _categorical(runs.schema[col])):
            varied.append(f"{col} {_values(runs[col])}")
    if varied:
        first = varied[0].split(" ")[0]
        raise GuardrailError(f"{cell}: its runs pool over {'; '.join(varied)} (runs "
                             f"{', '.join(run_name(k) for k in runs.select('experiment', 'trial').rows()[:SHOWN_IDS])}"
                             f"{', ...' if runs.height > SHOWN_IDS else ''}): one figure would mix configs; add "
                             f"--by+ {first} (or --where+), or --allow_diff+ {first} to pool anyway")


def budget(tuned: dict[tuple, tuple[int, set[str]]], slots: list[tuple]) -> int:
    """The most trials any of these slots held."""
    return max(tuned[s][0] for s in slots)


def _record_strings() -> tuple[frozenset[str], frozenset[str]]:
    """The runs columns the row records hold as strings: (optional, required). A field typed
    `... | None`, or of a record a run may lack as a whole (`llm.*` on a trained run), is optional."""
    optional, required = set(), set()
    for record, prefix in RUN_RECORDS:
        for f in fields(record):
            if f.metadata.get("column", True) and "str" in str(f.type):
                (optional if prefix or "None" in str(f.type) else required).add(prefix + f.name)
    return frozenset(optional), frozenset(required)


OPTIONAL_STRINGS, REQUIRED_STRINGS = _record_strings()


def blank_strings(runs: pl.DataFrame) -> pl.DataFrame:
    """An empty (or blank) string where the record says the field is optional is a missing value
    (`llm.model = ''` on a trained run is no LLM run); where the field is required, the run is
    refused by name."""
    for col in [c for c in runs.columns if runs.schema[c] == pl.String]:
        blank = pl.col(col).str.strip_chars() == ""
        if col in REQUIRED_STRINGS:
            empty = runs.filter(blank)
            if empty.height:
                r = empty.row(0, named=True)
                raise GuardrailError(f"{run_name((r['experiment'], r['trial']))}: {col} is an empty string "
                                     f"({empty.height} run(s)): a runs row always records it; fix or leave out the row")
        elif col in OPTIONAL_STRINGS:
            runs = runs.with_columns(pl.when(blank).then(None).otherwise(pl.col(col)).alias(col))
    return runs


def check_keys(runs: pl.DataFrame, seed: str, fold: str) -> None:
    """Every run has a seed, and within a dataset either every run has a fold or none has (a
    dataset without folds): a claim pairs runs by them."""
    for col, why in ((seed, "a claim pairs its arms' runs by seed"),):
        null = runs.filter(pl.col(col).is_null())
        if null.height:
            names = ", ".join(run_name(k) for k in null.select("experiment", "trial").rows()[:SHOWN_IDS])
            raise GuardrailError(f"{names}: no {col} (null in {null.height} run(s)): {why}; fix the row or leave "
                                 f"it out with --where+")
    for part in runs.partition_by("data.dataset"):
        null = part.filter(pl.col(fold).is_null())
        if 0 < null.height < part.height:
            names = ", ".join(run_name(k) for k in null.select("experiment", "trial").rows()[:SHOWN_IDS])
            folds = sorted(part[fold].drop_nulls().unique().to_list())
            raise GuardrailError(f"{names} has no fold but {part['data.dataset'][0]} runs beside it have folds "
                                 f"{folds}: which fold it tested is unknown; fix the row or leave it out with --where+")
