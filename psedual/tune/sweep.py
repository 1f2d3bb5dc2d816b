"""Run a sweep with Ray Tune: Optuna (TPE, seeded) + ASHA, or a plain grid; resume a killed one.

Returns what each trial left: its config, status, last validation metrics and the
checkpoint holding `best.pt`. Testing them is `psedual.tune.evaluate`'s job, the tables `psedual.results`'.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
from pathlib import Path

import ray
import ray.tune
from ray.exceptions import RayTaskError
from ray.train import Checkpoint

from psedual.reexamine.config import BASE
from psedual.results.best import SELECT_BY
from psedual.storage import filesystem, storage_uri
from psedual.train.config import TrainConfig
from psedual.train.resources import Resources
from psedual.tune import study
from psedual.tune.outcome import TrialOutcome
from psedual.tune.lost import NOT_RERUN, error_file, node_loss, ray_logs, reruns_errored
from psedual.tune.progress import Progress, quiet_tune_logs, shown
from psedual.tune.asha import ArmASHA
from psedual.tune import trackers
from psedual.tune.trackers import tracker_callbacks
from psedual.tune.space import ARM, PSEDUAL_PREFIX, SweepSpec, expand, make_config
from psedual.tune.trial import trainable

# Tune's own columns in a trial's reported metrics, which we do not keep
_TUNE_KEYS = {"timestamp", "checkpoint_dir_name", "done", "training_iteration", "trial_id", "date", "time_this_iter_s",
              "time_total_s", "pid", "hostname", "node_ip", "time_since_restore", "iterations_since_restore",
              "config", "experiment_tag", "checkpoint_path", "should_checkpoint"}


def check_ray_default() -> None:
    """ASHA stopping a Ray Train trial leaves its workers' placement group reserved unless the
    dashboard and State API of `ray[default]` are installed; refuse to start without them."""
    try:
        import aiohttp  # noqa: F401  (a ray[default] dependency the dashboard needs)
        import ray.dashboard  # noqa: F401
        from ray.util.state import list_placement_groups  # noqa: F401
    except ImportError as err:
        raise RuntimeError(f"Ray Train sweeps need ray[default] (dashboard, State API): {err}") from None


def check_fits(resources: Resources, cluster: dict) -> None:
    """Refuse, before any trial starts, a trial this (local, fixed-size) Ray can never place:
    Ray Train would wait for its workers, time out and fail the sweep minutes later."""
    cpus, gpus = cluster.get("CPU", 0), cluster.get("GPU", 0)
    need = resources.num_workers * resources.cpus_per_worker
    if need > cpus:
        raise ValueError(f"a trial needs {need:g} CPUs for its workers; this Ray has {cpus:g}")
    if resources.use_gpu and resources.num_workers > gpus:
        raise ValueError(f"a trial needs {resources.num_workers} GPUs (use_gpu: one per worker); this Ray has "
                         f"{gpus:g}")
    if resources.gpus_per_trial > gpus:
        raise ValueError(f"a trial needs {resources.gpus_per_trial:g} GPUs (gpus_per_trial); this Ray has {gpus:g}")


def param_space(spec: SweepSpec) -> dict:
    """Tune's param_space: the fixed values, and a grid's axes. An Optuna sweep's searched keys
    are `define_by_run`'s."""
    space = dict(spec.fixed)
    if spec.mode == "grid":
        space.update({k: ray.tune.grid_search(v) for k, v in spec.grid.items()})
        if spec.arms:
            space[ARM] = ray.tune.grid_search(spec.arms)
    return space


def define_by_run(spec: SweepSpec):
    """The searched keys as Optuna's define-by-run function: `variant` first, then `psedual.*`
    keys only in trials whose variant uses PseDual. A base trial that drew them would train the
    same model whatever it drew, and TPE would learn from it as if the knobs had mattered.
    A partial of a module-level function: Tune pickles the searcher with the experiment state."""
    search = {key: spec.search[key] for key in sorted(spec.search, key=lambda key: key != "variant")}
    return functools.partial(_draw, search, spec.fixed.get("variant", BASE))


def _draw(search: dict, variant: str, trial) -> None:
    for key, dist in search.items():
        if key.startswith(PSEDUAL_PREFIX) and variant == BASE:
            continue
        (kind, values), = dist.items()
        if kind == "choice":
            value = trial.suggest_categorical(key, values)
        elif kind == "int":
            value = trial.suggest_int(key, *values)
        else:
            value = trial.suggest_float(key, *values, log=kind == "loguniform")
        if key == "variant":
            variant = value
    # the arm, drawn or fixed, for `psedual analyze optuna`'s best trial per arm
    trial.set_user_attr("variant", variant)


def worker_processes(resources: Resources) -> int:
    """The Python worker processes a sweep's running trials hold at once: each trial's Tune actor,
    and for a Ray Train trial its controller and workers."""
    per_trial = 1 + (1 + resources.num_workers if resources.uses_train_workers else 0)
    return resources.max_concurrent * per_trial


def ensure_ray(address: str | None, train_workers: bool = False, log_to_driver: bool = True,
               dashboard: bool = False, workers: int = 0) -> str | None:
    """Attach to `address`, or start a local Ray in-process (the default: never a running cluster
    by accident). A local Ray whose trials drive Ray Train workers gets its dashboard: it serves
    the State API, without which Train's placement-group cleaner cannot see a stopped trial's
    controller (its group stays reserved, and the cleaner logs a warning every few seconds).
    `dashboard`: a local Ray gets it for any sweep. A local Ray's dashboard listens on loopback
    only (it runs jobs for whoever reaches it). `log_to_driver`: the workers' output on this
    terminal (never under CI); else in Ray's logs. `workers`: the worker processes the trials hold
    at once (`worker_processes`), which a local Ray's start-up is sized to. Returns the dashboard's
    URL, if this call started or attached to a Ray that has one."""
    if ray.is_initialized():
        return None
    local = dict(include_dashboard=train_workers or dashboard, dashboard_host="127.0.0.1") if not address else {}
    if not address:
        # the raylet warns ("8 PYTHON worker processes have been started on node ...", printed by this
        # process whatever log_to_driver says) once its workers reach 4x its start-up concurrency, the
        # CPU count unless set: on 2 cores, two Ray Train trials and the tests after them reach it. Sized
        # to the trials' own workers, the warning is left for workers beyond them
        local["_system_config"] = {"worker_maximum_startup_concurrency": max(os.cpu_count() or 1, workers)}
        # a local Ray's workers inherit this: their output goes to logs, never a terminal
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if not sys.stdout.isatty():  # what Ray prints here (its raylet's warnings) without colour codes in a log
        os.environ.setdefault("RAY_COLOR_PREFIX", "0")
    loud = log_to_driver and os.environ.get("CI") is None
    # quiet, Ray's own INFO lines (the dashboard's URL, in colour codes) stay off the terminal too;
    # the URL a sweep asks for is printed by the sweep itself
    context = ray.init(address=address or "local", log_to_driver=loud, configure_logging=True,
                       logging_level=logging.INFO if loud else logging.WARNING, **local)
    url = getattr(context, "dashboard_url", None)
    return f"http://{url}" if url and "://" not in url else url or None


def run_sweep(spec: SweepSpec, storage: str, name: str | None = None, resume: bool = False,
              address: str | None = None, verbose: bool = False, dashboard: bool = False,
              search_alg=None) -> list[TrialOutcome]:
    """Run (or `resume`) the sweep as experiment `name` (default: the sweep's own name).
    `search_alg`: a grid sweep's searcher of its own (`rounds.SeedRounds`, a sweep in rounds): it
    suggests every trial's arm, cell and seed until it finishes; a resumed sweep restores it.
    `verbose`: Ray's own output on the terminal (the trials' logs, Tune's status table); else
    one line per trial and epoch (`progress.Progress`), and Ray's output in its logs.
    `dashboard`: start a local Ray with its dashboard (on loopback), its URL printed."""
    name = name or spec.name
    check_ray_default()
    trackers.check(spec.loggers)  # a missing package is refused before Ray starts
    loud = verbose and os.environ.get("CI") is None
    url = ensure_ray(address, spec.resources.uses_train_workers, log_to_driver=loud, dashboard=dashboard,
                     workers=worker_processes(spec.resources))
    if dashboard:
        print(f"Ray dashboard: {url}" if url else "Ray dashboard: this process's Ray was started before the sweep; "
              "its dashboard, if any, is that Ray's", flush=True)
    callbacks = ([] if loud else [Progress(spec, max_epochs(spec))]) + tracker_callbacks(spec.loggers, storage, name)
    if not loud:
        logs = ray_logs()  # the running Ray's: a cluster's session folder, not /tmp/ray's latest
        quiet_tune_logs(Path(logs) / "psedual-driver.log")
        # the libraries' own INFO lines too ("A new study created in Journal", MLflow's table set-up)
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        for library in ("mlflow", "alembic"):  # alembic: the migrations of MLflow's SQLite store
            logging.getLogger(library).setLevel(logging.WARNING)
        print(f"Ray's own output (each trial's log, Train's checkpoint lines, Tune's status) goes to {logs} "
              f"(a trial's log: on the node it ran on); --verbose shows it here", flush=True)
    if address in (None, "local"):
        check_fits(spec.resources, ray.cluster_resources())
    storage = storage_uri(storage)
    fn = trainable(spec.resources, storage)
    path = f"{storage.rstrip('/')}/{name}"
    if resume:
        if not ray.tune.Tuner.can_restore(path):
            raise ValueError(f"no sweep to resume at {path}")
        if spec.mode == "optuna":
            study.journal(storage, name)  # the restored searcher appends to this file: fetched if remote
            for line in study.close_orphans(storage, name, _continued(path), None if "://" in path else Path(path)):
                print(line, flush=True)
            for line in _not_rerun(spec, path):
                print(line, flush=True)
        # the restored Tuner keeps the callbacks it was pickled with (Progress, the sweep's loggers).
        # An Optuna sweep's failed trials stay failed: the study has told them FAIL, and a finished
        # Optuna trial cannot be reopened, so a rerun would be a trial the study never saw (Ray's
        # OptunaSearch ignores a finished trial's results, and its add_evaluated_point refuses a
        # define-by-run space): each is named in one line instead (`_not_rerun`)
        tuner = ray.tune.Tuner.restore(path, trainable=fn, resume_errored=reruns_errored(spec),
                                       resume_unfinished=True)
    else:
        if "://" not in path and (Path(path) / "tuner.pkl").exists():
            raise ValueError(f"{path} holds a sweep already: --resume {name}, or choose another name")
        tuner = ray.tune.Tuner(fn, param_space=dict(spec.fixed) if search_alg else param_space(spec),
                               tune_config=_tune_config(spec, storage, name, search_alg),
                               run_config=ray.tune.RunConfig(
                                   name=name, storage_path=storage, verbose=1 if loud else 0, callbacks=callbacks,
                                   failure_config=ray.tune.FailureConfig(max_failures=spec.resources.max_failures),
                                   checkpoint_config=ray.tune.CheckpointConfig(num_to_keep=2)))
    if spec.mode == "optuna":
        where = study.local_path(storage, name)
        print(f"Optuna study {name!r}: {study.study_uri(storage, name)} (live: optuna-dashboard {where})", flush=True)
    try:
        with _tune_output(loud):
            tuner.fit()
    finally:  # a stopped sweep's study is kept too: --resume continues it
        if spec.mode == "optuna":
            study.upload(storage, name)
    # the results read back from the experiment's state: a trial whose node was lost before its
    # first report has no metrics, and so no config, in its Result; its Trial has both
    fs, fs_path = filesystem(path)
    analysis = ray.tune.ExperimentAnalysis(fs_path, storage_filesystem=fs)
    return [_outcome(r, t, fs, reruns_errored(spec)) for r, t in zip(ray.tune.ResultGrid(analysis), analysis.trials)]


def _not_rerun(spec: SweepSpec, path: str) -> list[str]:
    """On `--resume` of an Optuna sweep: one line per trial that failed or was lost, which the
    resumed sweep does not rerun, with how it ended; its runs-table row stays as it is."""
    fs, fs_path = filesystem(path)
    analysis = ray.tune.ExperimentAnalysis(fs_path, storage_filesystem=fs)
    lines = []
    for result, trial in zip(ray.tune.ResultGrid(analysis), analysis.trials):
        if trial.status != "ERROR":
            continue
        ended = _outcome(result, trial, fs, rerun=False)
        config = expand(dict(trial.config))
        named = ", ".join(f"{k} {shown(config[k])}" for k in spec.search if k in config)
        said = ended.error if ended.error.endswith(NOT_RERUN) else f"{ended.error}; {NOT_RERUN}"
        lines.append(f"trial {trial.trial_id}{f' ({named})' if named else ''} "
                     f"{'was lost' if ended.status == 'lost' else 'failed'} and is not rerun: {said}")
    return lines


@contextlib.contextmanager
def _tune_output(loud: bool):
    """Quiet, Tune prints nothing of its own: its newer console output prints a "Configuration for
    experiment" box and a TensorBoard hint into Ray's staging folder even at verbose 0, so the
    older one (silent at verbose 0) is chosen for the fit. Tune reads the variable as it starts."""
    if loud:
        yield
        return
    before = os.environ.get("RAY_AIR_NEW_OUTPUT")
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("RAY_AIR_NEW_OUTPUT", None)
        else:
            os.environ["RAY_AIR_NEW_OUTPUT"] = before


def _continued(path: str) -> set[str]:
    """The trials of the experiment state a resumed Tuner restores, but for its failed ones (an
    Optuna sweep's: not resumed): those it continues or has finished."""
    fs, fs_path = filesystem(path)
    trials = ray.tune.ExperimentAnalysis(fs_path, storage_filesystem=fs).trials
    return {t.trial_id for t in trials if t.status != "ERROR"}


def max_epochs(spec: SweepSpec) -> int:
    """The most epochs any trial of the sweep can run: ASHA's `max_t`, whether epochs is fixed,
    searched (the largest choice, or the top of an int range) or left at its default."""
    if "epochs" in spec.search:
        (kind, values), = spec.search["epochs"].items()
        return int(max(values))  # choice: the largest; int: [low, high]
    if "epochs" in spec.grid:
        return int(max(spec.grid["epochs"]))
    return int(spec.fixed.get("epochs", TrainConfig().epochs))


OBJECTIVE = f"best_{SELECT_BY}"
"""What the searcher (TPE), ASHA's rungs and the Tuner's `best_result` rank trials by: each
trial's best validation score so far, the score of the checkpoint it keeps and is tested with
(`psedual.results.best`). The last epoch's score would teach TPE a number no trial is judged by."""


def trial_name(trial) -> str:
    """A trial's name and folder: `<variant>-s<seed>-<id>` (Ray's default embeds the whole config
    and is cut off)."""
    config = expand(trial.config)
    return f"{config.get('variant', BASE)}-s{config.get('seed', 0)}-{trial.trial_id}"


def _tune_config(spec: SweepSpec, storage: str, name: str, search_alg=None) -> ray.tune.TuneConfig:
    # An in-process trial's actor is reused for the next trial: a new actor is a new Python
    # process, and importing torch and the package there cost ~3 s per trial (bench/ray_overhead.py)
    common = dict(metric=OBJECTIVE, mode="max", num_samples=spec.num_samples,
                  max_concurrent_trials=spec.resources.max_concurrent,
                  reuse_actors=not spec.resources.uses_train_workers,
                  trial_name_creator=trial_name, trial_dirname_creator=trial_name)
    if search_alg is not None:  # its trials are as many as it suggests before it says FINISHED
        # and it limits how many run at once itself: Tune's ConcurrencyLimiter forgets its live trials
        # on --resume and would then drop the ends of the trials it resumes
        return ray.tune.TuneConfig(**{**common, "num_samples": -1, "max_concurrent_trials": None},
                                   search_alg=search_alg)
    if spec.mode == "grid":
        return ray.tune.TuneConfig(**common)
    from ray.tune.schedulers import ASHAScheduler

    import optuna

    # a define-by-run space leaves Tune's param_space without search keys, so the searcher is
    # told the metric and mode itself; the study is stored beside the experiment, named as it
    search = study.StudySearch(define_by_run(spec), metric=OBJECTIVE, mode="max",
                               points_to_evaluate=spec.points or None, sampler=optuna.samplers.TPESampler(seed=spec.seed),
                               study_name=name, storage=study.journal(storage, name),
                               epochs=int(spec.fixed.get("epochs", TrainConfig().epochs)))
    asha = dict(time_attr="epoch", max_t=max_epochs(spec), grace_period=spec.grace_period,
                reduction_factor=spec.reduction_factor)
    scheduler = ArmASHA(spec.asha_by, **asha) if spec.asha_by else ASHAScheduler(**asha)
    return ray.tune.TuneConfig(**common, search_alg=search, scheduler=scheduler)


def _outcome(result, trial, fs, rerun: bool = True) -> TrialOutcome:
    """A trial's outcome from its Result and its Trial (whose config and id a Result lacks when
    the trial never reported: its node lost, or its start failed). `fs` is the storage's
    filesystem: Ray Train reports a checkpoint's path on it without the URI's scheme. Its status:
    `completed`, `stopped` (before its last epoch, by the scheduler), `lost` (its node died under it,
    its retries spent: `lost.NodeLoss`) or `error` (a failure, or left unfinished: `unfinished_line`).
    `rerun`: whether `--resume` reruns a lost trial (`reruns_errored`), as its line says."""
    metrics = {k: v for k, v in (result.metrics or {}).items() if k not in _TUNE_KEYS}
    checkpoint = result.checkpoint
    if checkpoint is None and (result.metrics or {}).get("checkpoint_path"):
        checkpoint = Checkpoint(result.metrics["checkpoint_path"], filesystem=fs)  # reported by Ray Train workers
    flat = expand(dict(trial.config))
    epochs, reached = make_config(flat).epochs, int(metrics.get("epoch", 0))
    # A failure is read from the error Tune wrote in the trial's folder on this driver as well as
    # from its state: Ray 2.60 may save an errored trial's state as it was at its last report (RUNNING,
    # no error: when the dead actor is handled before the failed task, the trial's stop finds no actor
    # and returns before marking the trial to be saved), read back as PENDING with no error, which
    # would pass for an early stop (issue 60). A trial retried after a failure and then finished is
    # TERMINATED: its error file is history
    written = error_file(getattr(trial, "local_path", None))
    if result.error is None and trial.status == "TERMINATED":
        return TrialOutcome(trial.trial_id, flat, "completed" if reached >= epochs else "stopped", metrics,
                            checkpoint, None)
    if result.error is None and trial.status != "ERROR" and written is None:
        # Tune's last state has it PENDING, RUNNING or PAUSED and no error: the sweep stopped before it
        # ended (Ctrl-C: Tune saves its state and returns). Not `stopped`, which says the scheduler
        # stopped it: the trial did not finish, and --resume continues it (resume_unfinished)
        line = unfinished_line(trial.status, reached, epochs)
        return TrialOutcome(trial.trial_id, flat, "error", metrics, checkpoint, line)
    error = written[0] if written else result.error
    loss = node_loss(error, reached, epochs, written[1] if written else None)
    if loss is not None:
        return TrialOutcome(trial.trial_id, flat, "lost", metrics, checkpoint, loss.line(rerun))
    # Tune's Result holds the exception a trial raised (pickled), else the error file's whole text: a
    # failure raised on the driver (a searcher's, a callback's) is that text, `Failure # N ...` and all
    raised = result.error if isinstance(result.error, BaseException) else None
    line = error_line(raised) if raised is not None else (
        f"TrialError: {' '.join(written[0].split())[:500]}" if written else
        f"TrialError: {' '.join(str(result.error).split())[:500]}" if result.error is not None else
        "TrialError: Tune recorded the trial as failed; its error file was not found")
    return TrialOutcome(trial.trial_id, flat, "error", metrics, checkpoint, line)


def unfinished_line(status: str, reached: int, epochs: int) -> str:
    """The runs table's `error` of a trial the sweep left unfinished (Tune's last state: `status`)."""
    return (f"Unfinished: the sweep stopped before this trial ended (Tune's state: {status}, after epoch {reached} of "
            f"{epochs}); --resume continues it")


def error_line(error: BaseException | None) -> str | None:
    """The runs table's `Type: message` of a trial's error: the trial's own exception, not Ray's
    wrapper around it (`RayTaskError(X)`, whose message is the whole remote traceback; the
    traceback stays in the trial's error.txt)."""
    if error is None:
        return None
    cause = getattr(error, "cause", None)
    if isinstance(error, RayTaskError) and isinstance(cause, BaseException):
        error = cause
    return f"{type(error).__name__}: {error}"
