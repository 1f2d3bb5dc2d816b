"""After a sweep: each trial's chosen checkpoint tested once, side by side as Ray tasks, and the
trials written to the result tables (`psedual.results.collect.write_trials`).

A test reads its checkpoint where it lies (a local checkpoint is not copied; a remote one is
fetched once) and returns its `Tested` record in memory: nothing is written to be read back.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from psedual.results.collect import SweptTrial, code_version, write_trials
from psedual.results.records import Trial
from psedual.results.row import Tested
from psedual.train.config import TrainConfig
from psedual.train.resources import Resources
from psedual.train.test import evaluate_run
from psedual.tune.outcome import TrialOutcome


def evaluate_checkpoint(checkpoint) -> Tested:
    """Test a trial's checkpoint (its run folder's training files) once, on the device its config
    names (`auto`: the GPU of the Ray task that runs this, if it has one)."""
    with checkpoint.as_directory() as folder:
        return evaluate_run(Path(folder))


def evaluate_trials(outcomes: list[TrialOutcome], resources: Resources | None = None) -> dict[str, Tested]:
    """Test every trial that left a checkpoint. With `resources` (and Ray running, as after a
    sweep) each test is a Ray task holding what one of the trial's workers held (its CPUs, its
    GPU), so the tests run side by side across the cluster; without, one after another here."""
    todo = [o for o in outcomes if o.checkpoint is not None]
    if resources is None or not todo:
        return {o.trial: evaluate_checkpoint(o.checkpoint) for o in todo}
    import ray

    task = ray.remote(num_cpus=resources.cpus_per_worker, num_gpus=resources.gpus_per_worker,
                      max_retries=0)(evaluate_checkpoint)
    return dict(zip((o.trial for o in todo), ray.get([task.remote(o.checkpoint) for o in todo])))


def collect(outcomes: list[TrialOutcome], root: str, experiment: str,
            resources: Resources | None = None) -> pl.DataFrame:
    """Test each trial's checkpoint (see `evaluate_trials`: in parallel Ray tasks with `resources`),
    write `runs`, `epochs` and `predictions` for every trial; return the runs rows."""
    version = code_version()
    tested = evaluate_trials(outcomes, resources)
    return write_trials([SweptTrial(Trial(o.trial, o.status, o.error, version), TrainConfig.from_flat(o.flat),
                                    o.metrics.get("epoch", 0), tested.get(o.trial)) for o in outcomes],
                        root, experiment)
