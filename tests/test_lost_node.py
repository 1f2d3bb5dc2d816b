"""A node lost mid-trial (issue 60, class 7): the trial is a `lost` row naming the node and when,
never an early stop; the job exits 1 and says to rerun it; `--resume` reruns it from its last
checkpoint; the log path printed is the running cluster's. The simulated cluster is
tests/test_cluster.py's (`ray.cluster_utils.Cluster`, fake GPU nodes on 127.0.0.1)."""

from __future__ import annotations

import io
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from psedual.tune.lost import NODE_DIED, NodeLoss, error_file, lost_node
from psedual.tune.space import load_spec
from test_cluster import cluster  # noqa: F401  (the fixture: a 0-GPU head and two fake GPU nodes)

ROOT = Path(__file__).parent.parent

NODE = "716cbba8b7da4f5efcf0be5ed030fc40cd7c91375ed79ed7033496be"
RAY_SAYS = ("The actor died unexpectedly before finishing this task.\n\tclass_name: ImplicitFunc\n\tactor_id: "
            "370974f1c67506da6e2cb73501000000\n\tpid: 8590\n\tnamespace: 00200f0d\n\tip: 127.0.0.1\nThe actor died "
            f"because its node has died. Node Id: {NODE}\n\tthe actor's node was terminated unexpectedly: health "
            "check failed due to missing too many heartbeats")
"""Ray 2.60's ActorDiedError for a trial actor whose node was removed (tests/test_cluster.py's cluster)."""


def test_a_lost_node_is_read_from_rays_error_and_nothing_else_is():
    from ray.exceptions import ActorDiedError, RayActorError

    assert lost_node(RayActorError(error_msg=RAY_SAYS)) == NODE and lost_node(RAY_SAYS) == NODE
    assert issubclass(ActorDiedError, RayActorError)
    # an actor that died by itself (its process killed, out of memory) or a trial's own error: no node
    for other in ("The actor died unexpectedly before finishing this task.\n\tclass_name: ImplicitFunc",
                  "ValueError: bad config", None):
        assert lost_node(other) is None
    assert NODE_DIED.pattern.startswith("its node has died")


def test_a_node_loss_line_names_the_node_when_and_the_rerun():
    at = datetime(2026, 11, 28, 14, 15, 2, tzinfo=timezone.utc)
    loss = NodeLoss(NODE, "10.0.3.7", "health check failed due to missing too many heartbeats", at, 2, 8)
    assert loss.line() == (f"NodeLost: node {NODE} (10.0.3.7) lost at 2026-11-28 14:15:02 UTC after epoch 2 of 8 "
                           "(health check failed due to missing too many heartbeats); the trial must be rerun: --resume")
    assert NodeLoss(NODE, None, None, None, 0, 8).line() == (
        f"NodeLost: node {NODE} lost after epoch 0 of 8; the trial must be rerun: --resume")
    for bad in (dict(node=""), dict(epoch=-1), dict(epochs=0), dict(at=datetime(2026, 11, 28))):
        with pytest.raises(ValueError):
            NodeLoss(**{**dict(node=NODE, address=None, reason=None, at=None, epoch=2, epochs=8), **bad})


def test_the_runs_table_refuses_a_status_it_never_records():
    from psedual.results.records import FAILED, STATUSES, Trial

    assert STATUSES == ("completed", "stopped", "error", "lost") and FAILED == ("error", "lost")
    Trial("t", "lost", "NodeLost: ...", "v")
    with pytest.raises(ValueError, match=r"status 'crashed' is none the runs table records; valid: completed, "
                                         r"stopped, error, lost"):
        Trial("t", "crashed", None, "v")


def test_the_analysis_leaves_a_lost_run_out_even_with_a_test_result_and_names_it():
    from analysis.checks import selection

    runs = pl.DataFrame({"experiment": ["x"] * 3, "trial": ["a", "b", "c"], "status": ["completed", "lost", "stopped"],
                         "error": [None, "NodeLost: node 71 lost", None], "test_value_acc": [0.8, 0.7, 0.6]})
    notes: list[str] = []
    kept = selection._usable(runs, notes)
    assert kept["trial"].to_list() == ["a", "c"]  # a stopped run's tested checkpoint is a result; a lost one's is not
    assert notes == ["skipped 1 run(s) that failed or have no test result: x/b (status lost)"]


def test_a_paper_part_with_a_lost_or_failed_trial_is_not_finished_so_its_resume_reruns_it(tmp_path):
    from psedual.paper_job import finished_trials

    assert finished_trials(str(tmp_path), "p.table1") == 0
    folder = tmp_path / "runs" / "experiment=p.table1"
    folder.mkdir(parents=True)
    for trial, status in (("a", "completed"), ("b", "lost"), ("c", "stopped"), ("d", "error")):
        pl.DataFrame({"trial": [trial], "status": [status]}).write_parquet(folder / f"{trial}.parquet")
    assert finished_trials(str(tmp_path), "p.table1") == 2  # before issue 60: 4, so the part was skipped


def test_tunes_error_file_gives_its_last_failure_and_the_progress_line_says_lost(tmp_path):
    from psedual.tune.progress import Progress
    from psedual.tune.space import SweepSpec

    folder = tmp_path / "trial"
    folder.mkdir()
    assert error_file(folder) is None and error_file(None) is None
    # Tune appends each failure of a retried trial: a lost node, then the retry's own error
    (folder / "error.txt").write_text(f"Failure # 1 (occurred at 2026-11-28_14-15-02)\n{RAY_SAYS}\n"
                                      "Failure # 2 (occurred at 2026-11-28_14-16-09)\nValueError: bad\n")
    text, at = error_file(folder)
    assert lost_node(text) is None and "ValueError: bad" in text and at.tzinfo is timezone.utc
    assert abs(at.timestamp() - time.time()) < 60
    (folder / "error.txt").write_text(f"Failure # 1 (occurred at 2026-11-28_14-15-02)\n{RAY_SAYS}\n")
    spec = SweepSpec(name="s", mode="grid", fixed={"epochs": 8}, grid={"variant": ["base", "gcn"]})
    out = io.StringIO()
    progress = Progress(spec, 8, out, bar=False)
    trial = SimpleNamespace(trial_id="a", status="RUNNING", config={"variant": "base", "epochs": 8},
                            local_path=str(folder))
    progress.on_trial_result(0, [trial], trial, {"epoch": 2, "train_loss": 1.0, "valid_value_acc": 0.5})
    progress.on_trial_error(0, [trial], trial)
    lines = out.getvalue().splitlines()
    assert lines[-2] == (f"trial a (variant base) LOST: its node {NODE} died after epoch 2/8; the trial must be "
                         f"rerun (--resume); its log: /tmp/ray/session_latest/logs on that node")  # no Ray here
    assert lines[-1] == "sweep: 1 of 2 trials ended (1 lost), 0 running, 1 pending"
    # an Optuna sweep's --resume does not rerun it (sweep.reruns_errored): its line does not promise it
    from psedual.tune import sweep
    from psedual.tune.lost import NOT_RERUN

    optuna = load_spec("search_spaces/optuna.yaml")
    assert optuna.mode == "optuna" and sweep.reruns_errored(optuna) is False
    out = io.StringIO()
    progress = Progress(optuna, 8, out, bar=False)
    progress.on_trial_result(0, [trial], trial, {"epoch": 2, "train_loss": 1.0, "valid_value_acc": 0.5})
    progress.on_trial_error(0, [trial], trial)
    assert out.getvalue().splitlines()[-2].endswith(
        f"LOST: its node {NODE} died after epoch 2/8; {NOT_RERUN}; its log: /tmp/ray/session_latest/logs on that node")


def test_a_trial_whose_state_ray_saved_before_its_failure_is_still_read_as_failed(tmp_path):
    """Ray 2.60 may save a lost trial's state as at its last report (RUNNING, no error file named), read
    back as PENDING: the error Tune wrote in the trial's folder on the driver decides. A trial retried
    and then finished (TERMINATED) keeps its error file as history only; one not ended and with no error
    anywhere was left unfinished by a stopped sweep."""
    from psedual.tune.sweep import _outcome

    folder = tmp_path / "trial"
    folder.mkdir()
    (folder / "error.txt").write_text(f"Failure # 1 (occurred at 2026-11-28_14-15-02)\n{RAY_SAYS}\n")
    result = SimpleNamespace(metrics={"epoch": 2, "valid_value_acc": 0.5, "pid": 7}, checkpoint=None, error=None)

    def trial(status: str, local_path=folder):
        return SimpleNamespace(trial_id="t", status=status, config={"variant": "base", "epochs": 8, "data.fold": 0},
                               local_path=str(local_path))

    stale = _outcome(result, trial("PENDING"), None)  # before issue 60: `stopped`, no error
    assert stale.status == "lost" and stale.metrics == {"epoch": 2, "valid_value_acc": 0.5}
    assert stale.error.startswith(f"NodeLost: node {NODE} lost at ") and "after epoch 2 of 8" in stale.error
    assert stale.error.endswith("; the trial must be rerun: --resume")
    # an Optuna sweep's lost trial: --resume does not rerun it (sweep.reruns_errored), and its line says so
    optuna_lost = _outcome(result, trial("PENDING"), None, rerun=False)
    assert optuna_lost.status == "lost" and optuna_lost.error == stale.error.replace(
        "the trial must be rerun: --resume", "--resume does not rerun it (an Optuna sweep: its study cannot reopen a "
        "trial told FAIL); run its values again in a new sweep")
    assert _outcome(result, trial("TERMINATED"), None).status == "stopped"
    # no error anywhere, and not ended: the sweep stopped before it (Ctrl-C), never the scheduler's `stopped`
    unfinished = _outcome(result, trial("RUNNING", tmp_path / "none"), None)
    assert (unfinished.status, unfinished.error) == ("error", "Unfinished: the sweep stopped before this trial ended "
                                                     "(Tune's state: RUNNING, after epoch 2 of 8); --resume continues it")
    assert _outcome(result, trial("PENDING", tmp_path / "none"), None).status == "error"
    assert _outcome(result, trial("TERMINATED", tmp_path / "none"), None).status == "stopped"
    (folder / "error.txt").write_text("Failure # 1 (occurred at 2026-11-28_14-15-02)\nValueError: bad config\n")
    own = _outcome(result, trial("ERROR"), None)
    assert (own.status, own.error) == ("error", "TrialError: ValueError: bad config")
    (folder / "error.txt").unlink()
    assert _outcome(SimpleNamespace(**{**vars(result), "error": ValueError("bad")}), trial("ERROR"), None).error == \
        "ValueError: bad"


def _lose_after(cluster, node, epoch: int, monkeypatch) -> dict:
    """Remove `node` (its raylet and workers killed, as a machine lost) as soon as the trial running
    there reports `epoch`, from inside the sweep's own progress callback: Tune handles nothing else
    until the node is gone. The trial is told by its process id, which Tune reports with each result."""
    import psutil
    from ray._private import ray_constants

    from psedual.tune.progress import Progress

    raylet = psutil.Process(node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid)
    removed: dict = {}
    report = Progress.on_trial_result

    def on_trial_result(self, iteration, trials, trial, result, **info):
        report(self, iteration, trials, trial, result, **info)
        if not removed and result.get("epoch") == epoch and result.get("pid") in {
                p.pid for p in raylet.children(recursive=True)}:
            removed.update(trial=trial.trial_id, at=datetime.now(timezone.utc), node=node.node_id)
            cluster.remove_node(node, allow_graceful=False)

    monkeypatch.setattr(Progress, "on_trial_result", on_trial_result)
    return removed


# 2.5-4 min on the loaded 2-core machine: the cluster's start, two 8-epoch trials, the tests after
# them, then the resumed sweep (the lost trial's 6 epochs left, both trials' tests again)
@pytest.mark.slow
def test_a_node_lost_after_two_of_eight_epochs_is_a_lost_row_and_resume_reruns_it(cluster, tmp_path, capsys,
                                                                                  monkeypatch):
    from psedual.job import run_spec
    from psedual.train.resources import Resources

    cluster, nodes = cluster
    smoke = load_spec(ROOT / "search_spaces" / "smoke.yaml")
    # a (fake) GPU each, so one trial per GPU node; no retry, so the loss ends the trial
    spec = replace(smoke, name="lost", fixed={**smoke.fixed, "device": "cpu", "epochs": 8},
                   resources=Resources(gpus_per_trial=1, max_concurrent=2, max_failures=0))
    removed = _lose_after(cluster, nodes[1], 2, monkeypatch)
    code = run_spec(spec, "lost", False, str(tmp_path), cluster.address)
    printed = capsys.readouterr().out
    assert removed, "no trial reported epoch 2 on the node to lose"
    runs = pl.read_parquet(tmp_path / "runs" / "experiment=lost" / "*.parquet").sort("trial")
    lost = runs.filter(pl.col("trial") == removed["trial"]).row(0, named=True)
    other = runs.filter(pl.col("trial") != removed["trial"]).row(0, named=True)
    # before issue 60: exit 0, the lost trial `stopped` with 2 epochs and no error (an early stop)
    assert code == 1 and (lost["status"], other["status"]) == ("lost", "completed"), runs
    # the node is removed when the trial reports epoch 2, but its worker trains on until the raylet's
    # death reaches it (a quiet machine: an epoch or two more), and Tune may not yet have registered
    # epoch 2's checkpoint: the row holds what the trial left, whichever epoch that is, and says it
    done = lost["epochs_done"]
    assert 1 <= done < 8 and other["epochs_done"] == 8, runs
    error = lost["error"]
    assert error.startswith(f"NodeLost: node {removed['node']} (127.0.0.1) lost at ") and \
        f"after epoch {done} of 8" in error, error
    assert "health check failed" in error and error.endswith("the trial must be rerun: --resume")
    at = datetime.strptime(error.split(" lost at ")[1][:19], "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    assert 0 <= (at - removed["at"].replace(microsecond=0)).total_seconds() < 60
    epochs = pl.read_parquet(tmp_path / "epochs" / "experiment=lost" / "*.parquet")
    assert epochs.filter(pl.col("trial") == removed["trial"]).height == done
    # the log path printed is the cluster's session folder, not /tmp/ray's latest (another Ray's)
    logs = cluster.head_node.get_logs_dir_path()
    assert f"goes to {logs} (a trial's log: on the node it ran on)" in printed
    assert f"LOST: its node {removed['node']} died after epoch {done}/8; the trial must be rerun (--resume); its log: " \
           f"{logs} on that node" in printed
    assert "/tmp/ray/session_latest" not in printed
    assert f"trial {removed['trial']} lost: NodeLost: node {removed['node']}" in printed
    assert "1 trial(s) did not finish: rerun them with --resume lost (the same flags)" in printed

    # a new node comes up in its place (as the autoscaler's would); --resume reruns the lost trial from
    # its epoch-2 checkpoint and leaves the finished one be
    cluster.add_node(num_cpus=1, num_gpus=1, node_ip_address="127.0.0.1")
    monkeypatch.undo()
    assert run_spec(spec, "lost", True, str(tmp_path), cluster.address) == 0
    rerun = pl.read_parquet(tmp_path / "runs" / "experiment=lost" / "*.parquet").sort("trial")
    assert rerun["status"].to_list() == ["completed", "completed"] and rerun["error"].null_count() == 2
    assert rerun["epochs_done"].to_list() == [8, 8]
    epochs = pl.read_parquet(tmp_path / "epochs" / "experiment=lost" / "*.parquet")
    assert sorted(epochs.filter(pl.col("trial") == removed["trial"])["epoch"]) == list(range(1, 9))
    started = [line for line in capsys.readouterr().out.splitlines() if line.endswith(" started")]
    assert len(started) == 1 and started[0].startswith(f"trial {removed['trial']} ("), started


def test_the_jobs_line_for_a_trial_without_a_result_says_how_it_ended():
    from psedual.job import _ended
    from psedual.tune.sweep import unfinished_line

    assert _ended({"status": "lost", "error": "NodeLost: node x lost"}) == "lost"
    assert _ended({"status": "error", "error": unfinished_line("RUNNING", 2, 8)}) == "did not end"
    assert _ended({"status": "error", "error": "ValueError: bad"}) == "failed"
    assert _ended({"status": "error", "error": None}) == "failed"


def test_an_unavailable_actor_is_a_lost_node_only_where_ray_lists_its_node_dead(monkeypatch):
    # a call in flight when the node went failed first as ActorUnavailableError (the slow set, 1b43db0)
    from psedual.tune import lost

    actor = "e641c4f53be8ad594f68f7ee02000000"
    said = (f"ray.exceptions.ActorUnavailableError: The actor {actor} is unavailable: The actor is temporarily "
            "unavailable: RpcError: RPC error: Socket closed rpc_code: 14.")
    assert lost_node(said) is None  # no Ray running here: nothing to check the node against
    seen = []
    monkeypatch.setattr(lost, "actor_dead_node", lambda a: seen.append(a) or NODE)
    assert lost_node(said) == NODE and seen == [actor]
    monkeypatch.setattr(lost, "actor_dead_node", lambda a: None)  # its node alive: a plain error
    assert lost_node(said) is None


def test_an_unavailable_actors_live_node_is_watched_until_ray_marks_it_dead(monkeypatch):
    """The searcher hears of the failure before Ray's health checks mark the node dead (the slow set,
    1bbc3f0): the node is polled until it is, within `wait_s`; still alive by then, not lost."""
    import ray
    from ray._private import state

    from psedual.tune import lost

    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(state, "actors", lambda actor_id: {"Address": {"NodeID": NODE}})
    polls = []
    monkeypatch.setattr(lost, "dead_node", lambda node: (polls.append(node), len(polls) >= 3 and {"NodeID": node})[1])
    monkeypatch.setattr(lost.time, "sleep", lambda s: None)
    monkeypatch.setattr(lost, "_WATCHED", {})
    assert lost.actor_dead_node("a" * 32, wait_s=60.0) == NODE and polls == [NODE] * 3  # dead at the third look
    polls.clear()
    clock = iter(range(100))
    monkeypatch.setattr(lost.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(lost, "dead_node", lambda node: (polls.append(node), {})[1])
    assert lost.actor_dead_node("b" * 32, wait_s=5.0) is None and len(polls) == 5  # a look a second for 5 s: not lost
    # the next readers of the two trials' errors (the outcomes, the progress line) watch neither node again:
    # a dead one stays dead unlooked at; a live one gets one look, no wait, and is lost once Ray lists it dead
    polls.clear()
    assert lost.actor_dead_node("a" * 32) == NODE and lost.actor_dead_node("b" * 32) is None and polls == [NODE]
    monkeypatch.setattr(lost, "dead_node", lambda node: (polls.append(node), {"NodeID": node})[1])
    assert lost.actor_dead_node("b" * 32) == NODE and polls == [NODE] * 2
    assert lost.actor_dead_node("b" * 32) == NODE and polls == [NODE] * 2  # dead is kept: no more looks


@pytest.mark.slow
def test_an_actor_on_a_removed_node_is_found_dead_from_its_id(cluster):  # noqa: F811
    import ray

    cluster, nodes = cluster

    @ray.remote(num_gpus=1)
    class Holder:
        def node(self) -> str:
            return ray.get_runtime_context().get_node_id()

    holder = Holder.remote()
    node = ray.get(holder.node.remote())
    actor = holder._actor_id.hex()
    from psedual.tune import lost
    from psedual.tune.lost import actor_dead_node

    began = time.monotonic()
    assert actor_dead_node(actor, wait_s=1.0) is None  # alive: watched for the second given, then not lost
    assert time.monotonic() - began >= 1.0
    cluster.remove_node(next(n for n in nodes if n.node_id == node))
    # an actor is watched once (a later reader of the same error looks once, without waiting): this test
    # asks afresh, to watch the node die
    lost._WATCHED.pop(actor)
    assert actor_dead_node(actor, wait_s=30.0) == node  # asked the moment it went: watched until Ray marks it
    assert lost_node(f"The actor {actor} is unavailable: RpcError: Socket closed") == node
