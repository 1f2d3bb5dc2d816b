"""A simulated GPU cluster on this machine (Ray's `cluster_utils.Cluster`: a 0-GPU head and nodes
with fake GPUs, every raylet on 127.0.0.1): GPU trials and their tests land on GPU nodes only,
and a node lost under a trial costs that trial one `lost` row; the job still writes its tables
and runs its comparison (a node lost mid-trial, and `--resume` after it: tests/test_lost_node.py)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from conftest import loopback_ray_env
from psedual.tune.space import load_spec

ROOT = Path(__file__).parent.parent
LOOPBACK = "127.0.0.1"


@pytest.fixture
def cluster(own_ray):
    """A head with 2 CPUs and no GPU, two nodes with 1 CPU and 1 (fake) GPU each, all on
    127.0.0.1; this test's own Ray, shut down at its end (never one it did not start)."""
    import ray
    from ray.cluster_utils import Cluster

    assert not ray.is_initialized()
    with loopback_ray_env() as env:
        # Ray refuses a raylet with GPUs that CUDA_VISIBLE_DEVICES hides (conftest hides them
        # all); the trials name the CPU, so a real GPU of this machine stays unused
        env.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        # a lost raylet is noticed within ~2 s, not Ray's default ~30 s
        system = {"health_check_period_ms": 500, "health_check_failure_threshold": 3,
                  "health_check_timeout_ms": 500}
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 2, "num_gpus": 0, "node_ip_address": LOOPBACK, "include_dashboard": False,
            "_system_config": system})
        try:
            nodes = [cluster.add_node(num_cpus=1, num_gpus=1, node_ip_address=LOOPBACK) for _ in range(2)]
            ray.init(address=cluster.address, log_to_driver=False)
            yield cluster, nodes
        finally:
            ray.shutdown()
            cluster.shutdown()


GPU_WORK = ("ImplicitFunc", "evaluate_checkpoint")
"""Process titles of GPU work: Tune's function trainables run as `ImplicitFunc` actors, the
tests after the sweep as `evaluate_checkpoint` tasks."""


def _watch(cluster, head, nodes, done: threading.Event, seen: dict) -> None:
    """Until `done`: note which node's workers run GPU work (`seen[name]`: the titles), and
    remove nodes[1] as soon as a trial's actor runs there, seconds before its first report
    (which waits for its data, its model and an epoch). Ray's resource view lags too much to tell."""
    import psutil
    from ray._private import ray_constants

    def raylet(node):
        return psutil.Process(node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid)

    watched = {"head": raylet(head), "gpu0": raylet(nodes[0]), "gpu1": raylet(nodes[1])}
    seen.update({name: set() for name in watched})
    while not done.is_set():
        for name, proc in list(watched.items()):
            try:
                titles = {" ".join(p.cmdline()) for p in proc.children(recursive=True)}
            except psutil.Error:  # a worker that ended while being read
                continue
            seen[name] |= {work for work in GPU_WORK if any(work in t for t in titles)}
            if name == "gpu1" and "ImplicitFunc" in seen[name]:
                cluster.remove_node(nodes[1], allow_graceful=False)
                del watched[name]
        time.sleep(0.05)


# ~18 s on the quiet 2-core machine (three raylets, two tiny trials, the tables), ~20 s and more in a
# loaded suite: slow. Once in three runs on a loaded machine it used to return 0 with no error row: Ray
# 2.60 may save a failed trial's state as it was at its last report (issue 60; `sweep._outcome` now
# reads the error Tune wrote on the driver too). `pytest -m slow tests/test_cluster.py`.
@pytest.mark.slow
def test_a_node_lost_under_a_trial_costs_one_lost_row_and_the_job_writes_its_tables(cluster, tmp_path, capsys):
    from psedual.job import run_spec
    from psedual.train.resources import Resources

    cluster, nodes = cluster
    smoke = load_spec(ROOT / "search_spaces" / "smoke.yaml")
    # a GPU each (fake ones: the trials name the CPU, as a GPU sweep names `auto`), no retry
    spec = replace(smoke, name="lost", fixed={**smoke.fixed, "device": "cpu"},
                   resources=Resources(gpus_per_trial=1, max_concurrent=2, max_failures=0))
    seen: dict = {}
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(cluster, cluster.head_node, nodes, done, seen))
    watcher.start()
    try:
        code = run_spec(spec, "lost", False, str(tmp_path), cluster.address)
    finally:
        done.set()
        watcher.join()
    # GPU work only on the GPU nodes: the surviving one ran its trial and that trial's test
    assert seen == {"head": set(), "gpu0": set(GPU_WORK), "gpu1": {"ImplicitFunc"}}, seen
    runs = pl.read_parquet(tmp_path / "runs" / "experiment=lost" / "*.parquet")
    assert code == 1 and sorted(runs["status"]) == ["completed", "lost"]
    lost = runs.filter(pl.col("status") == "lost").row(0, named=True)
    assert lost["epochs_done"] == 0 and lost["test_value_acc"] is None
    assert lost["error"].startswith(f"NodeLost: node {nodes[1].node_id} (127.0.0.1) lost at ")
    assert "after epoch 0 of 1" in lost["error"]
    done = runs.filter(pl.col("status") == "completed").row(0, named=True)
    assert done["n_test"] == 397 and done["test_value_acc"] is not None
    for table, n in (("epochs", 1), ("predictions", 397)):
        assert pl.read_parquet(tmp_path / table / "experiment=lost" / "*.parquet").height == n, table
    printed = capsys.readouterr()
    assert f"trial {lost['trial']} lost: NodeLost: " in printed.out
    # the comparison still runs: it names the run it skipped (here the pair's other arm is gone)
    assert (f"skipped 1 run(s) that failed or have no test result: lost/{lost['trial']} (status lost, no test "
            f"result)") in printed.err


def test_a_train_worker_checks_its_device_before_rays_process_group(monkeypatch):
    """Issue 42: Ray sets up a Train worker group's process group before the training function runs,
    so a worker given a GPU that its torch cannot use (a CPU wheel, an old driver) failed inside NCCL's
    setup (`Distributed package doesn't have NCCL built in`), never reaching the trainer's check.
    The backend now checks every worker's device first: one line naming the node."""
    import torch

    from psedual.train.device import NoCudaError
    from psedual.tune import trial

    calls = []

    class Workers:  # a worker group that runs each call here, as one worker holding GPU 0
        def execute(self, fn, *args, **kwargs):
            calls.append(fn.__name__)
            return [fn(*args, **kwargs)]

    monkeypatch.setattr(trial.ray, "get_gpu_ids", lambda: [0])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(trial._TorchBackend, "on_start", lambda self, group, config: calls.append("process group"))
    config = trial.CheckedTorchConfig(backend="nccl", device="auto")
    with pytest.raises(NoCudaError, match=r"^node \S+: this trial holds GPU 0 but torch \S+ \(CUDA .*\) sees no CUDA "
                                          r"device; driver: ") as raised:
        config.backend_cls().on_start(Workers(), config)
    assert calls == ["check_worker"] and "\n" not in str(raised.value)  # no process group was attempted
    calls.clear()
    cpu = trial.CheckedTorchConfig(backend="gloo", device="cpu")  # the CPU asked for: taken as asked
    cpu.backend_cls().on_start(Workers(), cpu)
    assert calls == ["check_worker", "process group"]


def test_a_failed_train_run_gives_the_workers_one_line():
    """The trial's error is the worker's line, whether Ray reports it as a controller error (the
    backend's check) or a worker group error (the training function's), each in a task error."""
    from ray.exceptions import RayTaskError
    from ray.train import ControllerError, WorkerGroupError

    from psedual.train.device import NoCudaError
    from psedual.tune.trial import no_cuda_line

    line = "node gpu-1: this trial holds GPU 0 but torch 2.7.1+cpu (CUDA none: a CPU build) sees no CUDA device"
    wrapped = RayTaskError("check_worker", "Traceback (most recent call last):\n ...", NoCudaError(line))
    for err in (ControllerError(wrapped.as_instanceof_cause()),
                WorkerGroupError("Training failed", {0: wrapped.as_instanceof_cause()})):
        found = no_cuda_line(err)
        assert isinstance(found, NoCudaError) and str(found) == line
    assert no_cuda_line(ControllerError(RuntimeError("something else"))) is None


@pytest.mark.slow
def test_an_nccl_trial_on_a_gpu_node_without_cuda_fails_at_once_in_one_line(cluster, tmp_path):
    """A Train-worker trial holding a (fake) GPU, so NCCL, on a node whose torch has no CUDA: an
    error row whose error is the worker's one line, before any epoch (30-40 s: a Train start)."""
    from psedual.train.resources import Resources
    from psedual.tune.sweep import run_sweep

    cluster, _ = cluster
    smoke = load_spec(ROOT / "search_spaces" / "smoke.yaml")
    spec = replace(smoke, name="nocuda", grid={}, arms=[{"variant": "base"}],
                   resources=Resources(use_gpu=True, in_process=False, max_failures=0))
    assert spec.resources.backend == "nccl"
    outcome, = run_sweep(spec, str(tmp_path), address=cluster.address)
    assert outcome.status == "error" and outcome.metrics.get("epoch") is None
    assert outcome.error.startswith("NoCudaError: node ") and "\n" not in outcome.error, outcome.error
    assert "holds GPU 0 but torch" in outcome.error and "sees no CUDA device" in outcome.error


@pytest.mark.slow
def test_the_calibration_times_gpu_shapes_in_one_task_on_a_gpu_node(cluster):
    """Issue 42: `--calibrate` for GPU parts is one Ray task holding one GPU, so it lands on a GPU
    node (never the 0-GPU head) and times the shapes there, one at a time; a GPU that its torch
    cannot use fails in one line instead of being timed as the CPU and priced as GPU hours."""
    import ray

    from psedual.tune.calibrate import measure_on_cluster
    from psedual.tune.cost import machine

    cluster, nodes = cluster
    smoke = load_spec(ROOT / "search_spaces" / "smoke.yaml")
    flat, = [f for f in smoke.trial_configs() if f.get("variant", "base") == "base"][:1]
    # the fake GPUs have no CUDA: the shapes name the CPU, as the lost-node test's trials do
    measured = measure_on_cluster([{**flat, "device": "cpu"}, {**flat, "device": "cpu", "batch_size": 16}])
    assert measured["node"] in {n.node_id for n in nodes} and measured["node"] != cluster.head_node.node_id
    assert [r["machine"] for r in measured["rows"]] == [machine()] * 2
    assert all(r["step_s"] > 0 and r["eval_s"] > 0 for r in measured["rows"])
    assert measured["rows"][0]["shape"] != measured["rows"][1]["shape"]
    with pytest.raises(ray.exceptions.RayTaskError, match=r"NoCudaError: node \S+: this trial holds GPU \d but torch"):
        measure_on_cluster([{**flat, "device": "auto"}])


def _ours(tmp: str) -> list:
    """This machine's processes whose command line names `tmp` (the private session folder of the
    Ray this test started): its own, and the fake nodes its autoscaler started."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if any(tmp in part for part in proc.info["cmdline"] or ()):
            found.append(proc)
    return found


IDLE_TIMEOUT_MINUTES = 0.2
SCALE_DOWN_S = 60
"""The fake cluster's idle timeout (12 s: gpu.yaml's 10 minutes are too long to wait for, and a
fresh node must not go idle before its task reaches it on a loaded machine), and how long after
their tasks end its idle workers may take to be gone: the timeout, the autoscaler's 1 s rounds
and the raylets' shutdown, with room for a loaded machine."""


@pytest.mark.slow
def test_the_gpu_clusters_node_types_scale_from_zero_and_place_gpu_work_on_the_workers(tmp_path, own_ray):
    """Issue 42: Ray's `fake_multinode` provider on clusters/gpu.yaml's own node types (their
    resources, worker counts, upscaling speed): no GPU at the start, two GPU tasks bring up two
    `gpu_worker` nodes and run there, never on the 0-GPU head; idle for the idle timeout, both
    are terminated by the autoscaler and the head stays (30-40 s). The head is this test's
    own (`cluster_utils.Cluster`, a private session folder and port; Ray's autoscaling test-cluster
    helper is not used: its teardown ends every Ray of this user on the machine, not its own only,
    and it reads fake_multi_node/example.yaml, which Ray 2.60's wheel lacks); the fake nodes its
    autoscaler starts are stopped by process id (their command lines name this test's session
    folder)."""
    import json
    import os
    import socket

    import ray
    import yaml
    from ray.autoscaler._private.fake_multi_node.node_provider import FAKE_HEAD_NODE_ID
    from ray.cluster_utils import Cluster
    from ray.core.generated.common_pb2 import NodeDeathInfo

    gpu = yaml.safe_load((ROOT / "clusters" / "gpu.yaml").read_text())
    types = gpu["available_node_types"]
    head = types[gpu["head_node_type"]]
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        port = s.getsockname()[1]
    workers = {name: {**{k: t[k] for k in ("min_workers", "max_workers", "resources")}, "node_config": {}}
               for name, t in types.items() if name != gpu["head_node_type"]}
    config = {"cluster_name": "fake-" + gpu["cluster_name"], "max_workers": gpu["max_workers"],
              "upscaling_speed": gpu["upscaling_speed"], "idle_timeout_minutes": IDLE_TIMEOUT_MINUTES,
              "auth": {"ssh_user": "x"},
              # the fake nodes are raylets with nothing to set up: no updater (the provider's tags are
              # read-only, and an updater's first write fails the node), as Ray's KubeRay provider.
              # Every fake raylet is on 127.0.0.1, and the autoscaler finds a node idle by its "IP":
              # use_node_id_as_ip keys its load metrics by node id, which this provider answers as
              # the IP (as Ray's fake_multi_node/example.yaml does); without it no node is ever idle
              "provider": {"type": "fake_multinode", "gcs_address": f"{LOOPBACK}:{port}",
                           "use_node_id_as_ip": True,
                           "disable_node_updaters": True, "disable_launch_config_check": True},
              "available_node_types": {"ray.head.default": {"resources": head["resources"], "node_config": {},
                                                            "max_workers": 0}, **workers},
              "head_node_type": "ray.head.default", "file_mounts": {}, "cluster_synced_files": [],
              "file_mounts_sync_continuously": False, "rsync_exclude": [], "rsync_filter": [],
              "initialization_commands": [], "setup_commands": [], "head_setup_commands": [],
              "worker_setup_commands": [], "head_start_ray_commands": [], "worker_start_ray_commands": []}
    path = tmp_path / "fake.yaml"
    path.write_text(json.dumps(config))
    assert not ray.is_initialized()
    with loopback_ray_env() as env:
        env.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        env.setenv("RAY_FAKE_CLUSTER", "1")  # the provider refuses to run without it
        env.setenv("AUTOSCALER_UPDATE_INTERVAL_S", "1")
        tmp = os.environ["RAY_TMPDIR"]
        # the head under the id the provider lists it by, as `ray start --head` names it under
        # RAY_FAKE_CLUSTER: else the autoscaler drops the head's load reports each round as from a
        # node its provider does not list (the scale-down does not depend on it)
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": head["resources"]["CPU"], "num_gpus": head["resources"]["GPU"], "gcs_server_port": port,
            "node_ip_address": LOOPBACK, "include_dashboard": False, "autoscaling_config": str(path),
            "env_vars": {"RAY_OVERRIDE_NODE_ID_FOR_TESTING": FAKE_HEAD_NODE_ID}})
        try:
            ray.init(address=cluster.address, log_to_driver=False)
            assert ray.cluster_resources().get("GPU", 0) == 0  # from zero

            @ray.remote(num_gpus=1, num_cpus=1)
            def where() -> str:
                time.sleep(3)  # both held at once: two nodes, not one reused
                return ray.get_runtime_context().get_node_id()

            ran = ray.get([where.remote() for _ in range(2)], timeout=180)
            nodes = {n["NodeID"]: n for n in ray.nodes() if n["Alive"]}
            assert len(set(ran)) == 2 and cluster.head_node.node_id not in ran
            assert all(nodes[n]["Resources"].get("GPU") == 1 and nodes[n]["Resources"]["CPU"] ==
                       types["gpu_worker"]["resources"]["CPU"] for n in ran)
            # the scale-down: both workers idle since their task ended are terminated by the
            # autoscaler (the provider ends their raylets), the head stays
            ended = time.monotonic()
            while time.monotonic() - ended < SCALE_DOWN_S:
                alive = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
                if not alive & set(ran):
                    break
                time.sleep(1)
            assert not alive & set(ran), f"a gpu_worker still up {SCALE_DOWN_S} s after its task ended"
            assert alive == {cluster.head_node.node_id}
            # ended on purpose, not lost (the autoscaler's drain or the provider's SIGTERM, whichever
            # reaches the raylet first), and for being idle
            dead = {n["NodeID"]: n["DeathReason"] for n in ray.nodes() if not n["Alive"]}
            assert dead == {n: NodeDeathInfo.EXPECTED_TERMINATION for n in ran}
            log = (Path(cluster.head_node.get_logs_dir_path()) / "monitor.log").read_text()
            for n in ran:
                assert f"Terminating the node with id {n} and ip {n}. (idle)" in log
        finally:
            ray.shutdown()
            cluster.shutdown()
            left = _ours(tmp)
            for proc in left:  # the fake nodes the autoscaler started, if any outlived the head
                proc.kill()


GPU_PAPER = """
name: p
parts:
  table3:
    mode: grid
    fixed: {solver: gts, data.dataset: mawps, data.fold: 0, data.train_size: 64, epochs: 1, batch_size: 16,
            beam_size: 1, model.embedding_size: 16, model.hidden_size: 32, model.layers: 1, threads: 1, device: cpu}
    grid: {variant: [base, gcn]}
profiles:
  gpu:
    about: one GPU part of two tiny shapes, on the fake cluster
    parts:
      table3: {grid: {seed: [0, 1]}, resources: {max_concurrent: 2, gpus_per_trial: 1}}
"""
"""A paper file whose one part is a GPU part (a GPU per trial, two at a time) of two tiny shapes
naming the CPU (the fake GPUs have no CUDA, as in the lost-node test)."""


# 38-48 s on the 2-core machine shared with another engineer, 54-61 s with the cluster's start (three raylets;
# the task's torch start, two shapes of 2 steps, then the smoke sweep's whole job on the cluster, ~28 s):
# slow, as the other tests on this cluster
@pytest.mark.slow
def test_the_gpu_calibration_runs_end_to_end_on_the_cluster_and_the_plan_prices_its_part(cluster, tmp_path,
                                                                                          monkeypatch, capsys):
    """Issue 42: `--calibrate --address ...` on a paper file with a GPU part, the whole path: its shapes
    timed in one Ray task on a GPU node (not the head), the part's overhead as the smoke sweep's wall
    time on that Ray, the rows stored in the job's costs file (never psedual/tune/costs.tsv), and the
    plan printed from them with the part priced."""
    from psedual import paper_job
    from psedual.job import TuneJob
    from psedual.tune import calibrate as calibrate_module
    from psedual.tune import cost, instances, plan_text
    from psedual.tune.cost import PART, machine, read_costs

    cluster, nodes = cluster
    real = cost.COSTS.read_bytes() if cost.COSTS.exists() else None
    measured = []
    on_cluster = calibrate_module.measure_on_cluster
    monkeypatch.setattr(calibrate_module, "measure_on_cluster",
                        lambda *args: measured.append(on_cluster(*args)) or measured[-1])
    # the shapes name the CPU, so their rows are keyed by this machine's CPU (`measure_on_gpu`); the plan
    # reads a GPU part from the GPU instance's key: here that key is this CPU's
    monkeypatch.setattr(instances, "gpu_machine", lambda gpu: machine())  # as the plan picks the GPU part's rows
    monkeypatch.setattr(plan_text, "gpu_machine", lambda gpu: machine())  # as the plan's header names them
    path = tmp_path / "paper.yaml"
    path.write_text(GPU_PAPER)
    costs = tmp_path / "costs.tsv"
    job = TuneJob.of(space=str(path), profile="gpu", calibrate=True, address=cluster.address, costs=str(costs),
                     storage=str(tmp_path / "storage"), calibrate_steps=2)
    assert paper_job.run_paper(job) == 0
    # one task, on a fake-GPU worker node, never the 0-GPU head
    assert len(measured) == 1 and measured[0]["node"] in {n.node_id for n in nodes}
    assert measured[0]["node"] != cluster.head_node.node_id
    rows = read_costs(costs)
    where = machine()
    shapes = {k: f for k, f in rows.items() if k[2] != PART}
    assert {k[:2] for k in shapes} == {(where, 1)} and len(shapes) == 2  # one per shape, one at a time
    assert {k[2].split(" ")[1] for k in shapes} == {"variant=base", "variant=gcn"}
    # PseDual-GCN's row times a step at ε = 1 and one that samples; the base row has no sampled step
    assert {k[2].split(" ")[1]: f.sample_step_s is not None and f.sample_step_s > 0 for k, f in shapes.items()} == {
        "variant=base": False, "variant=gcn": True}
    assert all(f.step_s > 0 and f.eval_s > 0 and f.note == "2 steps timed an epoch" and f.commit
               for f in shapes.values())
    part = rows.pop((where, 2, PART))  # the part's overhead, at the part's concurrency
    assert part.start_s > 0 and part.commit and set(rows) == set(shapes)
    out = capsys.readouterr().out
    assert "calibrating 2 GPU trial shapes in one Ray task holding one GPU" in out
    assert "a part's overhead: " in out
    table3, = [line for line in out.splitlines() if line.startswith("table3 ")]
    assert "not calibrated" not in out and "GPU-h" in table3 and " at 2 " in table3, out
    assert f"part's overhead, measured on {where}" in out
    assert "table3: extrapolated: 2 shapes timed with 2 steps timed an epoch" in out
    assert (cost.COSTS.read_bytes() if cost.COSTS.exists() else None) == real  # the real calibration untouched
    # a local storage is no URI the nodes share: the smoke sweep's went to a temporary folder
    assert not (tmp_path / "storage").exists()
