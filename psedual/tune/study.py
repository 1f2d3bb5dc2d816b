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
node, same path) fetches the storage's copy first.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

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
    """Ray's `OptunaSearch`, each Optuna trial tagged with its Ray trial id (user attribute
    `trial`), so that a study's trial can be found in the runs table and its trial folder."""

    def suggest(self, trial_id: str) -> dict | None:
        config = super().suggest(trial_id)
        # OptunaSearch keeps each Ray trial's Optuna trial here; it has no hook of its own for this
        ot_trial = self._ot_trials.get(trial_id)
        if ot_trial is not None and ot_trial.user_attrs.get(TRIAL_ATTR) != trial_id:
            ot_trial.set_user_attr(TRIAL_ATTR, trial_id)
        return config
