"""The paper's comparisons, built from parsed `analyze` options: what each `analyze` command and
`analyze report` share, so the report refuses, flags and notes exactly what the commands do.

Each function takes a command's options (`args`: `analysis.options`) and the runs to read; the claims go through
`claims.build` (and so `selection.select`), the infilling rows through `summaries.infill`.
"""

from __future__ import annotations

import polars as pl

from analysis.claims import claims as claims_mod
from analysis.claims import left_out, targets
from analysis.claims.claims import Comparison
from analysis.options import AnalyzeOptions, ClaimOptions
from analysis.report import learning, report, summaries
from analysis.stats import power
from analysis.tables import read
from psedual.reexamine.config import BASE, EXPRESSION_ENCODERS

# (arm column, base, treatments, cells) of the paper's comparisons
PRESETS = {
    "table1": ("variant", BASE, tuple(EXPRESSION_ENCODERS), ("data.dataset", "solver")),
    "table3": ("psedual.fusion", "teacher_forcing", ("scheduled",), ("data.dataset", "solver", "variant")),
    "curve": ("variant", BASE, tuple(EXPRESSION_ENCODERS), ("data.dataset", "solver", "data.train_size")),
}
TITLES = {"table1": "Table 1: test accuracy, solver × PseDual variant",
          "table3": "Table 3: teacher forcing vs scheduled fusion"}


def runs(args: AnalyzeOptions) -> pl.DataFrame:
    """The runs of `args.experiment` that match `--where`; none is an error naming the filter."""
    found = read.select(read.scan(args.root, "runs", args.experiment), read.parse_where(args.where)).collect()
    if found.is_empty():
        raise ValueError(f"no runs match --where {' '.join(args.where)} in {args.root}")
    return found


def comparison(args: ClaimOptions, family: str, arm: str, base: str, treatments: tuple[str, ...],
               by: tuple[str, ...]) -> Comparison:
    return Comparison(family=family, arm=arm, base=base, treatments=tuple(treatments), by=tuple(by),
                      metrics=tuple(args.metric) or ("value",), select_by=args.select_by, correction=args.correction,
                      n_resamples=args.resamples, rng_seed=args.rng_seed, allow_diff=tuple(args.allow_diff),
                      margin=args.margin)


def family(args: ClaimOptions, command: str) -> str:
    return args.name or "_".join([command, *(args.experiment or ["all"])])


def build(args: ClaimOptions, cmp: Comparison, runs: pl.DataFrame) -> claims_mod.Claims:
    """The claims of `cmp` with their power (`power.annotate`) and their verdicts against their target
    and margin (`targets.judge`), written to
    <root>/claims/<family>.parquet (said in a note)."""
    built = claims_mod.build(runs, read.scan(args.root, "epochs", args.experiment),
                             read.scan(args.root, "predictions", args.experiment), cmp)
    if args.where:  # the runs of the compared arms the filter left out, named on each claim
        built.rows = left_out.flag(built.rows, runs, read.scan(args.root, "runs", args.experiment).collect(), cmp)
    built.rows = targets.judge(power.annotate(built.rows, target_delta=args.target_delta))  # against its target
    path = claims_mod.write(built.rows, args.root, cmp.family)
    built.notes.append(f"{built.rows.height} claim row{'' if built.rows.height == 1 else 's'} written to {path}")
    return built


def treatments_present(runs: pl.DataFrame, command: str) -> bool:
    """Whether `runs` hold any of a paper table's treatment arms."""
    arm, _, treatments, _ = PRESETS[command]
    return bool(set(treatments) & set(runs[read.column(arm, runs.columns)].drop_nulls().to_list()))


def paper_table(args: ClaimOptions, command: str, runs: pl.DataFrame) -> tuple[claims_mod.Claims, tuple[str, ...]]:
    """A paper table's claims (`table1`, `table3`) and its cell columns."""
    arm, base, treatments, by = PRESETS[command]
    present = set(runs[read.column(arm, runs.columns)].drop_nulls().to_list())
    treatments = tuple(t for t in treatments if t in present) or treatments
    by = (*by, *args.by)
    return build(args, comparison(args, family(args, command), arm, base, treatments, by), runs), by


def infill(args: AnalyzeOptions, runs: pl.DataFrame, used_only: bool) -> tuple[pl.DataFrame, list[str], list[str]]:
    """Infilling accuracy and perfect match per (dataset, solver, variant, --by), its notes and
    cell columns."""
    by = list(dict.fromkeys(read.column(k, runs.columns) for k in ("data.dataset", "solver", "variant", *args.by)))
    notes: list[str] = []
    table = summaries.infill(runs, read.scan(args.root, "epochs", args.experiment),
                             read.scan(args.root, "predictions", args.experiment), by, args.resamples,
                             args.rng_seed, used_only=used_only, select_by=args.select_by, notes=notes)
    return table, notes, by


def curve(args: ClaimOptions, runs: pl.DataFrame, png: str) -> tuple[pl.DataFrame, claims_mod.Claims, str]:
    """The training-size figure drawn to `png` from the very runs its claims compared: its points,
    claims and path."""
    arm, base, treatments, by = PRESETS["curve"]
    for key in ("data.dataset", "solver"):
        values = runs[key].unique().to_list()
        if len(values) > 1:
            raise ValueError(f"the figure shows one {key}; these runs have {sorted(values)}: add --where+ {key}=...")
    present = set(runs[arm].to_list())
    treatments = tuple(t for t in treatments if t in present)
    if base not in present or not treatments:
        raise ValueError(f"the figure needs {arm}={base} and a PseDual variant; present: {sorted(present)}")
    built = build(args, comparison(args, family(args, "curve"), arm, base, treatments, by), runs)
    # plot the very runs the claims compared (one per slot, picked by --select_by)
    chosen = {t for col in ("base_trials", "treatment_trials") for ts in built.rows[col].to_list() for t in ts}
    runs = runs.filter((pl.col("experiment") + "/" + pl.col("trial")).is_in(list(chosen)))
    runs = summaries.training_sizes(runs, built.notes)
    points = summaries.size_points(runs, read.scan(args.root, "predictions", args.experiment), arm,
                                   [base, *treatments], list(by), built.rows)
    title = (f"{runs['solver'][0]} on {runs['data.dataset'][0]}: test value accuracy vs training size\n"
             f"bands: 95% CI (t over seeds; Wilson for 1 seed)\n"
             f"* / ** {args.correction}-adjusted p < .05 / .01, ↑ better ↓ worse than base")
    return points, built, report.figure(points, png, title)


def learning_curves(args: AnalyzeOptions, built: claims_mod.Claims, runs: pl.DataFrame) -> pl.DataFrame:
    """Validation value accuracy by epoch per arm, from the runs the claims paired (`learning.curves`)."""
    return learning.curves(built.rows, runs, read.scan(args.root, "epochs", args.experiment))


def epoch_curve(args: ClaimOptions, runs: pl.DataFrame, arm: str, base: str, treatments: tuple[str, ...],
                by: tuple[str, ...]) -> tuple[pl.DataFrame, claims_mod.Claims, str]:
    """`analyze curve --over epoch`: the claims of `treatments` against `base`, and the learning
    curves of the runs they paired, drawn to the options' figure path: the curve, claims and path."""
    present = set(runs[read.column(arm, runs.columns)].drop_nulls().cast(pl.String).to_list())
    treatments = tuple(treatments) or tuple(t for t in EXPRESSION_ENCODERS if t in present)
    if base not in present or not treatments:
        raise ValueError(f"the learning curves need {arm}={base} and a treatment; present: {sorted(present)}")
    built = build(args, comparison(args, family(args, "curve"), arm, base, treatments, by), runs)
    curve = learning_curves(args, built, runs)
    title = (f"validation value accuracy by epoch (experiments: {', '.join(args.experiment or ['all'])})\n"
             f"mean over seeds, band ± 1 sd; the runs the claims pair; under each panel Δ vs its reference")
    return curve, built, learning.figure(curve, args.figure_path, title, learning.pairs(built.rows))
