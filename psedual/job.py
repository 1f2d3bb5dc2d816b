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
from dataclasses import dataclass

from psedual.storage import DEFAULT_ROOT

DEFAULT_SPACE = "search_spaces/default.yaml"
NEXT = (
    ("a bigger sweep: 3 solvers × {base, GRU, GCN} × 6 seeds (54 trials)",
     "python tune.py --space search_spaces/table1_mawps_seeds.yaml"),
    ("the paper's table 1 on MAWPS (5 folds, full recipe, a GPU per trial) on a cluster: docs/cluster.md",
     "ray submit --tmux clusters/gpu.yaml tune.py --space psedual/search_spaces/table1_mawps.yaml --address auto "
     "--storage s3://BUCKET/psedual"),
    ("a query of the result tables in Polars",
     "python -c \"import polars as pl; print(pl.scan_parquet('{storage}/runs/**/*.parquet', hive_partitioning=True)"
     ".group_by('experiment', 'variant').agg(pl.col('test_value_acc').mean()).sort('experiment', 'variant').collect())\""),
)
"""What to try after the main job, printed last: (what it is, the command; `{storage}` filled in)."""
CELLS = ("data.dataset", "solver")
"""The comparison's cells, as in `analyze compare`; a sweep's other grid keys are added to them."""
NOT_CELLS = ("variant", "seed", "data.fold")
"""Grid keys that are no cell: the arm, and the units it pairs over (MAWPS's folds pool)."""
SHOWN = ["trial", "variant", "seed", "solver", "lr", "status", "epochs_done", "best_epoch", "valid_value_acc",
         "test_value_acc", "test_expr_acc", "test_infill_acc", "train_seconds"]


@dataclass(frozen=True)
class TuneJob:
    """A sweep and where its trials, checkpoints and result tables go."""

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
    profile: str | None = None
    """A paper file's profile (`small`, `full`: search_spaces/paper.yaml): its parts run in turn as
    experiments `<name>.<part>`, the name defaulting to `paper-<profile>`."""
    only: str | None = None
    """A paper file: run only these parts, comma-separated (`table1,table3`)."""
    plan: bool = False
    """A paper file: print each part's trials, epochs, steps, hours, wall time and dollars from
    the stored calibration (psedual/tune/costs.tsv), and launch nothing."""
    calibrate: bool = False
    """A paper file: time each distinct trial shape of the profile on this machine (as many at
    once as the profile runs) and a part's overhead, store them in psedual/tune/costs.tsv, then plan."""
    price_cpu_hour: float = 0.05
    """The plan's dollars per CPU-hour (default: about one vCPU of an on-demand general-purpose
    cloud instance, e.g. AWS m7i.large at $0.10/h for 2 vCPUs)."""
    price_gpu_hour: float = 3.0
    """The plan's dollars per GPU-hour (default: about an on-demand H100 from a GPU cloud)."""
    llm_base_url: str | None = None
    """A paper file's table2: the OpenAI-compatible endpoint (with llm_model; the key in
    $OPENAI_API_KEY); without it table2 is skipped."""
    llm_model: str | None = None
    """A paper file's table2: the endpoint's model name."""
    dashboard: bool = False
    """Start the local Ray with its dashboard, on loopback only (127.0.0.1), for any sweep, and print
    its URL (a Ray attached to with `address` has its own). Sweeps whose trials drive Ray Train
    workers always start it (Train's cleanup reads the State API it serves)."""
    verbose: bool = False
    """Ray's own output on this terminal: every trial's log (each epoch, Ray Train's checkpoint and
    reporting lines) and Tune's status table. Without it, one line per trial start, epoch and
    end, and Ray's output stays in /tmp/ray/session_latest/logs."""

    def __post_init__(self) -> None:
        if self.name is not None and self.resume is not None:
            raise ValueError("give name (a new experiment) or resume (an existing one), not both")
        if min(self.price_cpu_hour, self.price_gpu_hour) < 0:
            raise ValueError("prices must be >= 0")
        if (self.llm_base_url is None) != (self.llm_model is None):
            raise ValueError("give llm_base_url and llm_model together")
        for value in (self.name, self.resume):
            if value is not None and (not value or "/" in value or value.startswith(".")):
                raise ValueError(f"bad experiment name {value!r}: a non-empty folder name")


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

    if job.profile or job.only or job.plan or job.calibrate:
        raise ValueError(f"{job.space} is a sweep file: profile, only, plan and calibrate are for a paper file "
                         "(search_spaces/paper.yaml)")
    spec = load_spec(job.space)
    name = experiment_name(job, spec.name)
    print(f"experiment {name}: {job.space} ({'resumed' if job.resume else 'new'}), storage {job.storage}", flush=True)
    code = run_spec(spec, name, job.resume is not None, job.storage, job.address, job.verbose, job.dashboard)
    if code == 0:
        print("\nNext:")
        for what, command in NEXT:
            print(f"  # {what}\n  {command.format(storage=job.storage)}")
    return code


def run_spec(spec, name: str, resume: bool, storage: str, address: str | None, verbose: bool = False,
             dashboard: bool = False) -> int:
    """One experiment: the sweep (or its resumption), each trial's test, the runs table, and the
    comparison of its arms (of the trials that finished); 1 if a trial ended in error."""
    if address is None:  # a Ray started here, for this process only: no token to manage
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import polars as pl
    import ray

    from psedual.results.collect import collect
    from psedual.tune.sweep import run_sweep

    began = time.perf_counter()
    ours = not ray.is_initialized()  # a Ray this job starts (not a caller's) is stopped when its work is done
    outcomes = run_sweep(spec, storage, name=name, resume=resume, address=address, verbose=verbose,
                         dashboard=dashboard)
    runs = collect(outcomes, storage, name, spec.resources)  # tests run as parallel Ray tasks
    if ours:  # else the trials' last log lines, relayed late, would print after the verdicts
        ray.shutdown()
    with pl.Config(tbl_rows=50, tbl_cols=len(SHOWN), tbl_width_chars=200, float_precision=4):
        print(runs.select([c for c in SHOWN if c in runs.columns]))
    print(f"{len(runs)} trials in {time.perf_counter() - began:.0f} s; tables in "
          f"{storage}/{{runs,epochs,predictions}}/experiment={name}/")
    failed = runs.filter(pl.col("status") == "error")
    for row in failed.iter_rows(named=True):
        print(f"trial {row['trial']} failed: {row['error']}", flush=True)
    # a failed trial (its node lost, its retries spent) is one error row: the others are still
    # compared (the comparison skips it, saying so) and their claims written
    compare = compare_args(spec, runs["variant"].unique().to_list(), storage, name)
    if compare is not None:
        print(f"\nIs the difference real? psedual analyze {' '.join(compare[1:])}\n", flush=True)
        from analysis.cli import main as analyze

        analyze(compare)  # a refusal is one line naming the runs; the sweep itself succeeded
    return 1 if failed.height else 0


def compare_args(spec, variants: list[str], storage: str, name: str) -> list[str] | None:
    """`analyze compare` of every PseDual arm against base, per cell of the sweep's other grid
    keys; None when the sweep has no base arm and PseDual arm to compare."""
    from psedual.reexamine.config import BASE, EXPRESSION_ENCODERS

    treatments = [v for v in EXPRESSION_ENCODERS if v in variants]
    if BASE not in variants or not treatments:
        return None
    cells = [*CELLS, *(k for k in spec.grid if k not in (*CELLS, *NOT_CELLS))]
    return ["analyze", "compare", "--root", storage, "--experiment+", name, "--arm", "variant", "--base", BASE,
            *(a for t in treatments for a in ("--treatment+", t)),
            *(a for k in cells for a in ("--by+", k))]

