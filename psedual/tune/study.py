"""An Optuna sweep's study, kept beside its experiment so that it outlives the sweep.

Ray's `OptunaSearch` takes an Optuna storage (and a study name) and creates the study in it with
`load_if_exists`: here it is Optuna's JournalStorage over a file on the driver, where the searcher
runs, and the study is named as the experiment. With a local results root the file is written in
place (`<root>/<experiment>/optuna.journal`); with remote storage (s3://, gs://) Optuna cannot
append to the object, so the driver keeps the file in a local cache and copies it to the storage
when the sweep ends (or stops). `optuna.load_study`, optuna-dashboard and Optuna's plots open the
file (`psedual analyze optuna`).

`--resume`: Tune restores the searcher it pickled, which holds this same storage (its file path),
so the resumed sweep appends to the same study; a driver without the local file (another head
node, same path) fetches the storage's copy first. The study's RUNNING trials that the restored
experiment does not continue are told FAIL first (`close_orphans`).

`StudySearch` makes the study the sweep: every epoch an intermediate value, the last included,
an early stop PRUNED, a failure FAIL (docs/sweeps.md, "The study is the sweep").
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import optuna
import pyarrow.fs as pafs
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from ray.tune.search.optuna import OptunaSearch

from psedual.storage import STUDY_FILE, filesystem, storage_uri, study_uri

TRIAL_ATTR = "trial"
"""The Optuna trial's user attribute holding its Ray trial id: the runs table's `trial` column."""
ARM_ATTR = "variant"
"""The Optuna trial's user attribute holding its arm (drawn or fixed: `sweep.define_by_run`)."""


def local_path(storage: str, name: str) -> Path:
    """The study's file on this driver: in the experiment's folder for a local root, else in a
    cache keyed by the storage URI (`$XDG_CACHE_HOME` or ~/.cache, /psedual/studies/)."""
    storage = storage_uri(storage)
    if "://" not in storage:
        return Path(storage) / name / STUDY_FILE
    cache = Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "psedual" / "studies"
    return cache / hashlib.sha256(storage.encode()).hexdigest()[:16] / name / STUDY_FILE


def journal(storage: str, name: str) -> JournalStorage:
    """The study's Optuna storage on this driver; a remote storage's copy is fetched first when
    this driver has no file of its own (a resumed sweep on another machine)."""
    path = local_path(storage, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    remote = study_uri(storage, name)
    if "://" in remote and not path.exists():
        fs, fs_path = filesystem(remote)
        if fs.get_file_info(fs_path).type == pafs.FileType.File:
            with fs.open_input_stream(fs_path) as src:
                path.write_bytes(src.read())
    return JournalStorage(JournalFileBackend(str(path)))


def upload(storage: str, name: str) -> str:
    """Copy the driver's study file to a remote storage (nothing to do for a local root, where it
    was written in place); the study's location in the storage."""
    remote = study_uri(storage, name)
    path = local_path(storage, name)
    if "://" in remote and path.exists():
        fs, fs_path = filesystem(remote)
        fs.create_dir(fs_path.rsplit("/", 1)[0], recursive=True)  # a local filesystem needs the folder
        with fs.open_output_stream(fs_path) as dst:
            dst.write(path.read_bytes())
    return remote


class StudySearch(OptunaSearch):
    """Ray's `OptunaSearch`, so that the study is the sweep: each Optuna trial tagged with its Ray
    trial id (user attribute `trial`), every epoch an intermediate value (the last one included),
    a trial stopped early (ASHA) PRUNED with its last value, a failed one FAIL.

    Ray hands a searcher a trial's result only while the scheduler lets the trial go on: a trial's
    last result (reaching `max_t`, or its function returning) and an ASHA stop are STOP decisions,
    and reach the searcher only as the trial's end. And Ray's `OptunaSearch` tells Optuna any end
    with a score as COMPLETE. Both are put right here, through Optuna's own `report` and `tell`."""

    def __init__(self, *args, epochs: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._epochs = epochs
        """The epochs a trial runs unless stopped (its drawn `epochs` where the sweep searches it)."""

    def suggest(self, trial_id: str) -> dict | None:
        config = super().suggest(trial_id)
        # OptunaSearch keeps each Ray trial's Optuna trial here; it has no hook of its own for this
        ot_trial = self._ot_trials.get(trial_id)
        if ot_trial is not None and ot_trial.user_attrs.get(TRIAL_ATTR) != trial_id:
            ot_trial.set_user_attr(TRIAL_ATTR, trial_id)
        return config

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        # the trainer's own epoch is the step (Ray's `training_iteration` counts reports, and a
        # trial restored from its checkpoint re-reports no epoch it had before)
        if trial_id in self._completed_trials or "epoch" not in result or self.metric not in result:
            return super().on_trial_result(trial_id, result)
        self._report(trial_id, result)

    def _report(self, trial_id: str, result: dict) -> None:
        step, stored = int(result["epoch"]), self._stored(trial_id)
        # a resumed trial may re-report an epoch the journal holds already
        if stored is not None and step not in stored.intermediate_values:
            self._ot_trials[trial_id].report(result[self.metric], step)

    def _stored(self, trial_id: str):
        """The Ray trial's Optuna trial as the study holds it, while RUNNING; else None (told already).
        The study's file, not this searcher's memory: a resumed searcher is as old as Tune's state."""
        number = self._ot_trials[trial_id].number
        running = self._ot_study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
        return next((t for t in running if t.number == number), None)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        if trial_id in self._completed_trials or trial_id not in self._ot_trials:
            return super().on_trial_complete(trial_id, result, error)
        if self._stored(trial_id) is None:  # told already: a trial that ended after the state Tune resumed from
            self._completed_trials.add(trial_id)
            return None
        if result and "epoch" in result and self.metric in result:
            self._report(trial_id, result)  # the epoch the STOP decision kept from on_trial_result
        ot_trial = self._ot_trials[trial_id]
        # a searcher pickled by an earlier version (--resume) lacks `_epochs`: every end a COMPLETE, as then
        planned = int(ot_trial.params.get("epochs", getattr(self, "_epochs", 0)))
        if error or not result or self.metric not in result:
            state, value = optuna.trial.TrialState.FAIL, None
        elif int(result.get("epoch", 0)) < planned:  # stopped by the scheduler: Optuna's pruned
            state, value = optuna.trial.TrialState.PRUNED, None  # Optuna keeps its last intermediate value
        else:
            state, value = optuna.trial.TrialState.COMPLETE, result[self.metric]
        self._ot_study.tell(ot_trial, value, state=state)
        self._completed_trials.add(trial_id)


def close_orphans(storage: str, name: str, continued: set[str], folders: Path | None) -> list[str]:
    """On `--resume`: the study's RUNNING trials that Tune will not continue, told FAIL.

    The study is written as the sweep goes, Tune's experiment state only every few seconds: a
    driver killed between the two leaves Optuna trials that Tune's restored state never had (the
    restored searcher draws their configs again as new trials) or that it will not run again.
    `continued`: the Ray trial ids the restored Tuner runs or has finished. `folders`: the local
    experiment folder, where such a trial's folder (`<variant>-s<seed>-<id>`, nothing in it
    resumable) is removed. Returns one line per trial closed."""
    study = optuna.load_study(study_name=name, storage=journal(storage, name))
    lines = []
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        ray_id = t.user_attrs.get(TRIAL_ATTR)
        if ray_id in continued:
            continue
        study.tell(t.number, state=optuna.trial.TrialState.FAIL)
        gone = sorted(folders.glob(f"*-{ray_id}")) if folders is not None and ray_id else []
        for folder in gone:
            shutil.rmtree(folder)
        where = f"; its folder {gone[0]} removed" if gone else ""
        lines.append(f"Optuna trial {t.number} (Ray trial {ray_id}) was running when the sweep stopped and "
                     f"Tune will not continue it: marked FAIL{where}")
    return lines
