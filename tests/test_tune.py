"""The platform: sweep files, cluster files, and a smoke sweep on a local Ray (both trial paths)."""

from __future__ import annotations

import glob
import json
import pickle
import shlex
import shutil
import subprocess
from types import SimpleNamespace
from dataclasses import replace
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
import yaml

from psedual.results import tables
from psedual.tune.evaluate import collect, evaluate_trials
from psedual.tune.paper import is_paper_file
from psedual.tune.space import SpecError, load_spec, make_config

ROOT = Path(__file__).parent.parent
SPACES = sorted(p for p in glob.glob(str(ROOT / "search_spaces" / "*.yaml")) if not is_paper_file(p))
"""The sweep files (paper files, which hold several sweeps, are tests/test_paper.py's)."""
CLUSTERS = sorted(glob.glob(str(ROOT / "clusters" / "*.yaml")))


@pytest.mark.parametrize("path", SPACES, ids=lambda p: Path(p).name)
def test_every_sweep_file_loads_and_names_its_command(path):
    assert Path(path).read_text().startswith("# python tune.py") or "pytest" in Path(path).read_text().splitlines()[0]
    spec = load_spec(path)
    assert spec.name == Path(path).stem
    for flat in spec.trial_configs():
        make_config(flat)


@pytest.mark.parametrize("path", CLUSTERS, ids=lambda p: Path(p).name)
def test_every_cluster_file_passes_rays_validation(path):
    from ray.autoscaler._private.util import prepare_config, validate_config

    assert Path(path).read_text().startswith("# ")
    config = yaml.safe_load(Path(path).read_text())
    validate_config(prepare_config(config))
    config["max_workerz"] = 1  # and the validation can fail
    with pytest.raises(Exception, match="max_workerz"):
        validate_config(prepare_config(config))


def test_the_gpu_cluster_installs_a_cpu_torch_on_the_head_and_a_cuda_torch_on_the_workers():
    config = yaml.safe_load((ROOT / "clusters" / "gpu.yaml").read_text())
    assert "setup_commands" not in config  # common setup would give every node the same torch
    head, workers = " ".join(config["head_setup_commands"]), " ".join(config["worker_setup_commands"])
    assert "make install TORCH_BUILD=cpu TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu" in head
    assert "make install TORCH_BUILD=cuda" in workers
    makefile = (ROOT / "Makefile").read_text()
    assert "TORCH_BUILD ?= auto" in makefile and "cuda)" in makefile and "cpu)" in makefile


def test_every_gpu_cluster_node_makes_its_venv_with_the_python_the_project_needs():
    """The images ship Python 3.10: each node installs the version pyproject.toml requires and
    makes the venv with it (the Makefile's PYTHON)."""
    import re

    config = yaml.safe_load((ROOT / "clusters" / "gpu.yaml").read_text())
    needed = re.search(r'requires-python = ">=(\d+)\.(\d+)"', (ROOT / "pyproject.toml").read_text()).groups()
    for node in ("head_setup_commands", "worker_setup_commands"):
        commands = config[node]
        install = next(i for i, c in enumerate(commands) if "make install" in c)
        version = re.search(r"uv python install (\d+)\.(\d+)", " ".join(commands[:install])).groups()
        assert tuple(map(int, version)) >= tuple(map(int, needed)), node
        assert f'PYTHON="$(~/.local/bin/uv python find {".".join(version)})"' in commands[install], node
    assert "PYTHON ?= python3" in (ROOT / "Makefile").read_text() and "$(PYTHON) -m venv" in (ROOT / "Makefile").read_text()


BAD = {
    "unknown_top.yaml": ("name: x\nsearchh: {}\n", "unknown top-level key 'searchh'; did you mean search\\? The other valid"),
    "unknown_key.yaml": ("name: x\nsearch:\n  learning_rate: {uniform: [0.1, 0.2]}\n", "search: unknown key 'learning_rate'"),
    "bad_range.yaml": ("name: x\nsearch:\n  lr: {loguniform: [0.0, 0.1]}\n", "search.lr: loguniform needs \\[low, high\\]"),
    "bad_solver.yaml": ("name: x\nmode: grid\nfixed: {data.fold: 0}\ngrid:\n  solver: [gts, seq2seq]\n", "valid names: gts"),
    "bad_variant.yaml": ("name: x\nmode: grid\nfixed: {data.fold: 0}\ngrid:\n  variant: [base, lstm]\n", "unknown variant 'lstm'"),
    "bad_encoder.yaml": ("name: x\nmode: grid\nfixed: {data.fold: 0}\ngrid:\n  variant: [gcn]\n  psedual.fusion: [sometimes]\n",
                         "unknown fusion 'sometimes'"),
    "bad_mode.yaml": ("name: x\nmode: random\n", "unknown mode 'random'"),
    "bad_yaml.yaml": ("name: [x\n", "not valid YAML"),
    "bad_resources.yaml": ("name: x\nresources: {num_workers: 0}\n", "resources: bad resources"),
    "bad_points.yaml": ("name: x\nsearch:\n  lr: {uniform: [0.1, 0.2]}\npoints:\n  - {seed: 1}\n",
                        "points\\[0\\]: give a value for each search key \\(lr; "),
    "grid_in_optuna.yaml": ("name: x\ngrid:\n  lr: [0.1]\n", "grid: every combination .* no effect in an optuna sweep"),
    "arms_in_optuna.yaml": ("name: x\narms:\n  - {variant: gcn}\n", "arms: the arms a grid crosses .* no effect in an optuna sweep"),
    "bad_arm_key.yaml": ("name: x\nmode: grid\narms:\n  - {varient: gcn}\n", "arms\\[0\\]: unknown key 'varient'; did you mean variant\\?"),
    "arm_clash.yaml": ("name: x\nmode: grid\narms:\n  - {variant: gcn}\ngrid:\n  variant: [base]\n",
                       "arms\\[0\\]: \\['variant'\\] also set in fixed or grid"),
    "bad_arm_value.yaml": ("name: x\nmode: grid\narms:\n  - {variant: gcn, psedual.epsilon_final: 0}\n",
                           "need 0 < epsilon_final <= epsilon0"),
}


def test_arms_cross_the_grid_without_repeating_the_base():
    spec = load_spec(ROOT / "search_spaces" / "table3_fusion_small.yaml")
    configs = [make_config(flat) for flat in spec.trial_configs()]
    assert len(configs) == 18 and sorted({c.seed for c in configs}) == list(range(6))
    arms = sorted({(c.psedual.fusion if c.psedual else "base") for c in configs})
    assert arms == ["base", "scheduled", "teacher_forcing"]
    scheduled = next(c for c in configs if c.psedual and c.psedual.fusion == "scheduled")
    assert (scheduled.psedual.epsilon_schedule, scheduled.psedual.epsilon_final) == ("horizon", 0.5)
    # a trial's config as Tune hands it over: the arm under one key, expanded into the config
    assert make_config({**spec.fixed, "seed": 0, "arm": {"variant": "gcn", "psedual.fusion": "teacher_forcing"}}) \
        == next(c for c in configs if c.psedual and c.psedual.fusion == "teacher_forcing" and c.seed == 0)


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_sweep_files_fail_clearly(tmp_path, name):
    text, message = BAD[name]
    (tmp_path / name).write_text(text)
    with pytest.raises(SpecError, match=message) as err:
        load_spec(tmp_path / name)
    assert name in str(err.value)
    with pytest.raises(SpecError, match="sweep file not found"):
        load_spec(tmp_path / "missing.yaml")


def _check_tables(root: Path, experiment: str, n_trials: int) -> dict[str, pl.DataFrame]:
    out = {}
    for table in tables.TABLES:
        files = sorted((root / table / f"experiment={experiment}").glob("*.parquet"))
        assert len(files) == n_trials
        assert all(pq.read_schema(f) == tables.SCHEMAS[table] for f in files)
        out[table] = pl.scan_parquet(root / table / "**/*.parquet", hive_partitioning=True).filter(
            pl.col("experiment") == experiment).collect()
    return out


def test_smoke_sweep_writes_the_three_tables(local_ray, tmp_path, data_root):
    from psedual.tune.sweep import run_sweep

    # MAWPS's five folds, copied so that the data can change after the sweep (below)
    data = tmp_path / "data"
    shutil.copytree(data_root / "mawps" / "five_fold", data / "mawps" / "five_fold")
    smoke = load_spec(ROOT / "search_spaces" / "smoke.yaml")
    spec = replace(smoke, fixed={**smoke.fixed, "data.data_root": str(data)})
    outcomes = run_sweep(spec, str(tmp_path), verbose=0)
    from psedual.tune import evaluate

    tested = {}  # the trials' tests, kept for the second collect below
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(evaluate, "evaluate_trials", lambda *a: tested.update(evaluate_trials(*a)) or tested)
        runs = collect(outcomes, str(tmp_path), spec.name)
    assert sorted(runs["variant"]) == ["base", "gcn"] and (runs["status"] == "completed").all()
    got = _check_tables(tmp_path, "smoke", 2)
    assert got["runs"].height == 2 and got["epochs"].height == 2 and got["predictions"].height == 2 * 397
    gcn = got["runs"].filter(pl.col("variant") == "gcn").row(0, named=True)
    assert gcn["test_infill_acc"] is not None and gcn["psedual.expression_encoder"] == "gcn"
    assert gcn["n_test"] == 397 and gcn["epochs_done"] == 1 and gcn["code_version"]
    # where each trial trained, read in the trial's own process (issue 42): the CPU, never `auto`
    import platform

    import ray
    import torch

    assert got["runs"].select(pl.col("^env\\..*$")).unique().rows(named=True) == [{
        "env.python": platform.python_version(), "env.torch": torch.__version__,
        "env.cuda": torch.version.cuda or "none", "env.ray": ray.__version__, "env.device": "cpu", "env.gpu": None,
        "env.node": platform.node(), "env.plm_commit": None, "env.precision": "fp32"}]
    per_trial = got["predictions"].group_by("trial").agg(pl.col("value_correct").mean())
    joined = got["runs"].join(per_trial, on="trial")
    assert (joined["test_value_acc"] - joined["value_correct"]).abs().max() < 1e-12
    # collecting again (as after --resume) replaces each trial's files: no duplicate rows (the same
    # tests, deterministic, not decoded a second time: 2 x 397 problems)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(evaluate, "evaluate_trials", lambda *a: tested)
        collect(outcomes, str(tmp_path), spec.name)
    assert _check_tables(tmp_path, "smoke", 2)["predictions"].height == 2 * 397
    assert not list(tmp_path.rglob("*.tmp"))
    with pytest.raises(ValueError, match="holds a sweep already"):
        run_sweep(spec, str(tmp_path), verbose=0)
    # the analysis reads these very tables: one claim, GCN against base on fold 0's 397 problems
    from analysis.cli import main as analyze

    assert analyze(["analyze", "table1", "--root", str(tmp_path), "--experiment+", "smoke", "--resamples", "200"]) == 0
    claim = pl.read_parquet(tmp_path / "claims" / "table1_smoke.parquet").row(0, named=True)
    base = got["runs"].filter(pl.col("variant") == "base")["test_value_acc"][0]
    assert (claim["treatment_arm"], claim["n_examples"], claim["n_seeds"]) == ("gcn", 397, 1)
    assert claim["base"] == pytest.approx(100 * base) and claim["test"] == "mcnemar_exact"
    # both arms recorded the same data (the smoke sweep's 96-problem subset), so nothing is unchecked
    assert got["runs"]["data_train_hash"].n_unique() == 1 and got["runs"]["data_test_hash"].null_count() == 0
    assert not any(f.startswith("data identity not recorded") for f in claim["flags"])
    # the test after a sweep checks the data as `psedual test` does (issue 50): a trial's checkpoint
    # holds its data.json, so a test on data other than the trial trained on is refused, never
    # recorded as unchanged
    fold = data / "mawps" / "five_fold" / "fold_0.json"  # fold 0's problems are the test split
    fold.write_text(json.dumps(json.loads(fold.read_text())[:-1]))
    with pytest.raises(ValueError, match="the test data of mawps .* differ from what this run used"):
        collect(outcomes, str(tmp_path), spec.name)
    # and it holds every file a run folder keeps for its test and its resumption
    from psedual.results.folder import CHECKPOINT, ENCODER

    for outcome in outcomes:  # GTS reads no pretrained encoder: no encoder.json
        with outcome.checkpoint.as_directory() as folder:
            assert set(CHECKPOINT) - {ENCODER} == {p.name for p in Path(folder).iterdir()}, outcome.trial


def test_an_optuna_sweep_runs_its_points_and_draws_no_psedual_knob_for_base(local_ray, tmp_path):
    # the searcher (define-by-run space, points, ASHA) through Tune, which pickles it with the
    # experiment state: smoke.yaml's tiny trial, searched instead of gridded
    from psedual.tune.sweep import run_sweep

    smoke = load_spec(ROOT / "search_spaces" / "smoke.yaml")
    spec = replace(smoke, name="optuna_smoke", mode="optuna", grid={}, num_samples=3, seed=0,
                   search={"variant": {"choice": ["base", "gcn"]}, "psedual.fusion": {"choice": ["scheduled",
                                                                                           "predicted"]}},
                   points=[{"variant": "base"}, {"variant": "gcn", "psedual.fusion": "predicted"}])
    outcomes = run_sweep(spec, str(tmp_path), verbose=0)
    assert [o.status for o in outcomes] == ["completed"] * 3
    flats = sorted((o.flat for o in outcomes), key=lambda f: f["variant"])
    assert {"variant": "base"}.items() <= flats[0].items() and (tmp_path / "optuna_smoke" / "tuner.pkl").exists()
    assert all(("psedual.fusion" in f) == (f["variant"] != "base") for f in flats), flats
    assert any(f["variant"] == "gcn" and f["psedual.fusion"] == "predicted" for f in flats)  # the second point


def test_an_optuna_sweep_resumed_names_each_failed_trial_it_does_not_rerun(local_ray, tmp_path, capsys):
    # an injected failure: device cuda in a trial that holds no GPU (a GPU machine's too); an Optuna
    # study cannot reopen a trial it was told FAIL, so --resume reruns it not, and says so per trial
    import optuna

    from psedual.tune.lost import NOT_RERUN
    from psedual.tune.study import journal
    from psedual.tune.sweep import run_sweep

    smoke = load_spec(ROOT / "search_spaces" / "smoke.yaml")
    spec = replace(smoke, name="optuna_failed", mode="optuna", grid={}, num_samples=2, seed=0,
                   search={"variant": {"choice": ["base"]}, "device": {"choice": ["cpu", "cuda"]}},
                   points=[{"variant": "base", "device": "cpu"}, {"variant": "base", "device": "cuda"}],
                   resources=replace(smoke.resources, max_failures=0))
    first = run_sweep(spec, str(tmp_path), verbose=0)
    assert sorted(o.status for o in first) == ["completed", "error"]
    failed = next(o for o in first if o.status == "error")
    assert failed.error.startswith("ValueError: device cuda: this trial holds no GPU")
    capsys.readouterr()
    again = run_sweep(spec, str(tmp_path), resume=True, verbose=0)
    printed = capsys.readouterr().out
    assert (f"trial {failed.trial} (variant base, device cuda) failed and is not rerun: {failed.error}; "
            f"{NOT_RERUN}\n") in printed
    assert printed.count("is not rerun") == 1
    assert sorted((o.trial, o.status, o.error) for o in again) == sorted((o.trial, o.status, o.error) for o in first)
    study = optuna.load_study(study_name="optuna_failed", storage=journal(str(tmp_path), "optuna_failed"))
    assert sorted(t.state.name for t in study.trials) == ["COMPLETE", "FAIL"]


def ray_version() -> str:
    from importlib.metadata import version

    return version("ray")


def test_trial_through_ray_train_workers(local_ray, tmp_path):
    from psedual.train.resources import Resources
    from psedual.tune.sweep import run_sweep

    spec = load_spec(ROOT / "search_spaces" / "smoke.yaml")
    # one arm (the grid's arms reach a trial under one key, expanded in the worker and the tables)
    spec = replace(spec, name="workers", grid={}, arms=[{"variant": "gcn", "psedual.fusion": "predicted"}],
                   resources=Resources(in_process=False))
    runs = collect(run_sweep(spec, str(tmp_path), verbose=0), str(tmp_path), spec.name)
    assert runs.height == 1 and runs["status"][0] == "completed" and runs["test_infill_acc"][0] is not None
    assert (runs["variant"][0], runs["psedual.fusion"][0], runs["final_epsilon"][0]) == ("gcn", "predicted", 0.0)
    assert _check_tables(tmp_path, "workers", 1)["predictions"].height == 397
    # rank 0 of the Train worker group says where it trained (its env.json travels in the checkpoint)
    assert (runs["env.device"][0], runs["env.gpu"][0], runs["env.ray"][0]) == ("cpu", None, ray_version())


def test_a_trial_that_cannot_be_placed_is_refused(local_ray, tmp_path):
    from psedual.train.resources import Resources
    from psedual.tune.sweep import run_sweep

    spec = replace(load_spec(ROOT / "search_spaces" / "smoke.yaml"), resources=Resources(num_workers=3, in_process=False))
    with pytest.raises(ValueError, match="needs 3 CPUs for its workers; this Ray has 2"):
        run_sweep(spec, str(tmp_path), verbose=0)


def test_the_main_job_runs_twice_and_refuses_a_taken_name_in_one_line(local_ray, tmp_path, capsys):
    from psedual.cli import main

    job = ["tune", "--space", str(ROOT / "search_spaces" / "smoke.yaml"), "--storage", str(tmp_path)]
    assert main(job) == 0 and main(job) == 0  # `make demo` twice: a fresh experiment each time
    import ray

    assert ray.is_initialized()  # the job stops only a Ray it started itself, never its caller's
    out = capsys.readouterr().out
    assert "experiment smoke:" in out and "experiment smoke-2:" in out
    # each run ends with the significance check of its own arms, then the next commands
    verdict = out.split("experiment smoke-2:")[1]
    assert (f"psedual analyze compare --root {tmp_path} --experiment+ smoke-2 --arm variant --base base "
            f"--treatment+ gcn") in verdict
    row = next(line for line in verdict.splitlines() if "PseDual-GCN vs base" in line)
    assert "| 397 | 1 |" in row and "mcnemar_exact" in row  # one seed: examples paired, 397 of them
    assert (tmp_path / "claims" / "compare_smoke-2.parquet").exists()
    assert verdict.index("PseDual-GCN vs base") < verdict.index("Next:")
    query = verdict.splitlines()[-1].strip()  # the Polars query, run as printed
    from psedual.job import programs

    assert query.startswith(f"{programs()['python']} -c ")  # this environment's python: never a bare `python`
    done = subprocess.run(shlex.split(query), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "smoke-2" in done.stdout and "gcn" in done.stdout, done.stderr
    assert _check_tables(tmp_path, "smoke-2", 2)["predictions"].height == 2 * 397
    assert main([*job, "--name", "smoke"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("psedual: error:") and "holds experiment 'smoke' already: --resume smoke" in err
    assert len(err.splitlines()) == 1
    assert main([*job, "--resume", "nothing-here"]) == 2
    assert "no experiment 'nothing-here'" in capsys.readouterr().err


def test_asha_runs_to_the_most_epochs_a_trial_can_have():
    from psedual.tune.space import SweepSpec
    from psedual.tune.sweep import max_epochs

    fixed = {"solver": "gts", "data.dataset": "mawps", "data.fold": 0}
    assert max_epochs(SweepSpec(name="a", mode="optuna", fixed={**fixed, "epochs": 7},
                                search={"lr": {"loguniform": [1e-3, 1e-2]}})) == 7
    assert max_epochs(SweepSpec(name="b", mode="optuna", fixed=fixed, search={"epochs": {"choice": [3, 12, 6]}})) == 12
    assert max_epochs(SweepSpec(name="c", mode="optuna", fixed=fixed, search={"epochs": {"int": [2, 9]}})) == 9
    assert max_epochs(SweepSpec(name="d", mode="optuna", fixed=fixed, search={"lr": {"choice": [1e-3]}})) == 80


def test_optuna_draws_psedual_knobs_only_for_pseDual_trials_and_one_key_names_the_arm():
    import optuna

    from psedual.tune.sweep import define_by_run

    spec = load_spec(ROOT / "search_spaces" / "optuna.yaml")
    pickle.dumps(define_by_run(spec))  # Tune pickles the searcher with the experiment state
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    drawn = []
    for _ in range(24):
        trial = study.ask()
        define_by_run(spec)(trial)
        drawn.append(trial.params)
        study.tell(trial, 0.0)
    by_variant = {v: [set(p) for p in drawn if p["variant"] == v] for v in ("base", "gru", "gcn")}
    assert all(by_variant.values()), by_variant  # every arm was drawn
    assert all(keys == {"variant", "lr"} for keys in by_variant["base"])
    assert all(keys == {"variant", "lr", "psedual.fusion"} for v in ("gru", "gcn") for keys in by_variant[v])
    with pytest.raises(ValueError, match="psedual.expression_encoder is set through `variant`"):
        make_config({"variant": "gru", "psedual.expression_encoder": "gcn"})


def test_the_main_job_is_a_paired_ablation_at_equal_budgets():
    from psedual.reexamine.config import VARIANTS

    spec = load_spec(ROOT / "search_spaces" / "default.yaml")
    assert spec.mode == "grid"  # no sampler and no early stop: every trial gets every epoch
    flats = spec.trial_configs()
    assert {f["variant"] for f in flats} == set(VARIANTS) and len({f["seed"] for f in flats}) >= 3
    assert len(flats) == len(VARIANTS) * len({f["seed"] for f in flats})  # every arm on every seed
    budgets = {tuple(sorted((k, v) for k, v in f.items() if k not in ("variant", "seed"))) for f in flats}
    assert len(budgets) == 1  # the arms differ in nothing but the arm
    assert spec.resources.uses_train_workers  # each trial drives a Ray Train worker group, as on a cluster


def test_asha_ranks_each_arm_against_itself():
    from ray.tune.schedulers import ASHAScheduler, TrialScheduler

    from psedual.tune.asha import ArmASHA

    def run(scheduler) -> list[str]:
        # two base trials reach the first rung well ahead of two PseDual trials
        trials = [SimpleNamespace(trial_id=f"t{i}", config={"variant": v})
                  for i, v in enumerate(["base", "base", "gcn", "gcn"])]
        for t in trials:
            scheduler.on_trial_add(None, t)
        return [scheduler.on_trial_result(None, t, {"epoch": 1, "valid_value_acc": acc})
                for t, acc in zip(trials, [0.8, 0.7, 0.3, 0.2])]

    asha = dict(time_attr="epoch", metric="valid_value_acc", mode="max", max_t=4, grace_period=1, reduction_factor=2)
    stop, go = TrialScheduler.STOP, TrialScheduler.CONTINUE
    assert run(ASHAScheduler(**asha)) == [go, stop, stop, stop]  # shared rungs stop every PseDual trial
    assert run(ArmASHA("variant", **asha)) == [go, stop, go, stop]  # per arm: each arm keeps its better one


def test_a_local_ray_for_train_workers_serves_the_state_api(monkeypatch):
    """Ray Train's placement-group cleaner reads the State API, which the dashboard serves: a local
    Ray started for Train-worker trials has it (else a stopped trial's group stays reserved)."""
    import ray

    from psedual.tune import sweep

    calls = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: calls.append(kw))
    sweep.ensure_ray(None, train_workers=True)
    sweep.ensure_ray(None, train_workers=False)
    sweep.ensure_ray("auto", train_workers=True)
    assert [c.get("include_dashboard") for c in calls] == [True, False, None]
    assert calls[0]["address"] == "local" and calls[0]["dashboard_host"] == "127.0.0.1"
    assert "dashboard_host" not in calls[2]  # a running cluster's settings are its own


def test_a_local_rays_worker_start_up_is_sized_to_the_trials(monkeypatch):
    """The raylet's "8 PYTHON worker processes have been started" warning reached `make demo`'s terminal
    (two Ray Train trials on 2 cores; raw colour codes in a log): a local Ray's start-up concurrency,
    which the warning counts in, is the trials' worker processes; a cluster's is its own."""
    import os

    import ray

    from psedual.train.resources import Resources
    from psedual.tune import sweep

    calls = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: calls.append(kw))
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setenv("RAY_COLOR_PREFIX", "")  # recorded, so that the one ensure_ray sets is undone after
    monkeypatch.delenv("RAY_COLOR_PREFIX")
    demo = Resources(max_concurrent=2, in_process=False)  # default.yaml's: a Train controller and worker per trial
    assert sweep.worker_processes(demo) == 6 and sweep.worker_processes(Resources(max_concurrent=4)) == 4
    assert sweep.worker_processes(Resources(max_concurrent=2, num_workers=2)) == 8
    sweep.ensure_ray(None, train_workers=True, workers=sweep.worker_processes(demo))
    sweep.ensure_ray(None, workers=1)
    sweep.ensure_ray("auto", workers=6)
    assert [c.get("_system_config") for c in calls] == [{"worker_maximum_startup_concurrency": 6},
                                                        {"worker_maximum_startup_concurrency": 2}, None]
    assert os.environ["RAY_COLOR_PREFIX"] == "0"  # pytest's stdout is no terminal: no colour codes
