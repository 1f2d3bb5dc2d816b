"""Each arm's test accuracy alone, beside the paper's: Table 1 where the runs hold no PseDual arm.

A base solver trained at its published recipe (search_spaces/gts_mawps_5fold.yaml) is a
reproduction, not a comparison: `psedual analyze table1` on such runs prints, per dataset, solver
and arm, the test value accuracy with its folds pooled (each fold's test split predicted by the
model trained on the others: one accuracy over the whole data set per seed), its 95% CI (Wilson
over the pooled problems for one seed; the t interval over seeds for several), each fold's
figure, and the paper's figure for the cell (the authors' rerun, and the solver's own paper where
Table 1 quotes it), saying whether the CI holds it. The runs go through `selection.select`, the
path every claim takes: one run per slot, every prediction checked.

Beside the paper a reproduction says its protocol (issue 58): the encoder's problem-vector read
(`model.problem_vector`), the epoch tested (`selection`) and the training set (problems trained on,
and validating: the carve-out), against the published GTS/Graph2Tree code's (the published read,
the last epoch, every training problem); and, where a data set repeats training problems in its
test folds (MAWPS), the accuracy on those repeats and on the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis.checks import selection
from analysis.checks.selection import FOLD, SEED, cell_label
from analysis.stats.stats import percent_ci, proportion_ci
from analysis.tables import paper, read
from analysis.tables.text import dash, render
from psedual.data.registry import DATASETS
from psedual.results.row import BEFORE_COLUMN


@dataclass(frozen=True)
class Alone:
    """One arm's accuracy in one cell, folds pooled."""

    cell: str
    """The cell's label (`data.dataset=mawps, solver=gts`)."""
    arm: str
    """The arm's value."""
    seeds: int
    """Seeds with every fold the arm has."""
    folds: tuple[int, ...]
    """The folds pooled (one run each per seed)."""
    protocol: int
    """The folds the data set's protocol has (MAWPS 5; 0 for a fixed split)."""
    problems: int
    """Test problems pooled per seed (the first seed's)."""
    acc: float
    """Test value accuracy in %, folds pooled per seed, mean over seeds."""
    low: float
    """95% CI, low end (%)."""
    high: float
    """95% CI, high end (%)."""
    fold_acc: tuple[float, ...]
    """Each fold's accuracy (%, mean over seeds), in `folds`' order: descriptive only."""
    published: paper.Published | None
    """The paper's figure for the cell, if it has one."""
    setup: str = ""
    """The runs' protocol: problem-vector read, selection and training set (`setup`)."""
    repeats: tuple[float, int, float, int] | None = None
    """Accuracy (%) on the test problems that repeat a training problem and their number per seed,
    then the same for the rest; None where the runs' test folds repeat none (or it was not computed)."""


PUBLISHED_SETUP = "encoder read published, selection last, every training problem (no validation carve-out)"
"""The published GTS and Graph2Tree code's protocol (docs/solvers.md, published quirks)."""


def arms(runs: pl.DataFrame, epochs: pl.LazyFrame, predictions: pl.LazyFrame, arm: str, by: list[str],
         select_by: str, notes: list[str],
         repeated: Callable[[dict], frozenset[str]] | None = None) -> list[Alone]:
    """Every (cell, arm) of `runs`, one run per (cell, arm, seed, fold) as the claims select them.
    `repeated(run)`: the test ids of a runs row that repeat a training problem (`analysis.leakage`);
    given, the cells whose runs recorded repeats (`data_test_leaked`) are split by it."""
    arm = read.column(arm, runs.columns)
    slot = list(dict.fromkeys([*by, arm, SEED, FOLD]))
    chosen = selection.select(runs, epochs, predictions, slot, read.column(select_by, runs.columns),
                              ["value_correct"], notes)
    if {"epochs", "epochs_done"} <= set(chosen.runs.columns):  # stopped by ASHA, or by hand: not the recipe
        short = chosen.runs.filter(pl.col("epochs_done") < pl.col("epochs"))
        if short.height:
            notes.append(f"{short.height} run(s) trained fewer epochs than their config's: " + ", ".join(
                f"{r['experiment']}/{r['trial']} ({r['epochs_done']} of {r['epochs']}, {r['status']})"
                for r in short.iter_rows(named=True)))
    notes += [f for reasons in chosen.flags.values() for f in reasons]
    numbers = paper.load()
    out = []
    for part in chosen.runs.partition_by([*by, arm], maintain_order=True):
        first = part.row(0, named=True)
        cell = cell_label(first, by)
        folds = sorted({int(f) if f is not None else -1 for f in part[FOLD].to_list()})
        per_seed: dict[int, dict[int, np.ndarray]] = {}
        runs_of: dict[int, dict[int, dict]] = {}
        for r in part.iter_rows(named=True):
            correct = chosen.preds[(r["experiment"], r["trial"])]["value_correct"].to_numpy()
            per_seed.setdefault(int(r[SEED]), {})[-1 if r[FOLD] is None else int(r[FOLD])] = correct
            runs_of.setdefault(int(r[SEED]), {})[-1 if r[FOLD] is None else int(r[FOLD])] = r
        complete = {s: f for s, f in per_seed.items() if sorted(f) == folds}
        if len(complete) < len(per_seed):
            notes.append(f"{cell}, {arm}={first[arm]}: seed(s) {sorted(set(per_seed) - set(complete))} lack some of "
                         f"folds {folds}: left out")
        pooled = {s: np.concatenate([f[k] for k in folds]) for s, f in sorted(complete.items())}
        accs = [100.0 * float(p.mean()) for p in pooled.values()]
        if len(accs) == 1:
            only = next(iter(pooled.values()))
            low, high = proportion_ci(int(only.sum()), only.size)
        else:
            low, high = percent_ci(accs)
        dataset, solver = str(first.get("data.dataset")), str(first.get("solver"))
        out.append(Alone(cell, str(first[arm]), len(accs), tuple(f for f in folds if f >= 0),
                         DATASETS[dataset].folds if dataset in DATASETS else 0, next(iter(pooled.values())).size,
                         float(np.mean(accs)), low, high,
                         tuple(float(np.mean([100.0 * complete[s][k].mean() for s in complete])) for k in folds),
                         paper.find(numbers, "table1", dataset, solver, str(first[arm]), "value"),
                         setup(part), _repeats(part, complete, runs_of, folds, chosen.preds, repeated, cell, notes)))
    return out


def _values(part: pl.DataFrame, column: str) -> str:
    """The distinct values of `column` in the cell's runs, the behaviour before it for a run from
    before it existed (`BEFORE_COLUMN`)."""
    found = part[column].to_list() if column in part.columns else [None]
    return " / ".join(dict.fromkeys(BEFORE_COLUMN[column] if v is None else str(v) for v in found))


def _span(part: pl.DataFrame, column: str) -> str:
    """`1,400-1,409`, or one number, or `?` where the runs table has no such column."""
    if column not in part.columns or part[column].is_null().all():
        return "?"
    low, high = int(part[column].min()), int(part[column].max())
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"


def setup(part: pl.DataFrame) -> str:
    """The protocol of a cell's runs: problem-vector read, selection, training set."""
    chosen = _values(part, "selection")
    kept = {"best": "the best validation epoch", "last": "the last epoch"}.get(chosen, chosen)
    valid = _span(part, "n_valid")
    carve = "no validation carve-out" if valid == "0" else f"{valid} validating (carved from training)"
    return (f"encoder read {_values(part, 'model.problem_vector')}, selection {chosen} ({kept}), "
            f"{_span(part, 'n_train')} training problems per run, {carve}")


def _repeats(part: pl.DataFrame, complete: dict, runs_of: dict, folds: list[int], preds: dict,
             repeated: Callable[[dict], frozenset[str]] | None, cell: str,
             notes: list[str]) -> tuple[float, int, float, int] | None:
    """The cell's accuracy on its test problems that repeat a training problem and on the rest,
    folds pooled per seed, mean over seeds; None where no run recorded a repeat."""
    if repeated is None or "data_test_leaked" not in part.columns or not (part["data_test_leaked"].fill_null(0) > 0).any():
        return None
    parts: dict[bool, list[float]] = {True: [], False: []}
    counts: dict[bool, int] = {}
    for seed, by_fold in complete.items():
        correct = np.concatenate([by_fold[k] for k in folds])
        try:
            masks = []
            for k in folds:
                run = runs_of[seed][k]
                ids = repeated(run)
                masks.append(preds[(run["experiment"], run["trial"])]["id"].is_in(list(ids)).to_numpy())
        except (ValueError, OSError) as err:  # data missing or changed since the runs: say so, keep the table
            notes.append(f"{cell}: the repeats of training problems were not split out ({err})")
            return None
        mask = np.concatenate(masks)
        for side in (True, False):
            parts[side].append(100.0 * float(correct[mask == side].mean()) if (mask == side).any() else float("nan"))
            counts.setdefault(side, int((mask == side).sum()))
    return float(np.mean(parts[True])), counts[True], float(np.mean(parts[False])), counts[False]


def table(rows: list[Alone], fmt: str) -> str:
    """The rows as a Markdown or LaTeX table, the paper's figures beside ours, and each cell's folds."""
    header = ["cell", "arm", "seeds", "folds", "problems", "test value acc (%)", "95% CI",
              "paper: authors' rerun", "paper: solver's own", "paper in CI"]
    body = []
    for r in rows:
        pub = r.published
        inside = [v for v in (pub.value, pub.reported) if v is not None] if pub else []
        body.append([r.cell, r.arm, str(r.seeds), _folds(r), f"{r.problems:,}", f"{r.acc:.2f}",
                     f"[{r.low:.2f}, {r.high:.2f}]", f"{pub.value:.1f}" if pub else dash("the paper has none"),
                     f"{pub.reported:.1f}" if pub and pub.reported is not None else dash("the paper has none"),
                     ", ".join("yes" if r.low <= v <= r.high else f"no ({v - r.acc:+.2f})" for v in inside)
                     or dash("no paper figure")])
    lines = [render(header, body, fmt), "", "fold scores (descriptive only; the accuracy above pools the folds' "
             "out-of-fold predictions):"]
    lines += [f"  {r.cell}, {r.arm}: " + ", ".join(f"fold {f}: {a:.2f}" for f, a in zip(r.folds, r.fold_acc))
              for r in rows if r.folds]
    lines += ["", f"protocol (the published GTS and Graph2Tree code: {PUBLISHED_SETUP}):"]
    lines += [f"  {r.cell}, {r.arm}: {r.setup}" for r in rows]
    split = [r for r in rows if r.repeats is not None]
    if split:
        lines += ["", "test problems that repeat a training problem (same normalised text and gold, another id), "
                  "value accuracy (%) (problems per seed):"]
        lines += [f"  {r.cell}, {r.arm}: all {r.acc:.2f} ({r.problems:,}), repeats {r.repeats[0]:.2f} "
                  f"({r.repeats[1]:,}), the rest {r.repeats[2]:.2f} ({r.repeats[3]:,})" for r in split]
    return "\n".join(lines)


def _folds(r: Alone) -> str:
    """'5 of 5', or the folds present where the protocol's are not all there."""
    if not r.protocol:
        return dash("no folds")
    if len(r.folds) == r.protocol:
        return f"{r.protocol} of {r.protocol}"
    return f"{len(r.folds)} of {r.protocol} ({', '.join(map(str, r.folds))}): not the {r.protocol}-fold protocol"
