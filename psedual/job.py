"""The main job: one sweep file on Ray Tune, then each trial's chosen checkpoint tested once, the
runs table printed, the significance check of its own arms (`psedual analyze compare`: the
verdicts and their flags) and the next commands to try. `psedual tune` and `python tune.py`
(kept for `ray submit`) both run it.

Every run of the job is an experiment with a name of its own, so the job runs again and again:
without `name` it is the sweep's name, or the first free `<name>-2`, `<name>-3`, ... in the
storage; an explicit `name` that exists already is refused (`resume` continues it instead).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, fields

from psedual.comparisons import command_line, compare_options, comparisons
from psedual.job_options import CalibrationOptions, PaperOptions, PriceOptions
from psedual.storage import DEFAULT_ROOT
from psedual.sweeps import programs

DEFAULT_SPACE = "search_spaces/default.yaml"
NEXT = (
    ("a bigger sweep: 3 solvers × {base, GRU, GCN} × 6 seeds (54 trials)",
     "{psedual} tune --space search_spaces/table1_mawps_seeds.yaml"),
    ("the paper's table 1 on MAWPS (5 folds, full recipe, a GPU per trial) on a cluster, from a checkout: docs/cluster.md",
     "{ray} submit --tmux clusters/gpu.yaml tune.py --space psedual/search_spaces/table1_mawps.yaml --address auto "
     "--storage s3://BUCKET/psedual"),
    ("a query of the result tables in Polars",
     "{python} -c \"import polars as pl; print(pl.scan_parquet('{storage}/runs/**/*.parquet', hive_partitioning=True)"
     ".group_by('experiment', 'variant').agg(pl.col('test_value_acc').mean()).sort('experiment', 'variant').collect())\""),
)
"""What to try after the main job, printed last: (what it is, the command; `{storage}` and the
programs filled in by `programs`). A shipped sweep file runs by its name from a pip install too."""


SHOWN = ["trial", "variant", "seed", "solver", "lr", "status", "epochs_done", "best_epoch", "valid_value_acc",
         "test_value_acc", "test_expr_acc", "test_infill_acc", "train_seconds"]


@dataclass(frozen=True)
class TuneJob:
    """A sweep and where its trials, checkpoints and result tables go.

    A paper file's options, its calibration's and its plan's prices are a group each (`GROUPS`); the
    command line takes them all flat (`--profile`, `--calibrate_steps`, `--price_cpu_hour`)."""

    space: str = DEFAULT_SPACE
    """The sweep's YAML file (search_spaces/*.yaml)."""
    name: str | None = None
    """Experiment name: the results partition and the resume handle. Default: the sweep's
    `name`, or the first free `<name>-2`, `<name>-3`, ... when that is taken. A name that is
    taken already is refused: continue it with `resume`."""
    resume: str | None = None
    """Continue the killed experiment of this name (its sweep YAML is `space`)."""
    storage: str = DEFAULT_ROOT
    """Local folder or pyarrow URI (s3://, gs://, ...) for the trials and the result tables."""
    address: str | None = None
    """Ray cluster to attach to (`auto` on a cluster); default: a local Ray for this process only."""
    plan: bool = False
    """Launch nothing; print the plan. A paper file: each part's trials, epochs, steps, hours, wall
    time and dollars from the stored calibration (psedual/tune/costs.tsv). A grid sweep: per
    comparison, its seeds, the smallest Δ they detect and the seeds the target Δ needs, at the
    spread of `plan_from` or `plan_sd`."""
    plan_from: str | None = None
    """A grid sweep's plan (and `seeds_for`): the spread of each comparison's per-seed Δ as this
    earlier experiment in `storage` measured it."""
    plan_sd: float | None = None
    """A grid sweep's plan (and `seeds_for`): the sd of the per-seed Δ, in points, as stated."""
    dashboard: bool = False
    """Start the local Ray with its dashboard, on loopback only (127.0.0.1), for any sweep, and print
    its URL (a Ray attached to with `address` has its own). Sweeps whose trials drive Ray Train
    workers always start it (Train's cleanup reads the State API it serves)."""
    verbose: bool = False
    """Ray's own output on this terminal: every trial's log (each epoch, Ray Train's checkpoint and
    reporting lines) and Tune's status table. Without it, one line per trial start, epoch and
    end, and Ray's output stays in the running Ray's session logs (the path is printed)."""
    paper: PaperOptions = field(default_factory=PaperOptions)
    """A paper file's profile, parts and table2's chat model."""
    calibration: CalibrationOptions = field(default_factory=CalibrationOptions)
    """A paper file's plan's timings: measured, and where they are kept."""
    prices: PriceOptions = field(default_factory=PriceOptions)
    """A paper file's plan's prices."""

    def __post_init__(self) -> None:
        if self.name is not None and self.resume is not None:
            raise ValueError("give name (a new experiment) or resume (an existing one), not both")
        if self.plan_from is not None and self.plan_sd is not None:
            raise ValueError("give plan_from (an earlier experiment's spread) or plan_sd (a stated one), not both")
        if self.plan_sd is not None and not self.plan_sd > 0:
            raise ValueError(f"plan_sd must be > 0 points, got {self.plan_sd}")
        for value in (self.name, self.resume):
            if value is not None and (not value or "/" in value or value.startswith(".")):
                raise ValueError(f"bad experiment name {value!r}: a non-empty folder name")

    @classmethod
    def of(cls, **options) -> "TuneJob":
        """The job of its command-line options by name, flat as `psedual tune` takes them
        (`TuneJob.of(profile="small", calibrate=True, price_cpu_hour=0.1)`): each to its group."""
        extra = set(options) - set(OPTIONS)
        if extra:
            from psedual.tune.value_types import unknown

            raise ValueError(unknown(extra, OPTIONS, "option"))
        groups = {group: GROUPS[group](**{k: v for k, v in options.items() if OPTIONS[k] == group})
                  for group in GROUPS}
        return cls(**{k: v for k, v in options.items() if OPTIONS[k] is None}, **groups)


GROUPS: dict[str, type] = {"paper": PaperOptions, "calibration": CalibrationOptions, "prices": PriceOptions}
"""TuneJob's groups of options: its field → the group's class."""
OPTIONS: dict[str, str | None] = {
    **{f.name: None for f in fields(TuneJob) if f.name not in GROUPS},
    **{f.name: group for group, options in GROUPS.items() for f in fields(options)}}
"""Each command-line option of `psedual tune` (a flat name) → its group in TuneJob (None: its own field)."""
if len(OPTIONS) != len(fields(TuneJob)) - len(GROUPS) + sum(len(fields(g)) for g in GROUPS.values()):
    raise TypeError("an option name is in two of TuneJob's groups: the command line takes each once")


def taken(storage: str, name: str) -> bool:
    """Whether the storage holds a sweep or result tables under this experiment name."""
    import pyarrow.fs as pafs

    from psedual.storage import TABLES, filesystem

    fs, base = filesystem(storage)
    paths = [f"{base}/{name}"] + [f"{base}/{t}/experiment={name}" for t in TABLES]
    return any(info.type != pafs.FileType.NotFound for info in fs.get_file_info(paths))


def experiment_name(job: TuneJob, base: str, used=None, what: str = "experiment") -> str:
    """`--resume`'s name (which must be `used`), `--name` (which must not), or the first free
    `<base>`, `<base>-2`, ...; `used(name)` defaults to `taken` (a paper run passes its parts')."""
    used = used or (lambda name: taken(job.storage, name))
    if job.resume is not None:
        if not used(job.resume):
            raise ValueError(f"no {what} {job.resume!r} in {job.storage} to resume")
        return job.resume
    if job.name is not None:
        if used(job.name):
            raise ValueError(f"{job.storage} holds {what} {job.name!r} already: --resume {job.name} continues "
                             f"it; choose another --name, or leave --name out for a fresh one")
        return job.name
    name, k = base, 1
    while used(name):
        k += 1
        name = f"{base}-{k}"
    return name


def run_job(job: TuneJob) -> int:
    """Run the sweep, test, print the runs table; 1 if a trial ended in error."""
    from psedual.tune.space import load_spec

    if job.paper.given or job.calibration.given:
        raise ValueError(f"{job.space} is a sweep file: profile, only, calibrate and costs are for a paper file "
                         "(search_spaces/paper.yaml)")
    from psedual.tune import encoders
    from psedual.tune.space import arm_values, make_config

    spec = load_spec(job.space)
    name = job.name or job.resume or spec.name
    from analysis.stats.margins import check_margin

    for i, entry in enumerate(spec.compare or ()):  # refused now, not by analyze once the sweep has run
        check_margin(entry.margin, name=f"{job.space}: compare[{i + 1}].margin")
    if spec.seeds is not None:  # a sweep in rounds: its rule against the design, before anything runs
        from psedual import seed_rounds

        seed_rounds.check(spec, job.space)
        if job.plan:
            print(f"plan: {job.space}: seeds in rounds until decided, per comparison (test value accuracy, "
                  f"paired over seeds, group-sequential):")
            print("\n".join(seed_rounds.plan_text(spec, job, comparisons(spec, arm_values(spec, "variant"), name))))
            return 0
    if job.plan:
        spec, lines = _resolve_seeds(spec, job, name)
        seeds = spec.grid.get("seed", [spec.fixed.get("seed", 0)])
        print(f"plan: {job.space}: {len(spec.trial_configs()) * spec.num_samples} trials, {len(seeds)} seed{'' if len(seeds) == 1 else 's'}; what "
              f"each comparison can detect (test value accuracy, paired t-test over seeds):")
        print("\n".join(lines) if lines else "  no comparison: the sweep has no base arm and PseDual arm")
        return 0
    if spec.seeds_for is not None:
        spec, lines = _resolve_seeds(spec, job, name)
        print(lines[0], flush=True)
    encoders.check({spec.name: [make_config(f) for f in spec.trial_configs()]})  # before its first trial
    name = experiment_name(job, spec.name)
    print(f"experiment {name}: {job.space} ({'resumed' if job.resume else 'new'}), storage {job.storage}", flush=True)
    code = run_spec(spec, name, job.resume is not None, job.storage, job.address, job.verbose, job.dashboard)
    if code == 0:
        print("\nNext:")
        for what, command in NEXT:
            print(f"  # {what}\n  {command.format(storage=job.storage, **programs())}")
    return code


def run_spec(spec, name: str, resume: bool, storage: str, address: str | None, verbose: bool = False,
             dashboard: bool = False, rerun: str | None = None) -> int:
    """One experiment: the sweep (or its resumption), each trial's test, the runs table, and the
    comparison of its arms (of the trials that finished); 1 if a trial ended in error or was lost.
    `rerun`: the `--resume` name that reruns such a trial (a paper run's own; default `name`)."""
    if address is None:  # a Ray started here, for this process only: no token to manage
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import polars as pl
    import ray

    from psedual.tune.evaluate import collect
    from psedual.tune.progress import shown
    from psedual.tune.sweep import run_sweep

    began = time.perf_counter()
    ours = not ray.is_initialized()  # a Ray this job starts (not a caller's) is stopped when its work is done
    rounds = None
    if getattr(spec, "seeds", None) is not None and not resume:  # resumed: Tune restores the searcher
        from psedual.seed_rounds import searcher
        from psedual.tune.space import arm_values

        rounds = searcher(spec, comparisons(spec, arm_values(spec, "variant"), name), storage, name)
    outcomes = run_sweep(spec, storage, name=name, resume=resume, address=address, verbose=verbose,
                         dashboard=dashboard, search_alg=rounds)
    runs = collect(outcomes, storage, name, spec.resources)  # tests run as parallel Ray tasks
    from psedual.tune.trackers import log_tested

    log_tested(spec.loggers, storage, name, runs, outcomes)  # the trackers get the tests and checkpoints too
    if ours:  # else the trials' last log lines, relayed late, would print after the verdicts
        ray.shutdown()
    with pl.Config(tbl_rows=50, tbl_cols=len(SHOWN), tbl_width_chars=200, float_precision=4,
                   tbl_hide_dataframe_shape=True):  # the count is said in the line below it
        table = runs.select([c for c in SHOWN if c in runs.columns])
        if "lr" in table.columns:  # 3 significant digits: at 4 decimals a drawn 1e-05 reads 0.0000
            table = table.with_columns(pl.col("lr").map_elements(shown, return_dtype=pl.String))
        print(table)
    print(f"{len(runs)} trials in {time.perf_counter() - began:.0f} s; tables in "
          f"{storage}/{{runs,epochs,predictions}}/experiment={name}/")
    from psedual.results.records import FAILED

    failed = runs.filter(pl.col("status").is_in(FAILED))
    for row in failed.iter_rows(named=True):
        print(f"trial {row['trial']} {_ended(row)}: {row['error']}", flush=True)
    if failed.height:
        print(rerun_line(spec, rerun or name, failed.height), flush=True)
    # a failed trial (its retries spent) is one error row, or a lost one where its node died: the
    # others are still compared (the comparison skips it, saying so) and their claims written
    from analysis.cli import run as analyze

    if getattr(spec, "seeds", None) is not None:
        from psedual.seed_rounds import looks_text

        print("\n".join(looks_text(storage, name)), flush=True)
        print("(the verdicts above are the sequential design's; the comparisons below test the same runs at "
              "one fixed look, whose error rates do not hold under stopping by rounds)", flush=True)
    planned = compare_options(spec, runs["variant"].unique().to_list(), storage, name)
    for options in planned:
        print(f"\nIs the difference real? {command_line(options)}\n", flush=True)
        analyze("compare", options)  # a refusal is one line naming the runs; the sweep itself succeeded
    if not planned and set(runs["variant"].drop_nulls().to_list()) == {"base"}:
        # a reproduction (the solver alone, as gts_mawps_5fold.yaml): its accuracy beside the paper's
        from analysis.options import Table1Options

        print(f"\nBeside the paper: psedual analyze table1 --root {storage} --experiment+ {name}\n", flush=True)
        analyze("table1", Table1Options(root=storage, experiment=(name,)))
    return 1 if failed.height else 0


def _ended(row: dict) -> str:
    """How a trial without a result ended, for the line before its error: its node lost, the sweep
    stopped before it ended (`sweep.unfinished_line`: it did not fail), or failed."""
    if row["status"] == "lost":
        return "lost"
    return "did not end" if str(row["error"] or "").startswith("Unfinished:") else "failed"


def rerun_line(spec, name: str, n: int) -> str:
    """What to do about `n` failed or lost trials: `--resume NAME` reruns a grid sweep's from their
    last checkpoint; an Optuna sweep's stay failed (its study has told them so: `sweep.run_sweep`)."""
    if spec.mode == "optuna":
        return (f"{n} trial(s) did not finish; --resume {name} reruns only those Tune left unfinished (an Optuna "
                f"study's failed trial cannot be reopened); resources.max_failures lets Tune retry a trial itself")
    return (f"{n} trial(s) did not finish: rerun them with --resume {name} (the same flags), each from its last "
            f"checkpoint")


def _resolve_seeds(spec, job: TuneJob, name: str) -> tuple[object, list[str]]:
    """`power_plan.resolve_seeds` over this spec's planned comparisons."""
    from psedual.power_plan import resolve_seeds
    from psedual.tune.space import arm_values

    return resolve_seeds(spec, job, comparisons(spec, arm_values(spec, "variant"), name))
