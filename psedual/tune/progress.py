"""What a sweep prints while it runs: one line per trial start, epoch and end, from the driver.

Without `--verbose` the trials' own output (each worker's log, Ray Train's checkpoint and
reporting lines, Tune's status table and snapshot warnings) stays in Ray's session logs, and
this callback is the terminal's view of the sweep: a 9-trial, 5-epoch main job prints about 60
lines here instead of about 1,000.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import ray.tune

from psedual.tune.space import SweepSpec, expand

RAY_LOGS = "/tmp/ray/session_latest/logs"
"""Where a local Ray keeps its logs (the trials' output included); on a cluster, the head's."""


def varied(spec: SweepSpec) -> list[str]:
    """The keys whose value tells one trial of the sweep from another (grid, arms, search)."""
    keys = [*spec.grid, *spec.search, *(k for arm in spec.arms for k in arm)]
    return list(dict.fromkeys(keys))


class Progress(ray.tune.Callback):
    """Prints each trial's start, every epoch's training loss and validation accuracy, and its end."""

    def __init__(self, spec: SweepSpec, epochs: int, stream=None) -> None:
        # the stream is looked up when printing: Tune pickles its callbacks with the experiment
        self.keys, self.epochs, self.stream = varied(spec), epochs, stream

    def _name(self, trial) -> str:
        config = expand(trial.config)
        shown = ", ".join(f"{k} {config[k]}" for k in self.keys if k in config)
        return f"trial {trial.trial_id}" + (f" ({shown})" if shown else "")

    def _say(self, line: str) -> None:
        print(line, file=self.stream or sys.stdout, flush=True)

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        self._say(f"{self._name(trial)} started")

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        if "epoch" not in result:
            return
        infill = f", infilling loss {result['infill_loss']:.4f}" if result.get("infill_loss") is not None else ""
        self._say(f"{self._name(trial)} epoch {result['epoch']}/{self.epochs}: loss {result['train_loss']:.4f}"
                  f"{infill}, valid value {100 * result['valid_value_acc']:.1f}%")

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        self._say(f"{self._name(trial)} done")

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self._say(f"{self._name(trial)} FAILED (its log: {RAY_LOGS})")


def quiet_tune_logs(path: str | Path) -> None:
    """Send the driver's Ray Tune and Train log records (snapshot and syncing warnings) to `path`
    instead of the terminal."""
    path = str(Path(path).resolve())
    handler = None
    for name in ("ray.tune", "ray.train"):
        logger = logging.getLogger(name)
        logger.propagate = False
        # once per file: a paper job runs a sweep per part in one process
        if any(getattr(h, "baseFilename", None) == path for h in logger.handlers):
            continue
        if handler is None:
            handler = logging.FileHandler(path)
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
