"""What a sweep prints while it runs: one line per trial start, epoch and end, and where the sweep
stands (trials done, running and pending of N, the time spent and an estimate of what is left),
from the driver.

Without `--verbose` the trials' own output (each worker's log, Ray Train's checkpoint and
reporting lines, Tune's status table and snapshot warnings) stays in Ray's session logs, and
this callback is the terminal's view of the sweep: a 9-trial, 5-epoch main job prints about 60
lines here instead of about 1,000. Off a terminal (a log, CI) every line is plain; on one, a
progress bar of the trials stands under them.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import ray.tune

from psedual.train.config import TrainConfig
from psedual.tune.lost import NOT_RERUN, RAY_LOGS, error_file, lost_node, ray_logs, reruns_errored  # noqa: F401  (RAY_LOGS: re-exported)
from psedual.tune.seed_rule import SeedRule
from psedual.tune.space import SweepSpec, expand


def varied(spec: SweepSpec) -> list[str]:
    """The keys whose value tells one trial of the sweep from another (grid, arms, search)."""
    keys = [*spec.grid, *spec.search, *(k for arm in spec.arms for k in arm)]
    return list(dict.fromkeys(keys))


def shown(value: object) -> str:
    """A config value as a line shows it: a float to 3 significant digits (a drawn learning rate
    has 17), anything else as it is."""
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def duration(seconds: float) -> str:
    """`45 s`, `3 min 05 s`, `2 h 04 min`."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def plural(n: int, word: str) -> str:
    """`1 trial`, `2 trials`."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class Progress(ray.tune.Callback):
    """Prints each trial's start, every epoch's training loss and validation accuracy, and its end
    (done, stopped early by the scheduler, failed, or lost with its node), each end with where the
    sweep stands; a trial retried after a failure (`resources.max_failures`) says so."""

    def __init__(self, spec: SweepSpec, epochs: int, stream=None, total: int | None = None,
                 bar: bool | None = None) -> None:
        # the stream is looked up when printing: Tune pickles its callbacks with the experiment
        self.keys, self.epochs, self.stream = varied(spec), epochs, stream
        self.default_epochs = int(spec.fixed.get("epochs", TrainConfig().epochs))
        rule = spec.seeds if isinstance(spec.seeds, SeedRule) else None
        self.rounds = rule is not None
        """Seeds in rounds until decided: the count is a most, not a plan (a decided claim stops early)."""
        self.reruns = reruns_errored(spec)
        """Whether --resume reruns a lost trial (not in an Optuna sweep)."""
        self.total = total if total is not None else (
            spec.num_samples if spec.mode == "optuna" else
            len(spec.trial_configs()) * (rule.max - (rule.taken or 0)) if rule is not None else
            len(spec.trial_configs()) * spec.num_samples)
        self.bar = bar
        """A progress bar under the lines: None decides when the sweep starts (a terminal only)."""
        self.began: float | None = None
        self.epoch_of: dict[str, int] = {}
        """Each trial's last reported epoch."""
        self.ends: dict[str, str] = {}
        """Each ended trial's end: `done`, `stopped`, `failed` or `lost` (its node died)."""
        self._tqdm = None

    def __getstate__(self) -> dict:
        # a bar is this terminal's; a restored sweep (--resume) draws its own
        return {**self.__dict__, "_tqdm": None, "began": None}

    def __setstate__(self, state: dict) -> None:
        # a sweep pickled by an earlier version (--resume) has only its names and epochs
        self.__dict__.update({"default_epochs": state.get("epochs"), "total": 0, "rounds": False, "bar": None,
                              "began": None, "epoch_of": {}, "ends": {}, "_tqdm": None, **state})

    def setup(self, stop=None, num_samples=None, total_num_samples=None, **info) -> None:
        self.began = time.monotonic()
        if total_num_samples and total_num_samples < 10 ** 9:  # Tune's count (a search without end: huge)
            self.total = total_num_samples
        if self.bar is None:
            self.bar = (self.stream or sys.stdout).isatty()
        if self.bar:
            from tqdm import tqdm

            self._tqdm = tqdm(total=self.total, unit="trial", desc="sweep", file=self.stream or sys.stdout,
                              initial=len(self.ends), dynamic_ncols=True)

    def _name(self, trial) -> str:
        config = expand(trial.config)
        named = ", ".join(f"{k} {shown(config[k])}" for k in self.keys if k in config)
        return f"trial {trial.trial_id}" + (f" ({named})" if named else "")

    def _planned(self, trial) -> int:
        return int(expand(trial.config).get("epochs", self.default_epochs))

    def _say(self, line: str) -> None:
        if self._tqdm is not None:
            self._tqdm.write(line, file=self.stream or sys.stdout)
        else:
            print(line, file=self.stream or sys.stdout, flush=True)

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        self._say(f"{self._name(trial)} started")

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        if "epoch" not in result:
            return
        self.epoch_of[trial.trial_id] = int(result["epoch"])
        infill = f", infilling loss {result['infill_loss']:.4f}" if result.get("infill_loss") is not None else ""
        self._say(f"{self._name(trial)} epoch {result['epoch']}/{self._planned(trial)}: loss "
                  f"{result['train_loss']:.4f}{infill}, valid value {100 * result['valid_value_acc']:.1f}%")

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        reached, planned = self.epoch_of.get(trial.trial_id, 0), self._planned(trial)
        if reached < planned:
            self._end(trials, trial, "stopped", f"stopped early by the scheduler at epoch {reached}/{planned}")
        else:
            self._end(trials, trial, "done", "done")

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        node = _node_lost(trial)
        if node is None:
            self._end(trials, trial, "failed", f"FAILED (its log: {ray_logs()})")
            return
        reached, planned = self.epoch_of.get(trial.trial_id, 0), self._planned(trial)
        todo = "the trial must be rerun (--resume)" if getattr(self, "reruns", True) else NOT_RERUN
        self._end(trials, trial, "lost", f"LOST: its node {node} died after epoch {reached}/{planned}; {todo}; "
                  f"its log: {ray_logs()} on that node")

    def on_trial_recover(self, iteration, trials, trial, **info) -> None:
        node = _node_lost(trial)
        why = f"its node {node} died" if node else "it failed"
        self._say(f"{self._name(trial)} {why} after epoch {self.epoch_of.get(trial.trial_id, 0)}/"
                  f"{self._planned(trial)}: retried from its last checkpoint (its log: {ray_logs()})")

    def _end(self, trials, trial, end: str, said: str) -> None:
        self.ends[trial.trial_id] = end
        self._say(f"{self._name(trial)} {said}")
        self._say(self.standing(trials))
        if self._tqdm is not None:
            self._tqdm.update(1)
            self._tqdm.refresh()  # at once: tqdm redraws at most every 0.1 s by itself

    def standing(self, trials) -> str:
        """Where the sweep stands: `sweep: 3 of 9 trials ended (2 done, 1 stopped), 2 running, 4
        pending; 1 min 10 s so far, about 2 min 20 s left`."""
        ended = len(self.ends)
        counts = {end: sum(1 for e in self.ends.values() if e == end) for end in ("done", "stopped", "failed", "lost")}
        how = ", ".join(f"{n} {end}" for end, n in counts.items() if n)
        # Tune calls a trial's end before it marks the trial TERMINATED
        running = sum(1 for t in trials if t.status == "RUNNING" and t.trial_id not in self.ends)
        pending = max(0, self.total - ended - running)
        most = "at most " if self.rounds else ""
        line = (f"sweep: {ended} of {most}{plural(self.total, 'trial')} ended" + (f" ({how})" if how else "") +
                f", {running} running, " + (f"up to {pending} more in rounds until decided" if self.rounds
                                            else f"{pending} pending"))
        if self.began is None:
            return line
        spent = time.monotonic() - self.began
        line += f"; {duration(spent)} so far"
        left = self.left(trials, spent, pending)
        return line + (f", {most}about {duration(left)} left" if left is not None else "")

    def left(self, trials, spent: float, pending: int) -> float | None:
        """Seconds left at the pace so far: the epochs still to run (running trials' rest, pending
        trials' whole) over the epochs run per second; None before any epoch. With early stopping
        it is an upper bound (a stopped trial's epochs never run)."""
        run = sum(self.epoch_of.values())
        if not run or spent <= 0:
            return None
        live = [t for t in trials if t.status == "RUNNING" and t.trial_id not in self.ends]
        todo = sum(max(0, self._planned(t) - self.epoch_of.get(t.trial_id, 0)) for t in live)
        todo += pending * self.epochs
        return todo * spent / run


def _node_lost(trial) -> str | None:
    """The node whose death failed `trial`, from the error Tune has just written in the trial's
    folder on this machine; None if it failed by itself."""
    found = error_file(getattr(trial, "local_path", None))
    return lost_node(found[0]) if found else None


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
