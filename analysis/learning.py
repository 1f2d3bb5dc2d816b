"""Learning curves per arm: where the arms of a comparison stand, epoch by epoch.

A claim compares the arms at their chosen checkpoints; it cannot say whether the budget was the
reason. These curves (validation value accuracy by epoch, mean ± sd over the seeds) are drawn from
the very runs the claims paired (`base_trials`, `treatment_trials`), and `standing` reads them as a
sentence ("base ahead at every epoch", "PseDual-GCN ahead from epoch 18"). They are descriptive:
no test is made per epoch (the claims are the tests).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from analysis import read
from analysis.report import label, render
from analysis.selection import SEED

METRIC = "valid_value_acc"
"""the epochs column the curves show: the selection metric (`psedual.results.best`)"""
CURVE_SCHEMA = {"cell": pl.String, "arm": pl.String, "epoch": pl.Int64, "n_seeds": pl.Int64, "mean": pl.Float64,
                "sd": pl.Float64}


def _trials(claims: pl.DataFrame) -> pl.DataFrame:
    """(cell, arm, experiment, trial) of every run the claims paired, each once."""
    rows = []
    for r in claims.iter_rows(named=True):
        for arm, col in ((r["base_arm"], "base_trials"), (r["treatment_arm"], "treatment_trials")):
            for key in r[col]:
                experiment, _, trial = key.partition("/")
                rows.append((r["cell"], arm, experiment, trial))
    return pl.DataFrame(rows, schema=["cell", "arm", "experiment", "trial"], orient="row").unique(maintain_order=True)


def curves(claims: pl.DataFrame, runs: pl.DataFrame, epochs: pl.LazyFrame, metric: str = METRIC) -> pl.DataFrame:
    """Per cell, arm and epoch: the seeds that reached it, and the mean and sd (ddof 1) over them of
    `metric` in % (the epochs table holds fractions). An arm that pools several folds per seed averages its folds first, so the unit
    is the seed, as in the claims."""
    if claims.is_empty():
        return pl.DataFrame(schema=CURVE_SCHEMA)
    trials = _trials(claims).join(runs.select(*read.KEY, SEED), on=list(read.KEY), how="left")
    rows = read.for_trials(epochs, trials).select(*read.KEY, "epoch", metric).collect()
    if rows.is_empty():  # runs without epochs (a language model's): no curve to draw
        return pl.DataFrame(schema=CURVE_SCHEMA)
    return (trials.join(rows, on=list(read.KEY))
            .group_by("cell", "arm", "epoch", SEED).agg((100.0 * pl.col(metric)).mean().alias("value"))
            .group_by("cell", "arm", "epoch")
            .agg(n_seeds=pl.len(), mean=pl.col("value").mean(), sd=pl.col("value").std(ddof=1))
            .with_columns(pl.col("epoch").cast(pl.Int64), pl.col("n_seeds").cast(pl.Int64))
            .sort("cell", "arm", "epoch")
            .select(list(CURVE_SCHEMA)))


def standing(curve: pl.DataFrame, base: str, treatment: str) -> str:
    """Where `treatment` stands against `base` by epoch, over the epochs both reached, from the
    means over seeds: "base ahead at every epoch (1-30)", "PseDual-GCN ahead from epoch 18 (before
    it: base ahead at 12, level at 1 of 17 epochs); Δ +1.20 points at epoch 30" (Δ = treatment − base)."""
    b = dict(curve.filter(pl.col("arm") == base).select("epoch", "mean").iter_rows())
    t = dict(curve.filter(pl.col("arm") == treatment).select("epoch", "mean").iter_rows())
    shared = sorted(set(b) & set(t))
    if not shared:
        return f"{label(treatment)} and {label(base)} share no epoch"
    gaps = [t[e] - b[e] for e in shared]
    sign = [(g > 0) - (g < 0) for g in gaps]
    names = {1: label(treatment), -1: label(base)}
    span = f"{shared[0]}-{shared[-1]}" if len(shared) > 1 else str(shared[0])
    last = f"Δ {gaps[-1]:+.2f} points at epoch {shared[-1]}"
    if len(set(sign)) == 1:
        said = f"level at every epoch ({span})" if sign[0] == 0 else f"{names[sign[0]]} ahead at every epoch ({span})"
        return f"{said}; {last}"
    if sign[-1] == 0:
        return f"level at the last epoch ({shared[-1]}), the lead changing before it"
    k = len(sign) - 1
    while k > 0 and sign[k - 1] == sign[-1]:
        k -= 1
    before = sign[:k]
    counts = ([f"{names[-sign[-1]]} ahead at {before.count(-sign[-1])}"] if -sign[-1] in before else []) + (
        [f"level at {before.count(0)}"] if 0 in before else [])
    return (f"{names[sign[-1]]} ahead from epoch {shared[k]} (before it: {', '.join(counts)} of {len(before)} "
            f"epochs); {last}")


def standings(claims: pl.DataFrame, curve: pl.DataFrame) -> list[str]:
    """One line per comparison of the claims (each cell, treatment against its base)."""
    pairs = claims.select("cell", "base_arm", "treatment_arm").unique(maintain_order=True)
    return [f"{r['cell']}: {label(r['treatment_arm'])} vs {label(r['base_arm'])}: "
            f"{standing(curve.filter(pl.col('cell') == r['cell']), r['base_arm'], r['treatment_arm'])}"
            for r in pairs.iter_rows(named=True)]


def table(curve: pl.DataFrame, fmt: str, every: int = 1) -> str:
    """The curves as a table: one row per epoch (every `every`-th, and the last), one column per
    (cell, arm): mean ± sd over the seeds (n when not all seeds reached the epoch)."""
    columns = curve.select("cell", "arm").unique(maintain_order=True).rows()
    cells = {c for c, _ in columns}
    header = ["epoch"] + [label(a) if len(cells) == 1 else f"{c}: {label(a)}" for c, a in columns]
    full = {key: curve.filter((pl.col("cell") == key[0]) & (pl.col("arm") == key[1]))["n_seeds"].max()
            for key in columns}
    epochs = sorted(curve["epoch"].unique().to_list())
    shown = [e for i, e in enumerate(epochs) if i % every == every - 1 or e == epochs[-1] or i == 0]
    values = {(r["cell"], r["arm"], r["epoch"]): r for r in curve.iter_rows(named=True)}
    body = []
    for e in shown:
        row = [str(e)]
        for key in columns:
            r = values.get((*key, e))
            if r is None:
                row.append("–")
                continue
            sd = "" if r["sd"] is None else f" ± {r['sd']:.2f}"
            n = "" if r["n_seeds"] == full[key] else f" (n {r['n_seeds']})"
            row.append(f"{r['mean']:.2f}{sd}{n}")
        body.append(row)
    return render(header, body, fmt)


def figure(curve: pl.DataFrame, path: str, title: str) -> str:
    """Each (cell, arm)'s mean validation value accuracy by epoch, a band of ± 1 sd over the seeds."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a cluster or in CI
    import matplotlib.pyplot as plt

    cells = curve["cell"].unique(maintain_order=True).to_list()
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=150)
    for cell, arm in curve.select("cell", "arm").unique(maintain_order=True).rows():
        c = curve.filter((pl.col("cell") == cell) & (pl.col("arm") == arm)).sort("epoch")
        name = label(arm) if len(cells) == 1 else f"{cell}: {label(arm)}"
        line, = ax.plot(c["epoch"], c["mean"], label=f"{name} ({c['n_seeds'].max()} seeds)")
        sd = c["sd"].fill_null(0.0)
        ax.fill_between(c["epoch"], c["mean"] - sd, c["mean"] + sd, alpha=0.15, color=line.get_color())
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation value accuracy (%)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
