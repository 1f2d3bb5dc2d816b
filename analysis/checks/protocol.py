"""How our runs' protocol differs from the paper's, said beside every paper figure (issue 52, item 6).

The paper's figures (`paper_numbers.csv`) are each solver trained at its published recipe on the
whole training split and tested on the whole test split, MAWPS over its five folds. A report that
sets a smoke-scale result (5 epochs, 350 training problems, 150 of a fold's 397 test problems) beside
such a figure, starred, reads as a replication; `differences` says what is not the paper's protocol,
from the runs' own rows:
- epochs fewer than the solver's published recipe (read from psedual/train/recipe_table.py, the
  recipes' one copy, which imports neither torch nor the solvers);
- a training subset (`data.train_size`);
- fewer test problems than the benchmark's test split (`TEST_PROBLEMS`; an LLM run's `limit`);
- fewer folds than the dataset's protocol.
The benchmarks' test sizes need the data loaded, which analysis does not: they are held in
`analysis.tables.paper.TEST_PROBLEMS` (power and the verdicts read them too), and tests/test_protocol.py
keeps them equal to the loaded benchmarks.
"""

from __future__ import annotations

import polars as pl

from analysis.checks.selection import FOLD, SEED
from analysis.tables.paper import TEST_PROBLEMS
from psedual.data.registry import DATASETS
from psedual.train.recipe_table import RECIPES



def _recipe(solver: str, dataset: str) -> int | None:
    """The epochs of `solver`'s published recipe on `dataset`; None where it has none."""
    if solver not in RECIPES or dataset not in DATASETS:
        return None
    epochs = RECIPES[solver].values(dataset).get("epochs")
    return None if epochs is None else int(epochs.value)


def _tested(runs: pl.DataFrame) -> int | None:
    """The test problems one seed's runs answered, folds pooled (the most over the seeds)."""
    if "n_test" not in runs.columns or runs["n_test"].null_count():
        return None
    folds = [FOLD] if FOLD in runs.columns else []
    per_fold = runs.group_by(SEED, *folds).agg(pl.col("n_test").max())  # each arm's run of a fold tested it
    return int(per_fold.group_by(SEED).agg(pl.col("n_test").sum())["n_test"].max())


def differences(runs: pl.DataFrame, dataset: str) -> list[str]:
    """What of these runs' protocol (one cell's, a claim's arms or an infilling row's) is not the
    paper's; empty where nothing known differs."""
    out = []
    trained = runs.filter(pl.col("llm.model").is_null()) if "llm.model" in runs.columns else runs
    for solver in sorted(set(trained["solver"].to_list())) if "epochs" in trained.columns else []:
        epochs = sorted(set(trained.filter(pl.col("solver") == solver)["epochs"].drop_nulls().to_list()))
        published = _recipe(solver, dataset)
        if epochs and published and max(epochs) < published:
            said = f"{epochs[0]} epochs" if len(epochs) == 1 else f"epochs {epochs}"
            out.append(f"{said} (its published recipe: {published})")
    sizes = sorted(set(runs["data.train_size"].drop_nulls().to_list())) if "data.train_size" in runs.columns else []
    if sizes:
        out.append(f"trained on {sizes[0] if len(sizes) == 1 else sizes} problems (data.train_size)")
    folds = sorted(set(runs[FOLD].to_list()), key=str) if FOLD in runs.columns else [None]
    split = TEST_PROBLEMS.get(dataset, {})
    tested = _tested(runs)
    if tested is not None and all(f in split for f in folds):
        full = sum(split[f] for f in folds)
        if tested < full:
            out.append(f"tested on {tested} of the {full} test problems" + ("" if folds == [None] else
                                                                             f" of folds {folds}"))
    protocol = DATASETS[dataset].folds if dataset in DATASETS else 0
    if folds != [None] and len(folds) < protocol:
        out.append(f"folds {folds} of {protocol}")
    return out


def beside(figure: str, differ: list[str]) -> str:
    """A paper figure as a report prints it, with how our protocol differs (none: as it was)."""
    return figure if figure == "–" or not differ else f"{figure} (protocol differs: {'; '.join(differ)})"


def of_row(runs: pl.DataFrame, row: dict, by: list[str]) -> list[str]:
    """`differences` for a table row of cell columns `by` (an infilling row): the runs of its cell."""
    mine = runs.filter(pl.all_horizontal(pl.col(k).eq_missing(row[k]) for k in by))
    return differences(mine, str(row["data.dataset"]))
