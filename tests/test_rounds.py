"""Seeds in rounds until decided (issue 57): the sweep file's `seeds` rule, the searcher's rounds on
fake results (a decided claim stops, an undecided one continues, the last look reads "undecided at N
seeds", a failed trial is no seed and never rerun, a restored searcher continues where it stopped),
the looks table, `--plan`, and a tiny sweep in rounds on a local Ray with a cheap trainable."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import polars as pl
import pytest

from psedual import seed_rounds
from psedual.results.looks import looks_path, write_looks
from ray.tune.error import TuneError

from psedual.tune.rounds import FINISHED, Pair, RoundPlan, ScoreError, SeedRounds
from psedual.tune.seed_rule import SeedRule
from psedual.tune.space import SpecError, build_spec

ROOT = Path(__file__).parent.parent
ARMS = {"a": {"variant": "base"}, "b": {"variant": "gcn"}, "c": {"variant": "gru"}}
PAIRS = (Pair("b vs a", "a", "b"), Pair("c vs a", "a", "c"))
RULE = SeedRule(first=3, step=2, max=7, target=0.9)
LOOKS = seed_rounds.design(RULE).looks  # 3, 5, 7


def real_judge(goals=None):
    return functools.partial(seed_rounds.judge, RULE, goals or {}, LOOKS)


def base_score(seed: int) -> float:
    return 80.0 + (seed * 7919 % 13) / 5.0  # a base accuracy that varies by seed


# b is far better than a at every seed (decided at the first look); c is a's score with a little noise
# around 0 (never "better", too few seeds for "equivalent within ±0.45" or "smaller than +0.9" at sd ~2)
SCORES = {"a": base_score, "b": lambda s: base_score(s) + 5.0 + (s % 3) * 0.1,
          "c": lambda s: base_score(s) + (2.0 if s % 2 else -2.0) + s * 0.05}


def run_rounds(searcher: SeedRounds, fail: set = frozenset(), stop_after: int | None = None) -> list:
    """Drive the searcher as Tune would: ask for trials until none (the round's trials then end)
    or FINISHED; returns the (arm, seed) suggested, in order. `fail`: (arm, seed) that error."""
    suggested, n = [], 0
    while True:
        started = []
        while True:
            got = searcher.suggest(f"t{len(searcher.rounds.trials)}")
            if got is None or got == FINISHED:
                break
            started.append(f"t{len(searcher.rounds.trials) - 1}")
        if got == FINISHED:
            return suggested
        for trial in started:
            arm, seed = searcher.rounds.trials[trial]
            suggested.append((arm, seed))
            try:
                searcher.on_trial_complete(trial, {"epoch": 1, "score": SCORES[arm](seed)}, error=(arm, seed) in fail)
            except TuneError:  # as Tune: a trial whose end its searcher raised a TuneError on fails, and is told so
                searcher.on_trial_complete(trial, error=True)
            n += 1
            if stop_after is not None and n >= stop_after:
                return suggested


def score(trial_id, config, result):
    return (result["score"], None) if result and "score" in result else (None, "no result")


def test_a_decided_claim_stops_its_arm_and_an_undecided_one_runs_to_the_last_look():
    searcher = SeedRounds(RoundPlan(ARMS, PAIRS, LOOKS), real_judge(), score)
    suggested = run_rounds(searcher)
    # round 1: seeds 0-2 of every arm; then b's claim is decided ("better"), so b gets no more seeds
    assert sorted(s for a, s in suggested if a == "b") == [0, 1, 2]
    assert sorted(s for a, s in suggested if a == "c") == list(range(7))
    assert sorted(s for a, s in suggested if a == "a") == list(range(7))
    assert len(suggested) == len(set(suggested))  # no seed run twice
    rows = searcher.rounds.rows
    assert [(r["claim"], r["planned_look"]) for r in rows] == [("b vs a", 1), ("c vs a", 1), ("c vs a", 2),
                                                               ("c vs a", 3)]
    assert rows[0]["decided"] and rows[0]["verdict"].startswith("better at look 1 of 3 (3 seeds; O'Brien–Fleming")
    assert rows[-1]["verdict"].startswith("undecided at 7 seeds (look 3 of 3")
    assert searcher.rounds.closed == {"b vs a": rows[0]["verdict"], "c vs a": rows[-1]["verdict"]}
    # the figures are decide's on the complete pairs: Δ of c vs a over seeds 0..6
    assert rows[-1]["delta"] == pytest.approx(sum(SCORES["c"](s) - SCORES["a"](s) for s in range(7)) / 7)


def test_a_failed_trial_is_no_seed_never_rerun_and_said():
    searcher = SeedRounds(RoundPlan(ARMS, PAIRS, LOOKS), real_judge(), score)
    suggested = run_rounds(searcher, fail={("c", 3)})
    assert suggested.count(("c", 3)) == 1
    assert searcher.rounds.lost == {("c", 3): "error"}  # the runs table's status
    look2 = [r for r in searcher.rounds.rows if r["claim"] == "c vs a" and r["planned_look"] == 2][0]
    assert (look2["seeds"], look2["planned_seeds"], look2["not_seeds"], look2["not_seeds_list"]) == (
        4, 5, 1, "3 (treatment: error)")
    last = searcher.rounds.rows[-1]
    assert last["seeds"] == 6 and last["verdict"].startswith("undecided at 6 seeds (look 3 of 3")


def unscorable(trial_id, config, result):
    """`score`, but testing seed 3's checkpoint of arm c raises on the driver (a CUDA error there, say)."""
    if config == {**ARMS["c"], "seed": 3}:
        raise RuntimeError("CUDA error: out of memory")
    return score(trial_id, config, result)


def test_a_trial_the_driver_cannot_score_fails_with_the_reason_in_its_look():
    searcher = SeedRounds(RoundPlan(ARMS, PAIRS, LOOKS), real_judge(), unscorable)
    suggested = run_rounds(searcher)
    assert suggested.count(("c", 3)) == 1
    why = "error (not scored: RuntimeError: CUDA error: out of memory)"
    assert searcher.rounds.lost == {("c", 3): why}
    look2 = [r for r in searcher.rounds.rows if r["claim"] == "c vs a" and r["planned_look"] == 2][0]
    assert (look2["seeds"], look2["not_seeds"], look2["not_seeds_list"]) == (4, 1, f"3 (treatment: {why})")
    trial = next(t for t, key in searcher.rounds.trials.items() if key == ("c", 3))
    with pytest.raises(ScoreError) as raised:  # what Tune fails the trial with: its runs-table line
        searcher.on_trial_complete(trial, {"epoch": 1, "score": 80.0})
    assert str(raised.value) == (f"ScoreError: trial {trial} ended, but the driver could not test its checkpoint for "
                                 "the looks (RuntimeError: CUDA error: out of memory): no seed unless scored; "
                                 "--resume reruns and scores it")


def test_the_runs_table_reads_a_trial_failed_on_the_driver_by_its_line(tmp_path):
    """Tune fails a trial with an error raised on the driver (`ScoreError`) without pickling it: its
    Result's error is the error file's whole text. The runs table's line is the last failure's."""
    from types import SimpleNamespace

    from psedual.tune.sweep import _outcome

    said = str(ScoreError("t7", "RuntimeError: CUDA error: out of memory"))
    text = f"Failure # 1 (occurred at 2026-11-28_17-18-28)\n{said}\nFailure # 2 (occurred at 2026-11-28_17-18-33)\n{said}\n"
    (tmp_path / "error.txt").write_text(text)
    trial = SimpleNamespace(trial_id="t7", status="ERROR", local_path=str(tmp_path),
                            config={"variant": "gru", "data.fold": 0, "epochs": 1, "seed": 3})
    result = SimpleNamespace(metrics={"epoch": 1, "valid_value_acc": 0.5}, checkpoint=None, error=text)
    out = _outcome(result, trial, None)
    assert (out.status, out.error) == ("error", f"TrialError: {said}")  # FAILED: the job exits 1
    (tmp_path / "error.txt").unlink()  # no file on this driver: the Result's text, on one line
    assert _outcome(result, trial, None).error == f"TrialError: {' '.join(text.split())}"


def test_a_look_without_new_pairs_is_no_look():
    fail = {("c", 3), ("c", 4)}
    searcher = SeedRounds(RoundPlan(ARMS, PAIRS, LOOKS), real_judge(), score)
    run_rounds(searcher, fail=fail)
    rows = [r for r in searcher.rounds.rows if r["claim"] == "c vs a"]
    assert rows[1]["verdict"] == "no look at 5 seeds: 3 complete seed pairs (seeds 3, 4 are no seeds: failed, " \
                                 "stopped or lost)"
    assert not rows[1]["decided"]
    # the design's looks are those taken: 3, then the last at its 5 pairs (look 2 of 2)
    assert rows[2]["look"] == 2 and rows[2]["of"] == 2 and rows[2]["seeds"] == 5


def test_a_restored_searcher_continues_at_its_round(tmp_path):
    whole = SeedRounds(RoundPlan(ARMS, PAIRS, LOOKS), real_judge(), score)
    expected = run_rounds(whole)
    first = SeedRounds(RoundPlan(ARMS, PAIRS, LOOKS), real_judge(), score)
    before = run_rounds(first, stop_after=11)  # killed in round 2 (9 trials in round 1)
    first.save(str(tmp_path / "searcher.pkl"))
    again = SeedRounds(RoundPlan(ARMS, PAIRS, LOOKS), real_judge(), score)
    again.restore(str(tmp_path / "searcher.pkl"))
    assert again.rounds.look == 1
    pending = again.rounds.pending  # trials running when it stopped: Tune resumes them, they end
    for trial in pending:
        arm, seed = again.rounds.trials[trial]
        again.on_trial_complete(trial, {"epoch": 1, "score": SCORES[arm](seed)})
    after = run_rounds(again)
    ran = before + [again.rounds.trials[t] for t in pending] + after
    assert sorted(ran) == sorted(expected)
    assert len(ran) == len(set(ran))
    assert again.rounds.rows == whole.rounds.rows


def test_earlier_seeds_count_as_the_first_look_and_are_not_rerun():
    rule = SeedRule(step=2, max=7, continue_from="old", taken=4)
    looks = seed_rounds.design(rule).looks
    assert looks == (4, 6, 7)
    earlier = {(a, s): SCORES[a](s) for a in ("a", "c") for s in range(4)}
    searcher = SeedRounds(RoundPlan(ARMS, (PAIRS[1],), looks, earlier),
                          functools.partial(seed_rounds.judge, rule, {}, looks), score)
    suggested = run_rounds(searcher)
    assert min(s for _, s in suggested) == 4
    assert searcher.rounds.rows[0]["seeds"] == 4 and searcher.rounds.rows[0]["planned_look"] == 1


def test_the_looks_table_round_trips_through_polars(tmp_path):
    searcher = SeedRounds(RoundPlan(ARMS, PAIRS, LOOKS), real_judge(), score,
                          functools.partial(write_looks, str(tmp_path), "x"))
    run_rounds(searcher, fail={("c", 3), ("c", 4)})
    looks = pl.read_parquet(looks_path(str(tmp_path), "x"))
    assert looks.height == len(searcher.rounds.rows) == 4
    assert looks["claim"].to_list() == ["b vs a", "c vs a", "c vs a", "c vs a"]
    assert looks["delta"][1] is not None and looks["delta"][2] is None  # the skipped look has no figures
    assert looks.columns[:6] == ["claim", "look", "of", "planned_look", "seeds", "planned_seeds"]
    with pytest.raises(ValueError, match="no column wrong"):
        write_looks(str(tmp_path), "x", [{"claim": "c", "wrong": 1}])
    # analysis reads it with its experiment, and each claim's verdict is its last look
    from analysis.tables.looks import read_looks, verdicts

    read = read_looks(str(tmp_path))
    assert read["experiment"].unique().to_list() == ["x"] and read.height == 4
    last = verdicts(read)
    assert last["claim"].to_list() == ["b vs a", "c vs a"]
    assert last["verdict"][1].startswith("undecided at 5 seeds (look 2 of 2")
    with pytest.raises(FileNotFoundError, match="no looks of experiment y; present: x"):
        read_looks(str(tmp_path), ["y"])


GRID = {"name": "s", "mode": "grid", "fixed": {"data.fold": 0, "epochs": 2},
        "arms": [{"variant": "base"}, {"variant": "gcn"}]}


@pytest.mark.parametrize(("seeds", "said"), [
    ({"first": 2}, "s.yaml: seeds: first must be >= 3 seeds (a t statistic needs 2 degrees of freedom), got 2"),
    ({"until": "tired"}, "s.yaml: seeds: until: unknown rule 'tired'; valid: decided"),
    ({"max": "many"}, "s.yaml: seeds.max must be a whole number, got 'many'"),
    ({"stpe": 4}, "s.yaml: seeds: unknown key 'stpe'; did you mean step?"),
    ({"continue_from": "control"}, "s.yaml: seeds: give continue_from (the earlier experiment) and taken"),
])
def test_a_bad_rule_is_one_line_naming_the_key(seeds, said):
    with pytest.raises(SpecError) as err:
        build_spec({**GRID, "seeds": seeds}, "s.yaml")
    assert str(err.value).startswith(said) and "\n" not in str(err.value)


def test_the_rule_acts_in_a_grid_only():
    with pytest.raises(SpecError, match="seeds: the seeds in rounds .*; it has no effect in an optuna sweep"):
        build_spec({"name": "s", "mode": "optuna", "fixed": {"epochs": 2}, "seeds": {"first": 6}}, "s.yaml")


@pytest.mark.parametrize(("seeds", "grid", "said"), [
    ({"margin": 0.01}, {}, "s.yaml: seeds.margin 0.01 points of accuracy is refused: no seed budget could show a "
                           "difference that small; give one from 0.1 to 10 points of accuracy (did you mean 1, a "
                           "percent typed as a fraction?)"),
    ({"margin": 60}, {}, "s.yaml: seeds.margin 60 points of accuracy is refused: a band of ±60 points"),
    ({"spending": "haybittle"}, {}, "s.yaml: seeds: unknown spending 'haybittle': valid are obrien-fleming, pocock"),
    ({}, {"seed": [0, 1]}, "s.yaml: seeds: grid.seed cannot be gridded in a sweep in rounds (the rule gives the seeds)"),
])
def test_the_design_refuses_at_load(seeds, grid, said):
    spec = build_spec({**GRID, "grid": grid, "seeds": seeds} if grid else {**GRID, "seeds": seeds}, "s.yaml")
    with pytest.raises(SpecError) as err:
        seed_rounds.check(spec, "s.yaml")
    assert str(err.value).startswith(said) and "\n" not in str(err.value)


def test_a_margin_above_the_target_is_said_in_the_verdict():
    rule = SeedRule(first=3, step=2, max=7, target=0.9, margin=1.0)
    spec = build_spec({**GRID, "seeds": {"first": 3, "step": 2, "max": 7, "target": 0.9, "margin": 1.0}}, "s.yaml")
    seed_rounds.check(spec, "s.yaml")  # said, not refused
    row = seed_rounds.judge(rule, {"c": (0.9, "the sweep file's")}, LOOKS, Pair("c", "a", "b"), 0, (3,), [0.1, -0.2, 0.3])
    assert "±1 points of accuracy includes the sweep file's +0.9: this does not test it" in row["verdict"]


def test_plan_prints_expected_and_maximum_seeds_beside_the_fixed_design(capsys):
    from psedual.job import TuneJob, run_job

    assert run_job(TuneJob(space=str(ROOT / "psedual/search_spaces/control_rounds.yaml"),
                           storage=str(ROOT / "docs/control/results"), plan=True, plan_from="control")) == 0
    out = capsys.readouterr().out
    assert "looks at 16, 20, 24, 28, 32, 36, 40 seeds" in out
    assert "the first look is experiment control's 16 seeds (counted, not rerun)" in out
    assert "target +0.9 (the paper's); sd of the per-seed Δ 1.92 (experiment control, 16 paired seeds)" in out
    # the docs' (e) at the same sd: P(smaller than +0.9) 88% and 28 expected seeds at Δ 0; 38 fixed seeds
    assert "true Δ +0: P(smaller than +0.9) 87.9%, undecided at 40 9.7%; expected seeds 28.0 (max 40)" in out
    assert "the fixed design of the same power: 38 seeds" in out


def fake_trial(config):
    import ray.tune

    ray.tune.report({"epoch": 1, "best_valid_value_acc": 0.5, "score": SCORES[config["arm_id"]](config["seed"])})


def _on_local_ray(run):
    """`run()` on a local Ray of 2 CPUs (one started here, and stopped after, unless one is up), with
    this module pickled by value: the trials' workers cannot import tests/."""
    import sys

    import ray
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        return run()
    finally:
        if started:
            ray.shutdown()


@pytest.mark.slow
def test_a_tiny_sweep_in_rounds_on_a_local_ray(tmp_path):
    import ray.tune

    arms = {k: {"arm_id": k} for k in ARMS}
    searcher = SeedRounds(RoundPlan(arms, PAIRS, LOOKS), real_judge(), score,
                          functools.partial(write_looks, str(tmp_path), "tiny"), max_concurrent=4,
                          metric="best_valid_value_acc", mode="max")
    results = _on_local_ray(lambda: ray.tune.Tuner(
        ray.tune.with_resources(fake_trial, {"cpu": 0.5}),
        tune_config=ray.tune.TuneConfig(search_alg=searcher, num_samples=-1, reuse_actors=True),
        run_config=ray.tune.RunConfig(name="tiny", storage_path=str(tmp_path / "ray"), verbose=0)).fit())
    ran = sorted((r.config["arm_id"], r.config["seed"]) for r in results)
    assert ran == sorted([("b", s) for s in range(3)] + [(a, s) for a in "ac" for s in range(7)])
    looks = pl.read_parquet(looks_path(str(tmp_path), "tiny"))
    assert looks["verdict"][0].startswith("better at look 1 of 3") and looks["verdict"][-1].startswith("undecided at 7")
    assert math.isclose(looks["delta"][-1], sum(SCORES["c"](s) - SCORES["a"](s) for s in range(7)) / 7)


VARIANT_ARM = {spec["variant"]: arm for arm, spec in ARMS.items()}


def variant_trial(config):
    """`fake_trial` for a config a TrainConfig reads (the runs table's `_outcome` builds one)."""
    import ray.tune

    score = SCORES[VARIANT_ARM[config["variant"]]](config["seed"])
    ray.tune.report({"epoch": 1, "best_valid_value_acc": 0.5, "score": score})


@pytest.mark.slow
def test_a_trial_the_driver_cannot_score_is_an_error_in_the_runs_table_and_its_look_says_why(tmp_path):
    """On a local Ray: testing one trial's checkpoint raises on the driver; Tune retries the trial
    (max_failures 1), then fails it; the looks name why, the runs table reads `error` with the line."""
    import ray.tune

    from psedual.tune.sweep import _outcome

    arms = {arm: {**spec, "data.fold": 0, "epochs": 1} for arm, spec in ARMS.items()}

    def scorer(trial_id, config, result):
        return unscorable(trial_id, {"variant": config["variant"], "seed": config["seed"]}, result)

    searcher = SeedRounds(RoundPlan(arms, PAIRS, LOOKS), real_judge(), scorer,
                          functools.partial(write_looks, str(tmp_path), "unscored"), max_concurrent=4,
                          metric="best_valid_value_acc", mode="max")
    def fit():
        ray.tune.Tuner(ray.tune.with_resources(variant_trial, {"cpu": 0.5}),
                       tune_config=ray.tune.TuneConfig(search_alg=searcher, num_samples=-1, reuse_actors=True),
                       run_config=ray.tune.RunConfig(name="unscored", storage_path=str(tmp_path / "ray"), verbose=0,
                                                     failure_config=ray.tune.FailureConfig(max_failures=1))).fit()
        analysis = ray.tune.ExperimentAnalysis(str(tmp_path / "ray" / "unscored"))  # as run_sweep reads it
        return [_outcome(r, t, None) for r, t in zip(ray.tune.ResultGrid(analysis), analysis.trials)]

    outcomes = _on_local_ray(fit)
    failed = [o for o in outcomes if o.status != "completed"]
    assert [(o.flat["variant"], o.flat["seed"], o.status) for o in failed] == [("gru", 3, "error")]
    assert failed[0].error == (f"TrialError: ScoreError: trial {failed[0].trial} ended, but the driver could not test "
                               "its checkpoint for the looks (RuntimeError: CUDA error: out of memory): no seed unless "
                               "scored; --resume reruns and scores it")
    looks = pl.read_parquet(looks_path(str(tmp_path), "unscored")).filter(pl.col("claim") == "c vs a")
    assert looks["not_seeds_list"].to_list()[1:] == ["3 (treatment: error (not scored: RuntimeError: CUDA error: "
                                                     "out of memory))"] * (looks.height - 1)
    assert looks["seeds"].to_list()[-1] == 6 and len(outcomes) == 3 + 2 * 7


KILLED = """
import functools, sys, time
import ray, ray.tune
sys.path.insert(0, {tests!r})
from ray import cloudpickle
import test_rounds as t
cloudpickle.register_pickle_by_value(t)


def slow_trial(config):
    time.sleep(1.0)
    t.fake_trial(config)


root, resume = {root!r}, sys.argv[1] == "resume"
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
fn = ray.tune.with_resources(slow_trial, {{"cpu": 0.5}})
if resume:
    ray.tune.Tuner.restore(root + "/ray/resumed", trainable=fn, resume_unfinished=True, resume_errored=True).fit()
else:
    arms = {{k: {{"arm_id": k}} for k in t.ARMS}}
    searcher = t.SeedRounds(t.RoundPlan(arms, t.PAIRS, t.LOOKS), t.real_judge(), t.score,
                            functools.partial(t.write_looks, root, "resumed"), max_concurrent=2)
    ray.tune.Tuner(fn, tune_config=ray.tune.TuneConfig(search_alg=searcher, num_samples=-1, reuse_actors=True),
                   run_config=ray.tune.RunConfig(name="resumed", storage_path=root + "/ray", verbose=0)).fit()
"""
"""A sweep in rounds in its own process (and its own Ray): `first` runs it (the test kills it),
`resume` restores it as `--resume` does."""


@pytest.mark.slow
def test_a_killed_sweep_in_rounds_resumes_at_its_round(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    import ray.tune

    script = tmp_path / "rounds.py"
    script.write_text(KILLED.format(tests=str(Path(__file__).parent), root=str(tmp_path)))
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    first = subprocess.Popen([sys.executable, str(script), "first"], env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    table = Path(looks_path(str(tmp_path), "resumed"))
    began = time.time()
    while not table.exists() and first.poll() is None and time.time() - began < 600:
        time.sleep(0.5)
    time.sleep(3.0)  # round 2 under way: its trials started, some perhaps ended
    os.killpg(first.pid, signal.SIGKILL)  # the driver and its Ray, as a lost head would
    first.wait()
    assert pl.read_parquet(table).height == 2  # the first look only: b decided, c not
    again = subprocess.run([sys.executable, str(script), "resume"], env=env, timeout=900, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-2000:]
    trials = ray.tune.ExperimentAnalysis(str(tmp_path / "ray" / "resumed")).trials
    ran = [(t.config["arm_id"], t.config["seed"]) for t in trials]
    looks = pl.read_parquet(table)
    assert len(ran) == len(set(ran))  # no seed run twice
    assert sorted(ran) == sorted([("b", s) for s in range(3)] + [(a, s) for a in "ac" for s in range(7)]), \
        (sorted(ran), looks.select("claim", "planned_look", "seeds", "verdict").rows())
    assert looks["planned_look"].to_list() == [1, 1, 2, 3]
    assert looks["verdict"][-1].startswith("undecided at 7 seeds")


@pytest.mark.slow
def test_a_trial_is_scored_by_testing_its_checkpoint_and_a_short_one_is_no_seed(tmp_path, data_root):
    from psedual.train.test import evaluate_run
    from psedual.train.trainer import train
    from psedual.tune.rounds import CheckpointScore
    from psedual.tune.space import make_config

    flat = {"solver": "gts", "data.dataset": "mawps", "data.fold": 0, "data.train_size": 16, "data.data_root":
            str(data_root), "epochs": 1, "batch_size": 16, "beam_size": 1, "model.embedding_size": 8,
            "model.hidden_size": 8, "model.layers": 1, "threads": 1, "variant": "base", "seed": 3}
    # where Tune keeps a trial's checkpoint: storage/experiment/<variant>-s<seed>-<id>/checkpoint_...
    folder = tmp_path / "exp" / "base-s3-abc" / "checkpoint_000000"
    train(make_config(flat), folder, progress=False, test=False)
    score = CheckpointScore(str(tmp_path), "exp")
    got, why = score("abc", flat, {"epoch": 1, "checkpoint_dir_name": "checkpoint_000000"})
    assert why is None and got == pytest.approx(100.0 * evaluate_run(folder).result.test_value_acc)
    assert score("abc", flat, {"epoch": 1, "checkpoint_path": str(folder)}) == (got, None)  # a Ray Train trial's
    assert score("abc", {**flat, "epochs": 3}, {"epoch": 1}) == (None, "stopped at epoch 1 of 3")
    assert score("abc", flat, {}) == (None, "stopped before its first report")
    assert score("abc", flat, {"epoch": 1}) == (None, "no checkpoint reported")
