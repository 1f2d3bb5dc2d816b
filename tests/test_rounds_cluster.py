"""A sweep in rounds through the job's entry on a cluster (issue 57: "it works on a local Ray and
through `ray submit`"; a stopped, failed or lost trial is no seed, and the report says so).

`ray submit clusters/gpu.yaml tune.py --space FILE --address auto` runs `psedual tune` on the head,
attached to the running cluster: the searcher (`psedual.tune.rounds.SeedRounds`) lives in that
driver and the trials run on the cluster's nodes. Here the same entry (`psedual.cli.main`) runs a
real tiny GTS sweep in rounds against tests/test_cluster.py's simulated cluster (a head and two
nodes on 127.0.0.1, `ray.cluster_utils.Cluster`). The fast tests drive the searcher with fake
results, as tests/test_rounds.py does: how a trial that is no seed is named in the looks table."""

from __future__ import annotations

import functools
import pickle
import threading
import time

import polars as pl
import pytest

from psedual import seed_rounds
from psedual.tune.rounds import FINISHED, Pair, RoundPlan, Rounds, SeedRounds
from psedual.tune.seed_rule import SeedRule
from test_cluster import cluster  # noqa: F401  (the fixture: a 0-GPU head and two fake GPU nodes)

SWEEP = """\
# RAY_AUTH_MODE=disabled pytest -m slow tests/test_rounds_cluster.py   (written there: a sweep in rounds on a cluster)
name: rounds_cluster
mode: grid
fixed:
  solver: gts
  data.dataset: mawps
  data.fold: 0
  data.data_root: {data}
  data.train_size: 24
  epochs: 1
  batch_size: 8
  beam_size: 1
  model.embedding_size: 16
  model.hidden_size: 32
  model.layers: 1
  threads: 1
  device: cpu
arms:
  - {{variant: base}}
  - {{variant: gcn}}
seeds: {{until: decided, first: 3, step: 2, max: 5, target: 0.1, margin: 0.1}}
resources:
  max_concurrent: 2
"""
"""Two arms, seeds in rounds: 3 seeds, then 2 more while undecided, at most 5 (looks at 3 and 5).
Trained this little, both arms score about 2% (fold 0's 397 problems), their per-seed Δs 0 or
±0.25 points; against the paper's +0.9 the first look already reads "smaller than the target", so
the file's own target and margin (0.1 points) keep it undecided and a second round runs: 10
trials, 2 looks (the statistics are tests/test_sequential.py's; this test is about the rounds)."""


ARMS = {"a": {"variant": "base"}, "b": {"variant": "gcn"}}
RULE = SeedRule(first=3, step=2, max=7)
LOOKS = seed_rounds.design(RULE).looks  # 3, 5, 7


def _score(trial_id, config, result):
    """A fake `CheckpointScore` (2 epochs a trial): a trial's score from its result, or why it is no seed."""
    if "epoch" not in result:
        return None, "stopped before its first report"
    if result["epoch"] < 2:
        return None, f"stopped at epoch {result['epoch']} of 2"
    return result["score"], None


def _rounds(ends: dict, failure=None, write=None) -> SeedRounds:
    """Drive a searcher as Tune does, each round's trials ended as `ends` says ((arm, seed) → a last
    result, or "error" for a trial Tune reports as errored); the others seeds, b ahead of a by about 1."""
    searcher = SeedRounds(RoundPlan(ARMS, (Pair("b vs a", "a", "b"),), LOOKS),
                          functools.partial(seed_rounds.judge, RULE, {}, LOOKS), _score, write, failure=failure)
    while True:
        started = []
        while (got := searcher.suggest(f"t{len(searcher.rounds.trials)}")) not in (None, FINISHED):
            started.append(f"t{len(searcher.rounds.trials) - 1}")
        if got == FINISHED:
            return searcher
        for trial in started:
            arm, seed = key = searcher.rounds.trials[trial]
            end = ends.get(key, {"epoch": 2, "score": 80 + seed / 10 + (1 + seed % 3 / 5 if arm == "b" else 0)})
            searcher.on_trial_complete(trial, None if end == "error" else end, error=end == "error")


# b's seed 1 failed; a's seed 2 stopped after 1 of 2 epochs; seed 3: a stopped before its first
# report, b lost its node (an error Tune reports, read as lost from its error file: `failure`)
ENDS = {("b", 1): "error", ("a", 2): {"epoch": 1}, ("a", 3): {}, ("b", 3): "error"}
NO_SEEDS = ("1 (treatment: error), 2 (base: stopped at epoch 1 of 2), "
            "3 (base: stopped before its first report; treatment: lost)")


def _node_died(trial_id: str, config: dict) -> str:
    return "lost" if (config["variant"], config["seed"]) == ("gcn", 3) else "error"


def test_a_trial_that_failed_was_stopped_or_lost_is_no_seed_named_as_the_runs_table_names_it(tmp_path):
    """Each no seed in the looks row with its arm and why, in the runs table's words (`error`, `lost`:
    its node died, `stopped`: before its last epoch); before, every errored trial read `failed`, a
    trial that never reported `lost`, and the looks table named the seeds only."""
    from psedual.results.looks import write_looks

    searcher = _rounds(ENDS, _node_died, functools.partial(write_looks, str(tmp_path), "x"))
    rounds = searcher.rounds
    assert rounds.lost == {("b", 1): "error", ("a", 2): "stopped at epoch 1 of 2",
                           ("a", 3): "stopped before its first report", ("b", 3): "lost"}
    suggested = list(rounds.trials.values())
    assert sorted(suggested) == [(a, s) for a in "ab" for s in range(7)]  # each once: none rerun
    looks = pl.read_parquet(tmp_path / "looks" / "experiment=x" / "looks.parquet")
    # looks 1 and 2 have too few complete pairs to look (1, then 2); look 3 is judged on seeds 0, 4, 5, 6
    assert looks.select("planned_look", "seeds", "not_seeds").rows() == [(1, 1, 2), (2, 2, 3), (3, 4, 3)]
    assert looks["not_seeds_list"].to_list() == ["1 (treatment: error), 2 (base: stopped at epoch 1 of 2)",
                                                 NO_SEEDS, NO_SEEDS]
    assert looks["verdict"][1] == ("no look at 5 seeds: 2 complete seed pairs (seeds 1, 2, 3 are no seeds: failed, "
                                   "stopped or lost)")
    diffs = [1 + s % 3 / 5 for s in (0, 4, 5, 6)]
    assert looks["delta"][2] == pytest.approx(sum(diffs) / 4) and looks["look"][2] == 1  # the design's first look
    # the job's lines after the sweep, and the report's looks section, name them too
    from analysis.tables import looks as report

    said = seed_rounds.looks_text(str(tmp_path), "x")
    assert said[1].endswith(f"; no seeds (a trial that failed, stopped or was lost): {NO_SEEDS}"), said
    section = report.section(report.present(str(tmp_path)))
    assert f"| 3 (seeds {NO_SEEDS}) |" in section, section


def test_without_its_error_file_an_errored_trial_is_an_error():
    searcher = _rounds(ENDS)  # no failure reader: every errored trial an error, as before a lost node was told
    assert searcher.rounds.lost[("b", 3)] == "error"
    one = _rounds({("b", 1): "error"}).rounds.rows[0]
    assert (one["verdict"], one["not_seeds_list"]) == (
        "no look at 3 seeds: 2 complete seed pairs (seed 1 is no seed: failed, stopped or lost)", "1 (treatment: error)")


def test_trial_failure_reads_a_lost_node_from_tunes_error_file_on_the_driver(tmp_path, monkeypatch):
    """`TrialFailure` finds the trial's error file in the driver's staging folder of the experiment's
    newest run (Ray 2.60's layout) and reads Ray's words for a dead node in it."""
    import os
    import time
    from types import SimpleNamespace

    import ray

    from psedual.tune.rounds import TrialFailure
    from test_lost_node import RAY_SAYS

    failure = TrialFailure("exp")
    config = {"variant": "gcn", "seed": 3}
    assert failure("abc_00003", config) == "error"  # no Ray attached: nothing to read
    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray, "get_runtime_context", lambda: SimpleNamespace(
        get_temp_dir=lambda: str(tmp_path), get_session_name=lambda: "session_1"))
    assert failure("abc_00003", config) == "error"  # no error file: Tune's error, as the runs table says

    def written(start: str, text: str, age: float) -> None:
        folder = tmp_path / "session_1" / "artifacts" / start / "exp" / "driver_artifacts" / "gcn-s3-abc_00003"
        folder.mkdir(parents=True)
        (folder / "error.txt").write_text(f"Failure # 1 (occurred at {start})\n{text}\n")
        os.utime(folder / "error.txt", (time.time() - age, time.time() - age))

    written("2026-11-28_14-00-00", "ValueError: bad config", 60)
    assert failure("abc_00003", config) == "error"
    assert failure("abc_00004", {"variant": "gcn", "seed": 4}) == "error"  # another trial's file is not its
    written("2026-11-28_15-00-00", RAY_SAYS, 0)  # the resumed run's: its node died
    assert failure("abc_00003", config) == "lost"
    assert TrialFailure("other")("abc_00003", config) == "error"


# 3-6 min on the loaded 2-core machine: three raylets, 10 tiny trials (24 problems, 1 epoch), each
# tested twice on fold 0's 397 problems (by the searcher in the driver, then by the job's tables)
@pytest.mark.slow
def test_a_sweep_in_rounds_runs_through_the_jobs_entry_on_a_cluster(cluster, tmp_path, data_root, capsys):
    import ray

    from psedual.cli import main

    cluster, _ = cluster
    ray.shutdown()  # as under `ray submit`: the job itself attaches to the running cluster (--address)
    space = tmp_path / "rounds_cluster.yaml"
    space.write_text(SWEEP.format(data=data_root))
    storage = tmp_path / "results"
    code = main(["tune", "--space", str(space), "--storage", str(storage), "--address", cluster.address])
    printed = capsys.readouterr().out
    assert code == 0, printed[-3000:]

    # the runs table: both arms' seeds 0-4, every trial completed (a seed)
    runs = pl.read_parquet(storage / "runs" / "experiment=rounds_cluster" / "*.parquet")
    assert sorted(runs.select("variant", "seed").rows()) == [(v, s) for v in ("base", "gcn") for s in range(5)]
    assert runs["status"].to_list() == ["completed"] * 10 and runs["error"].null_count() == 10
    acc = {(r["variant"], r["seed"]): 100 * r["test_value_acc"] for r in runs.iter_rows(named=True)}

    # the looks table: one row per look taken, each on the seeds the rule says
    looks = pl.read_parquet(storage / "looks" / "experiment=rounds_cluster" / "looks.parquet")
    assert looks.select("claim", "look", "of", "planned_look", "seeds", "planned_seeds", "not_seeds").rows() == [
        ("PseDual-GCN vs base", 1, 2, 1, 3, 3, 0), ("PseDual-GCN vs base", 2, 2, 2, 5, 5, 0)]
    assert looks["verdict"][0].startswith("undecided at look 1 of 2 (3 seeds): the next look at 5 seeds"), looks
    assert looks["decided"][1] or looks["verdict"][1].startswith("undecided at 5 seeds (look 2 of 2")
    for row, n in zip(looks.iter_rows(named=True), (3, 5)):
        # the searcher scored each trial by testing its checkpoint in the driver: the runs table's
        # test of the same checkpoint, on the trials' own resources, gives the same Δ
        diffs = [acc[("gcn", s)] - acc[("base", s)] for s in range(n)]
        assert row["delta"] == pytest.approx(sum(diffs) / n, abs=1e-9), (row, diffs)
        assert row["design"].startswith("O'Brien–Fleming spending, two-sided α 0.05")

    # the rounds: the searcher's own record, as Tune saved it with the experiment (the state a
    # --resume restores): seeds 0-2 of both arms suggested first, then 3-4 once the first look was taken
    state, = (storage / "rounds_cluster").glob("searcher-state-*.pkl")
    rounds: Rounds = pickle.loads(state.read_bytes())  # the searcher's own checkpoint, written by this test's sweep
    suggested = list(rounds.trials.values())
    arms = {"variant=base": "base", "variant=gcn": "gcn"}
    assert sorted((arms[a], s) for a, s in suggested[:6]) == [(v, s) for v in ("base", "gcn") for s in range(3)]
    assert sorted((arms[a], s) for a, s in suggested[6:]) == [(v, s) for v in ("base", "gcn") for s in (3, 4)]
    assert rounds.finished and rounds.look == 1 and not rounds.lost and rounds.rows[-1]["seeds"] == 5
    # and Tune ran round 2 only after round 1 had ended: each trial's start (its report's time less its
    # run time) against the last report of round 1 (Tune's timestamp: whole seconds)
    from ray.tune import ExperimentAnalysis

    trials = {t.trial_id: t.last_result for t in ExperimentAnalysis(str(storage / "rounds_cluster")).trials}
    first, second = list(rounds.trials)[:6], list(rounds.trials)[6:]
    ended = max(trials[t]["timestamp"] for t in first)
    started = min(trials[t]["timestamp"] - trials[t]["time_total_s"] for t in second)
    assert started > ended - 1, (ended, started)

    # what the job printed: its looks, then the fixed-look comparison of the same runs, said as such
    assert f"looks: {storage}/looks/experiment=rounds_cluster/looks.parquet (2 rows)" in printed
    assert "(the verdicts above are the sequential design's;" in printed
    # the job attached to the cluster and left it running (it stops only a Ray it started)
    ray.init(address=cluster.address, log_to_driver=False)
    assert sum(n["Alive"] for n in ray.nodes()) == 3


def _lose_first_trial(cluster, nodes, done: threading.Event, removed: dict) -> None:
    """Until `done`: remove the first of `nodes` (its raylet and workers killed, as a machine lost) on
    which a trial's actor runs, seconds before that trial's first report (it loads its data and builds
    its model first): that trial is lost (tests/test_cluster.py's way; a report read by Tune's loop can
    be late, as the driver tests each ended trial's checkpoint in that loop). Either GPU node: Tune
    reuses a trial's actor for the next, so one node may run every trial."""
    import psutil
    from ray._private import ray_constants

    raylets = {node: psutil.Process(node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid)
               for node in nodes}
    while not done.is_set() and not removed:
        for node, raylet in raylets.items():
            try:
                titles = [" ".join(p.cmdline()) for p in raylet.children(recursive=True)]
            except psutil.Error:  # a worker that ended while being read
                continue
            if any("ImplicitFunc" in title for title in titles):
                cluster.remove_node(node, allow_graceful=False)
                removed.update(node=node.node_id)
                break
        time.sleep(0.05)


# 2-5 min on the loaded 2-core machine: as above, 2 epochs a trial, one GPU node left after the loss
@pytest.mark.slow
def test_a_trial_whose_node_is_lost_is_no_seed_and_the_looks_say_lost(cluster, tmp_path, data_root, capsys):
    import ray

    from psedual.cli import main

    cluster, nodes = cluster
    ray.shutdown()
    # each trial holds a (fake) GPU, so it runs on a GPU node; no retry, so the loss ends the trial
    text = SWEEP.format(data=data_root).replace("epochs: 1", "epochs: 2").replace(
        "  max_concurrent: 2\n", "  max_concurrent: 2\n  gpus_per_trial: 1\n  max_failures: 0\n")
    space = tmp_path / "rounds_cluster.yaml"
    space.write_text(text)
    storage = tmp_path / "results"
    removed: dict = {}
    done = threading.Event()
    watcher = threading.Thread(target=_lose_first_trial, args=(cluster, nodes, done, removed))
    watcher.start()
    try:
        code = main(["tune", "--space", str(space), "--storage", str(storage), "--address", cluster.address])
    finally:
        done.set()
        watcher.join()
    printed = capsys.readouterr().out
    assert removed, "no trial ran on a GPU node"
    runs = pl.read_parquet(storage / "runs" / "experiment=rounds_cluster" / "*.parquet")
    lost = runs.filter(pl.col("status") == "lost").row(0, named=True)
    arm, seed = f"variant={lost['variant']}", lost["seed"]
    role = "base" if arm == "variant=base" else "treatment"
    assert seed < 3  # the first trial to start: round 1's
    state, = (storage / "rounds_cluster").glob("searcher-state-*.pkl")
    rounds: Rounds = pickle.loads(state.read_bytes())  # the searcher's own checkpoint, written by this test's sweep
    # the searcher read the loss from the error Tune wrote on the driver: `lost`, as the runs table
    assert rounds.lost == {(arm, seed): "lost"}, rounds.lost
    assert code == 1 and runs.height == 10, printed[-3000:]  # the lost seed never rerun by the rounds
    assert lost["error"].startswith(f"NodeLost: node {removed['node']}")
    assert sorted(runs["status"]) == ["completed"] * 9 + ["lost"]
    looks = pl.read_parquet(storage / "looks" / "experiment=rounds_cluster" / "looks.parquet")
    # at 3 seeds only 2 complete pairs (no look); at 5, 4 pairs judged: the design's first look
    assert looks.select("planned_look", "look", "seeds", "not_seeds", "not_seeds_list").rows() == [
        (1, 1, 2, 1, f"{seed} ({role}: lost)"), (2, 1, 4, 1, f"{seed} ({role}: lost)")]
    assert looks["verdict"][0] == (f"no look at 3 seeds: 2 complete seed pairs (seed {seed} is no seed: failed, "
                                   "stopped or lost)")
    assert f"; no seeds (a trial that failed, stopped or was lost): {seed} ({role}: lost)" in printed
    assert "1 trial(s) did not finish: rerun them with --resume rounds_cluster" in printed
