"""Seeds in rounds until decided, as a Ray Tune searcher (a grid sweep's `seeds` rule).

`SeedRounds` is a `ray.tune.search.Searcher`: Tune asks it for each next trial and tells it each
trial's end, so the rounds run wherever Tune runs (a local Ray, `ray submit`) and resume with the
experiment (`save`/`restore`: Tune checkpoints the searcher with the experiment state). Round k
suggests seeds looks[k-1]..looks[k]-1 of every arm that an undecided comparison needs; once all of
them have ended, each undecided comparison is judged on its complete seed pairs below looks[k] (the
`judge`: `psedual.seed_rounds`, which runs `analysis.stats.sequential.decide`), and the next round
starts, or the searcher answers FINISHED when every comparison is decided or at its last look.

What a seed is: a trial that trained to its last epoch and was scored (`score`: its checkpoint
tested, `CheckpointScore`). A trial that failed (`error`), was stopped before its last epoch
(`stopped`) or whose node died under it (`lost`: `TrialFailure` reads Tune's error file, as the
runs table does) is no seed: it is listed (`Rounds.lost`, in the runs table's status words) and
never rerun; its seed's pair is incomplete, so the look is judged on fewer pairs, and the look's
row names it (`not_seeds_list`: `3 (treatment: lost)`). A trial the driver cannot score (testing
its checkpoint raised) fails with `ScoreError`: Tune then records it as errored, so the runs table
reads `error` with that line where the look reads `error (not scored: ...)`, and the job exits 1. A trial's end is read in
`on_trial_complete`, never `on_trial_result` (Ray does not call the latter for a result on which
a scheduler stops the trial). This module knows nothing of statistics: the judge decides.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

from ray.tune.error import TuneError
from ray.tune.search import Searcher

from psedual.tune.space import make_config


@dataclass(frozen=True)
class Pair:
    """One planned comparison the rounds decide: `treatment` against `base`, paired by seed."""

    claim: str
    """Its name in the looks table (`gcn vs base (where psedual.control=none)`)."""
    base: str
    """The base arm's id (a key of `RoundPlan.arms`)."""
    treatment: str
    """The treatment arm's id."""


@dataclass(frozen=True)
class RoundPlan:
    """What the rounds run and judge, fixed before the first look."""

    arms: dict
    """Arm id → the trial's flat config without its seed (the arm's keys and its cell's values)."""
    pairs: tuple[Pair, ...]
    """The comparisons, each over two arms."""
    looks: tuple[int, ...]
    """Seed pairs at each look, increasing (`analysis.stats.sequential.schedule`); the seeds are
    0..looks[-1]-1."""
    earlier: dict = field(default_factory=dict)
    """(arm id, seed) → score of seeds an earlier experiment ran (`SeedRule.continue_from`): seeds,
    never rerun."""

    def __post_init__(self) -> None:
        if not self.looks or any(b <= a for a, b in zip(self.looks, self.looks[1:])):
            raise ValueError(f"looks must increase strictly, got {list(self.looks)}")
        if not self.pairs:
            raise ValueError("a sweep in rounds needs a planned comparison (compare:, or a base and a PseDual arm)")
        for p in self.pairs:
            missing = [a for a in (p.base, p.treatment) if a not in self.arms]
            if missing:
                raise ValueError(f"{p.claim}: arms {missing} are not among the plan's {sorted(self.arms)}")
        names = [p.claim for p in self.pairs]
        if len(set(names)) != len(names):
            raise ValueError(f"two comparisons share a name: {names}")


Judge = Callable[[Pair, int, tuple, list], dict]
"""(pair, planned look index, the pair counts of the looks this pair has taken (this one last),
the paired differences in seed order) → the look's row of the looks table, with at least
`decided` (bool) and `verdict` (str)."""
Score = Callable[[str, dict, dict | None], tuple]
"""(trial id, its config, its last result) → (score in points, None) for a seed, or (None, why) for
a trial that is no seed."""
Failure = Callable[[str, dict], str]
"""(trial id, its config) → why a trial Tune reports as errored is no seed: `lost` where its node
died under it, else `error` (the runs table's status)."""

FINISHED = Searcher.FINISHED


@dataclass
class Rounds:
    """The rounds' state: all the searcher saves and restores."""

    plan: RoundPlan
    """What is run and judged."""
    look: int = 0
    """The look (0-based) whose round is running."""
    trials: dict = field(default_factory=dict)
    """Trial id → (arm id, seed): every trial suggested."""
    scores: dict = field(default_factory=dict)
    """(arm id, seed) → score: the seeds."""
    lost: dict = field(default_factory=dict)
    """(arm id, seed) → why it is no seed, in the runs table's status words: `error`, `lost` (its
    node died), `stopped at epoch 3 of 30`, `stopped before its first report`."""
    queue: list = field(default_factory=list)
    """(arm id, seed) still to suggest in this round."""
    counts: dict = field(default_factory=dict)
    """Claim → the pair counts of the looks it has taken."""
    rows: list = field(default_factory=list)
    """Every look's row (the looks table), in order."""
    closed: dict = field(default_factory=dict)
    """Claim → its last row's verdict, once decided or at its last look."""
    finished: bool = False
    """Every claim closed: the searcher answers FINISHED."""

    def __post_init__(self) -> None:
        if not self.trials and not self.queue and not self.rows:
            self.scores.update(self.plan.earlier)
            self.queue = self._round(0)

    @property
    def pending(self) -> list[str]:
        """Trials suggested that have not ended."""
        return [t for t, key in self.trials.items() if key not in self.scores and key not in self.lost]

    def open_pairs(self) -> list[Pair]:
        return [p for p in self.plan.pairs if p.claim not in self.closed]

    def _round(self, look: int) -> list[tuple[str, int]]:
        """The (arm, seed) of look `look`'s round: its new seeds of every arm an open claim needs,
        but for those run already (suggested, scored or lost: never rerun)."""
        start = self.plan.looks[look - 1] if look else 0
        arms = dict.fromkeys(a for p in self.open_pairs() for a in (p.base, p.treatment))
        suggested = set(self.trials.values())
        return [(arm, seed) for seed in range(start, self.plan.looks[look]) for arm in arms
                if (arm, seed) not in self.scores and (arm, seed) not in self.lost and (arm, seed) not in suggested]

    def next(self, trial_id: str, judge: Judge) -> dict | str | None:
        """The config of the next trial (recorded under `trial_id`), None while the round's trials
        run (Tune asks again), FINISHED once every claim is closed."""
        while not self.finished and not self.queue and not self.pending:
            self._judge(judge)
        if self.finished:
            return FINISHED
        if not self.queue:
            return None
        arm, seed = self.queue.pop(0)
        self.trials[trial_id] = (arm, seed)
        return {**self.plan.arms[arm], "seed": seed}

    def complete(self, trial_id: str, score: float | None, why: str | None) -> None:
        """A trial ended: a seed with its score, or no seed and why. A trial Tune reruns (a resumed
        experiment's errored trial) may end again: its last end counts."""
        key = self.trials.get(trial_id)
        if key is None:
            return  # not one of ours (a trial of an earlier searcher)
        self.scores.pop(key, None)
        self.lost.pop(key, None)
        if score is None:
            self.lost[key] = why or "no score"
        else:
            self.scores[key] = float(score)

    def _judge(self, judge: Judge) -> None:
        """Look `look` for each open claim; close the decided ones and those at the last look;
        then the next round, or finished."""
        k, last = self.look, self.look == len(self.plan.looks) - 1
        for p in self.open_pairs():
            seeds = [s for s in range(self.plan.looks[k])
                     if (p.base, s) in self.scores and (p.treatment, s) in self.scores]
            why = {s: [f"{role}: {self.lost[(a, s)]}" for role, a in (("base", p.base), ("treatment", p.treatment))
                       if (a, s) in self.lost] for s in range(self.plan.looks[k])}
            lost = [s for s, said in why.items() if said]
            taken = self.counts.setdefault(p.claim, [])
            n = len(seeds)
            if n < 3 or (taken and n <= taken[-1]):
                row = {"claim": p.claim, "look": k + 1, "planned_look": k + 1, "seeds": n, "decided": False,
                       "verdict": f"no look at {self.plan.looks[k]} seeds: {n} complete seed pairs"
                                  + (f" (seed{'s' * (len(lost) > 1)} {', '.join(map(str, lost))} "
                                     f"{'are no seeds' if len(lost) > 1 else 'is no seed'}: failed, stopped or lost)"
                                     if lost else "")}
            else:
                taken.append(n)
                diffs = [self.scores[(p.treatment, s)] - self.scores[(p.base, s)] for s in seeds]
                row = judge(p, k, tuple(taken), diffs)
            row = {**row, "planned_seeds": self.plan.looks[k], "not_seeds": len(lost),
                   "not_seeds_list": ", ".join(f"{s} ({'; '.join(why[s])})" for s in lost)}
            self.rows.append(row)
            if row["decided"] or last:
                self.closed[p.claim] = row["verdict"]
        if last or not self.open_pairs():
            self.finished = True
            return
        self.look += 1
        self.queue = self._round(self.look)


class SeedRounds(Searcher):
    """Tune's searcher for a sweep in rounds (see the module's docstring)."""

    def __init__(self, plan: RoundPlan, judge: Judge, score: Score, write: Callable[[list], object] | None = None,
                 max_concurrent: int = 0, metric: str | None = None, mode: str | None = None,
                 failure: Failure | None = None):
        super().__init__(metric=metric, mode=mode)
        self.judge, self.score, self.write = judge, score, write
        self.failure = failure
        """Why an errored trial is no seed (`TrialFailure`); none: `error`."""
        self.max_concurrent = max_concurrent
        """Trials running at once (0: no limit). Limited here, not by Tune's ConcurrencyLimiter: that
        one forgets its live trials when a sweep is resumed and drops the ends of those it resumes."""
        self.rounds = Rounds(plan)
        self.unscored: dict[str, str] = {}
        """Trial id → `Type: message` of the error that kept the driver from scoring it (`ScoreError`)."""

    def suggest(self, trial_id: str) -> dict | str | None:
        if self.max_concurrent and len(self.rounds.pending) >= self.max_concurrent:
            return None
        looked = len(self.rounds.rows)
        got = self.rounds.next(trial_id, self.judge)
        if self.write is not None and len(self.rounds.rows) != looked:
            self.write(list(self.rounds.rows))  # the looks table, whole, at every look
        return got

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        key = self.rounds.trials.get(trial_id)
        if key is None:
            return
        arm, seed = key
        config = {**self.rounds.plan.arms[arm], "seed": seed}
        unscored = self.__dict__.setdefault("unscored", {})  # a searcher pickled before it had one (--resume)
        if error:  # Tune wrote the trial's error file before telling its searcher
            score, why = None, self.failure(trial_id, config) if self.failure is not None else "error"
            if trial_id in unscored and why == "error":
                why = f"error (not scored: {unscored[trial_id]})"
        else:
            try:
                score, why = self.score(trial_id, config, result)
            except Exception as err:  # whatever testing the checkpoint raised (torch, storage, data): said, not lost
                unscored[trial_id] = f"{type(err).__name__}: {err}"
                raise ScoreError(trial_id, unscored[trial_id]) from err
        unscored.pop(trial_id, None)
        self.rounds.complete(trial_id, score, why)

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as f:
            pickle.dump(self.rounds, f)  # `unscored` is not kept: a resumed sweep reruns and scores such a trial

    def restore(self, checkpoint_path: str) -> None:
        # the searcher's own checkpoint, written by `save` in this experiment's folder: no foreign data
        with open(checkpoint_path, "rb") as f:
            self.rounds = pickle.load(f)


class ScoreError(TuneError):
    """The driver could not score a trial that ended (its checkpoint's test raised). Raised from the
    searcher's `on_trial_complete`, Tune fails the trial with it (retried as any failure, up to
    `resources.max_failures`): the runs table's row is then `error` with this line, the look counts the
    trial as no seed (`error (not scored: ...)`), and the job exits 1; `--resume` reruns and scores it."""

    def __init__(self, trial_id: str, cause: str) -> None:
        super().__init__(f"ScoreError: trial {trial_id} ended, but the driver could not test its checkpoint for "
                         f"the looks ({cause}): no seed unless scored; --resume reruns and scores it")


@dataclass(frozen=True)
class CheckpointScore:
    """A trial's score as the looks read it: its kept checkpoint tested once, test value accuracy
    in points, in this (the driver's) process. Not in a Ray task holding a trial's CPUs: the trials
    of the round still running and the actors Tune keeps for reuse hold them, and the searcher waits
    on the test inside Tune's loop, so that task would never be placed. A trial that did not reach
    its last epoch is no seed (`stopped at epoch 3 of 30`). The tables' test after the sweep tests
    the checkpoint again, on the trial's own resources."""

    storage: str
    """The sweep's storage URI."""
    experiment: str
    """The experiment's name (its trials' folders are under storage/experiment)."""

    def __call__(self, trial_id: str, config: dict, result: dict | None) -> tuple[float | None, str | None]:
        from ray.train import Checkpoint

        from psedual.storage import filesystem
        from psedual.tune.evaluate import evaluate_checkpoint
        from psedual.tune.sweep import trial_name

        epochs = make_config(config).epochs
        if not result or "epoch" not in result:
            return None, "stopped before its first report"
        if result["epoch"] < epochs:
            return None, f"stopped at epoch {result['epoch']} of {epochs}"
        fs, _ = filesystem(self.storage)
        if result.get("checkpoint_path"):  # reported by Ray Train workers, on the storage's filesystem
            path = result["checkpoint_path"]
        elif result.get("checkpoint_dir_name"):
            _, base = filesystem(f"{self.storage.rstrip('/')}/{self.experiment}")
            folder = trial_name(SimpleNamespace(config=config, trial_id=trial_id))
            path = f"{base}/{folder}/{result['checkpoint_dir_name']}"
        else:
            return None, "no checkpoint reported"
        return 100.0 * float(evaluate_checkpoint(Checkpoint(path, filesystem=fs)).result.test_value_acc), None


@dataclass(frozen=True)
class TrialFailure:
    """Why a trial Tune reports as errored is no seed, as the runs table will say it (`sweep._outcome`):
    `lost` where Tune's error file names a node that died under it (`lost.lost_node`), else `error`.
    Tune writes that file in the trial's folder on the driver (`Trial.handle_error`, in its staging
    folder `<Ray session>/artifacts/<start>/<experiment>/driver_artifacts/<trial>`, one `<start>` per
    run of the experiment: the newest) before it tells the searcher."""

    experiment: str
    """The experiment's name (its folder under each run's staging folder)."""

    def __call__(self, trial_id: str, config: dict) -> str:
        from psedual.tune.lost import error_file, lost_node, ray_session
        from psedual.tune.sweep import trial_name

        session = ray_session()
        if session is None:
            return "error"
        folder = trial_name(SimpleNamespace(config=config, trial_id=trial_id))
        written = [w for w in (error_file(f.parent) for f in
                               session.glob(f"artifacts/*/{self.experiment}/driver_artifacts/{folder}/error.txt")) if w]
        if not written:
            return "error"
        text, _ = max(written, key=lambda w: w[1])
        return "lost" if lost_node(text) is not None else "error"
