"""Fault tolerance of sweeps, shown on tiny runs (MAWPS fold 0, 96 problems, 3 epochs).

1. Worker killed: a trial trains through Ray Train workers; rank 0 is SIGKILLed right
   after reporting epoch 2. Ray Train restarts the worker from its last checkpoint;
   the trial must end with the same metrics as an uninterrupted one.
2. Driver killed: `tune.py` is SIGKILLed while its 4-trial grid runs; `tune.py --resume`
   must finish it with every trial in the tables exactly once.

Usage: python tools/fault_tolerance.py [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
TINY = """# python tools/fault_tolerance.py   (tiny grid for the fault-tolerance check)
name: {name}
mode: grid
fixed:
  solver: gts
  data.dataset: mawps
  data.fold: 0
  data.train_size: 96
  epochs: 3
  batch_size: 32
  beam_size: 1
  model.embedding_size: 16
  model.hidden_size: 32
  model.layers: 1
  threads: 1
grid:
  variant: {variants}
  seed: {seeds}
resources:
  max_concurrent: 1
  in_process: {in_process}
"""
KILL_AFTER_EPOCH = "PSEDUAL_BENCH_KILL_WORKER_AFTER_EPOCH"
"""`<epoch>:<marker file>`: rank 0 kills its own process right after reporting that epoch, once
(the marker file records that it did). Read by `_install_kill`, in this script's workers only."""
METRICS = ["valid_value_acc", "valid_expr_acc", "best_epoch", "test_value_acc", "test_expr_acc", "test_infill_acc"]


def _install_kill() -> None:
    """Ray's worker setup hook: in each worker process of this script's Ray, wrap `ray.train.report`
    so that rank 0 dies after reporting the epoch `KILL_AFTER_EPOCH` names (its checkpoint is stored
    by then). The fault lives here, not in the trial code the sweeps run."""
    import ray.train

    spec = os.environ.get(KILL_AFTER_EPOCH)
    if not spec:
        return
    epoch, marker = spec.split(":", 1)
    report = ray.train.report

    def report_then_die(metrics: dict, *args, **kwargs) -> None:
        report(metrics, *args, **kwargs)
        if (metrics.get("epoch") == int(epoch) and ray.train.get_context().get_world_rank() == 0
                and not Path(marker).exists()):
            Path(marker).write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)

    ray.train.report = report_then_die


def worker_killed(work: Path) -> None:
    import ray

    from psedual.tune.evaluate import collect
    from psedual.tune.space import load_spec
    from psedual.tune.sweep import run_sweep

    (work / "w.yaml").write_text(TINY.format(name="whole", variants="[gcn]", seeds="[0]", in_process="false"))
    spec = load_spec(work / "w.yaml")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {KILL_AFTER_EPOCH: f"2:{work / 'killed'}"},
                          "worker_process_setup_hook": _install_kill})
    try:
        killed = collect(run_sweep(replace(spec, name="killed"), str(work / "results"), verbose=0),
                         str(work / "results"), "killed")
        os.environ[KILL_AFTER_EPOCH] = ""
        pid = (work / "killed").read_text()
        (work / "killed").write_text("done")  # no further kills
        whole = collect(run_sweep(spec, str(work / "results"), verbose=0), str(work / "results"), "whole")
    finally:
        ray.shutdown()
    print(f"worker killed: rank-0 worker pid {pid} SIGKILLed after epoch 2; trial status {killed['status'][0]}")
    for m in METRICS:
        print(f"  {m:<18} killed-and-retried {killed[m][0]!s:<22} uninterrupted {whole[m][0]}")
    same = killed.select(METRICS).equals(whole.select(METRICS))
    tables = {t: [pl.read_parquet(work / "results" / t / f"experiment={e}" / "*.parquet").drop("trial")
                  for e in ("killed", "whole")] for t in ("epochs", "predictions")}
    print(f"  same metrics: {same}; same per-epoch losses: {tables['epochs'][0].drop('seconds').equals(tables['epochs'][1].drop('seconds'))}; "
          f"same predictions: {tables['predictions'][0].equals(tables['predictions'][1])}")


def stop_ray_under(ray_tmp: Path) -> int:
    """Kill the processes whose command line names `ray_tmp`: the Ray a killed driver started.
    Never `ray stop`, which stops every Ray of this user on the machine."""
    import psutil  # a Ray dependency

    killed = 0
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if proc.pid != os.getpid() and any(str(ray_tmp) in arg for arg in proc.info["cmdline"] or ()):
                proc.kill()
                killed += 1
        except psutil.Error:  # gone already, or not ours to kill
            continue
    return killed


def driver_killed(work: Path) -> None:
    (work / "d.yaml").write_text(TINY.format(name="driver", variants="[base, gcn]", seeds="[0, 1]", in_process="true"))
    cmd = [sys.executable, str(ROOT / "tune.py"), "--space", str(work / "d.yaml"), "--storage", str(work / "results")]
    # The driver's local Ray keeps its sockets and session under a temp dir of its own, so that the
    # Ray it leaves behind when killed can be told from any other Ray on this machine.
    ray_tmp = Path(tempfile.mkdtemp(prefix="pdray-"))
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "CI": "1", "RAY_TMPDIR": str(ray_tmp)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    state = work / "results" / "driver"
    began = time.time()
    while time.time() - began < 600:  # kill once the first trial has a checkpoint
        if list(state.glob("*/checkpoint_*")):
            break
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = len(list((work / "results" / "runs" / "experiment=driver").glob("*.parquet"))) \
        if (work / "results" / "runs" / "experiment=driver").exists() else 0
    left = stop_ray_under(ray_tmp)
    resumed = subprocess.run([*cmd, "--resume", "driver"], env=env, capture_output=True, text=True)
    stop_ray_under(ray_tmp)
    runs = pl.read_parquet(work / "results" / "runs" / "experiment=driver" / "*.parquet")
    preds = pl.read_parquet(work / "results" / "predictions" / "experiment=driver" / "*.parquet")
    print(f"driver killed after {time.time() - began:.0f} s with {partial} runs rows written; "
          f"({left} processes of its Ray left, stopped); --resume exit code {resumed.returncode}")
    print(f"  runs rows {runs.height} (trials {runs['trial'].n_unique()}, statuses {sorted(runs['status'])}); "
          f"predictions rows {preds.height}, duplicates {preds.height - preds.unique(['trial', 'id']).height}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", help="scratch folder (default: a new temporary one)")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="psedual-faults-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    worker_killed(work)
    driver_killed(work)
    print(f"scratch: {work}")


if __name__ == "__main__":
    main()
