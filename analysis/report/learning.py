"""Learning curves per arm: where the arms of a comparison stand, epoch by epoch.

A claim compares the arms at their chosen checkpoints; it cannot say whether the budget was the
reason. These curves (validation value accuracy by epoch, mean ± sd over the seeds) are drawn from
the very runs the claims paired (`base_trials`, `treatment_trials`), and `standing` reads them as a
sentence ("base ahead at every epoch", "PseDual-GCN ahead from epoch 18"). They are descriptive:
no test is made per epoch (the claims are the tests).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import polars as pl

from analysis.checks import arms
from analysis.checks.selection import SEED
from analysis.tables import read
from analysis.tables.text import dash, label, render
from psedual.reexamine.config import BASE

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


LEVEL = 1e-9
"""Two means of validation accuracy (in points) closer than this are level."""


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
    # level within float noise: the means of tied accuracies differ in their last bits with the
    # order polars sums them in, which made the counts below change from one run to the next
    sign = [0 if abs(g) < LEVEL else (g > 0) - (g < 0) for g in gaps]
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
    known = [c for c in ("control_arms", "controls") if c in claims.columns]  # a control is named as one
    pairs = claims.select("cell", "base_arm", "treatment_arm", *known).unique(
        ["cell", "base_arm", "treatment_arm"], maintain_order=True)

    def name(r: dict, side: str) -> str:
        return arms.named(r[side], r.get("control_arms") or (), r.get("controls"))

    return [f"{r['cell']}: {name(r, 'treatment_arm')} vs {name(r, 'base_arm')}: "
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
                row.append(dash("no run reached it"))
                continue
            sd = "" if r["sd"] is None else f" ± {r['sd']:.2f}"
            n = "" if r["n_seeds"] == full[key] else f" (n {r['n_seeds']})"
            row.append(f"{r['mean']:.2f}{sd}{n}")
        body.append(row)
    return render(header, body, fmt)


def pairs(claims: pl.DataFrame) -> list[tuple[str, str, str]]:
    """(cell, base arm, treatment arm) of each comparison of the claims, in order: the panels of
    `figure`."""
    return [tuple(r) for r in claims.select("cell", "base_arm", "treatment_arm").unique(maintain_order=True).rows()]


def _colours(curve: pl.DataFrame) -> dict[str, str]:
    """One colour per arm across every panel: the solver alone black, the others a qualitative palette."""
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22"]
    arms = [a for a in curve["arm"].unique(maintain_order=True).to_list() if a != BASE]
    return {BASE: "#000000", **{a: palette[i % len(palette)] for i, a in enumerate(arms)}}


def panels(compared: list[tuple[str, str, str]]) -> dict[tuple[str, str], list[str]]:
    """`figure`'s panels: each (cell, reference arm) of `compared`, in order, with its treatments."""
    groups: dict[tuple[str, str], list[str]] = {}
    for cell, base, treatment in compared:
        groups.setdefault((cell, base), []).append(treatment)
    return groups


def gaps(curve: pl.DataFrame, cell: str, base: str, treatment: str) -> tuple[list[int], list[float]]:
    """The Δ strip of one comparison: the epochs both arms reached and treatment − base there (means
    over seeds, points)."""
    means = {arm: dict(curve.filter((pl.col("cell") == cell) & (pl.col("arm") == arm)).select("epoch", "mean")
                       .iter_rows()) for arm in (base, treatment)}
    shared = sorted(set(means[base]) & set(means[treatment]))
    return shared, [means[treatment][e] - means[base][e] for e in shared]


def figure(curve: pl.DataFrame, path: str, title: str, compared: list[tuple[str, str, str]]) -> str:
    """Small multiples: one panel per (cell, reference arm) of `compared` (`pairs`), its arms' mean
    validation value accuracy by epoch with a band of ± 1 sd over the seeds (the reference arm
    dashed), and under each a Δ-vs-reference strip (treatment − reference, means over seeds), its
    axis fitted to the epochs after the first third so that differences of a point can be read (an
    early swing may leave the frame: the title says so)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a cluster or in CI
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    groups = panels(compared)
    if not groups:
        raise ValueError("the learning-curve figure needs at least one comparison")
    colours = _colours(curve)
    ncols = min(len(groups), 3)
    nrows = -(-len(groups) // ncols)
    height = 4.6 * nrows + 1.2
    fig = plt.figure(figsize=(4.6 * ncols, height), dpi=150)
    # each panel its own pair of axes (curves, Δ strip) close together; the panels apart, so a title
    # never meets the tick labels above it
    outer = fig.add_gridspec(nrows, ncols, hspace=0.42, wspace=0.28, top=1 - 1.3 / height, bottom=0.7 / height)
    one_cell = len({cell for cell, _ in groups}) == 1
    for i, ((cell, base), treatments) in enumerate(groups.items()):
        row, col = divmod(i, ncols)
        inner = outer[row, col].subgridspec(2, 1, height_ratios=[3, 1.4], hspace=0.08)
        top = fig.add_subplot(inner[0])
        strip = fig.add_subplot(inner[1], sharex=top)
        strip.xaxis.set_major_locator(MaxNLocator(integer=True))  # epochs are whole
        mine = curve.filter(pl.col("cell") == cell)
        for arm in (base, *treatments):
            c = mine.filter(pl.col("arm") == arm).sort("epoch")
            sd = c["sd"].fill_null(0.0)
            top.plot(c["epoch"], c["mean"], color=colours[arm], lw=1.6, ls="--" if arm == base else "-")
            top.fill_between(c["epoch"], c["mean"] - sd, c["mean"] + sd, color=colours[arm], alpha=0.12, lw=0)
        fitted = []
        for arm in treatments:
            shared, gap = gaps(curve, cell, base, arm)
            strip.plot(shared, gap, color=colours[arm], lw=1.6)
            fitted += [g for e, g in zip(shared, gap) if e > max(shared, default=0) / 3]
        strip.axhline(0.0, color=colours[base], lw=1.0, ls="--")
        if fitted:
            reach = max(abs(g) for g in fitted) * 1.2 or 1.0
            strip.set_ylim(-reach, reach)
        # an arm's name may hold commas ('PseDual-GCN, teacher forcing'): treatments apart by ';', wrapped
        said = textwrap.fill(f"{'; '.join(label(t) for t in treatments)} vs {label(base)}", 52)
        top.set_title(said if one_cell else f"{cell}\n{said}", fontsize=9)
        top.tick_params(labelbottom=False, labelsize=8)
        strip.tick_params(labelsize=8)
        top.grid(alpha=0.3)
        strip.grid(alpha=0.3)
        if col == 0:
            top.set_ylabel("validation value acc (%)", fontsize=8)
            strip.set_ylabel("Δ vs reference\n(points)", fontsize=8)
        strip.set_xlabel("epoch", fontsize=8)
    handles = [Line2D([], [], color=colours[a], lw=2, label=label(a)) for a in colours
               if a in set(curve["arm"].to_list())]
    handles.append(Line2D([], [], color="#555555", lw=1.5, ls="--", label="dashed: the panel's reference arm"))
    fig.suptitle(f"{title}\n(each Δ axis fitted to the last two thirds of the epochs)", fontsize=10)
    # below the panels (the saved image grows to hold it): never over a curve
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.15 / height), ncol=min(len(handles), 3),
               fontsize=8, frameon=False)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path
