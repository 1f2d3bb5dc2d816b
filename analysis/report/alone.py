"""Each arm's test accuracy alone, beside the paper's: Table 1 where the runs hold no PseDual arm.

A base solver trained at its published recipe (search_spaces/gts_mawps_5fold.yaml) is a
reproduction, not a comparison: `psedual analyze table1` on such runs prints, per dataset, solver
and arm, the test value accuracy with its folds pooled (each fold's test split predicted by the
model trained on the others: one accuracy over the whole data set per seed), its 95% CI (Wilson
over the pooled problems for one seed; the t interval over seeds for several), each fold's
figure, and the paper's figure for the cell (the authors' rerun, and the solver's own paper where
Table 1 quotes it), saying whether the CI holds it. The runs go through `selection.select`, the
path every claim takes: one run per slot, every prediction checked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis.checks import selection
from analysis.checks.selection import FOLD, SEED, cell_label
from analysis.stats.stats import percent_ci, proportion_ci
from analysis.tables import paper, read
from analysis.tables.text import render
from psedual.data.registry import DATASETS


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


def arms(runs: pl.DataFrame, epochs: pl.LazyFrame, predictions: pl.LazyFrame, arm: str, by: list[str],
         select_by: str, notes: list[str]) -> list[Alone]:
    """Every (cell, arm) of `runs`, one run per (cell, arm, seed, fold) as the claims select them."""
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
        for r in part.iter_rows(named=True):
            correct = chosen.preds[(r["experiment"], r["trial"])]["value_correct"].to_numpy()
            per_seed.setdefault(int(r[SEED]), {})[-1 if r[FOLD] is None else int(r[FOLD])] = correct
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
                         paper.find(numbers, "table1", dataset, solver, str(first[arm]), "value")))
    return out


def table(rows: list[Alone], fmt: str) -> str:
    """The rows as a Markdown or LaTeX table, the paper's figures beside ours, and each cell's folds."""
    header = ["cell", "arm", "seeds", "folds", "problems", "test value acc (%)", "95% CI",
              "paper: authors' rerun", "paper: solver's own", "paper in CI"]
    body = []
    for r in rows:
        pub = r.published
        inside = [v for v in (pub.value, pub.reported) if v is not None] if pub else []
        body.append([r.cell, r.arm, str(r.seeds), _folds(r), f"{r.problems:,}", f"{r.acc:.2f}",
                     f"[{r.low:.2f}, {r.high:.2f}]", f"{pub.value:.1f}" if pub else "–",
                     f"{pub.reported:.1f}" if pub and pub.reported is not None else "–",
                     ", ".join("yes" if r.low <= v <= r.high else f"no ({v - r.acc:+.2f})" for v in inside) or "–"])
    lines = [render(header, body, fmt), "", "fold scores (descriptive only; the accuracy above pools the folds' "
             "out-of-fold predictions):"]
    lines += [f"  {r.cell}, {r.arm}: " + ", ".join(f"fold {f}: {a:.2f}" for f, a in zip(r.folds, r.fold_acc))
              for r in rows if r.folds]
    return "\n".join(lines)


def _folds(r: Alone) -> str:
    """'5 of 5', or the folds present where the protocol's are not all there."""
    if not r.protocol:
        return "–"
    if len(r.folds) == r.protocol:
        return f"{r.protocol} of {r.protocol}"
    return f"{len(r.folds)} of {r.protocol} ({', '.join(map(str, r.folds))}): not the {r.protocol}-fold protocol"
