"""A sweep's terminal view without --verbose: one line per trial start, epoch and end."""

from __future__ import annotations

import io
from types import SimpleNamespace

from psedual.job import TuneJob
from psedual.tune.progress import RAY_LOGS, Progress, duration, plural, shown, varied
from pathlib import Path

from psedual.tune.space import ARM, SweepSpec, load_spec

ROOT = Path(__file__).resolve().parents[1]


def test_progress_names_each_trial_by_what_varies_and_prints_its_epochs():
    spec = SweepSpec(name="s", mode="grid", fixed={"solver": "gts", "epochs": 5},
                     arms=[{"variant": "base"}, {"variant": "gcn", "psedual.fusion": "teacher_forcing"}],
                     grid={"seed": [0, 1]})
    assert varied(spec) == ["seed", "variant", "psedual.fusion"]
    out = io.StringIO()
    progress = Progress(spec, 5, out)
    trial = SimpleNamespace(trial_id="abc_00001", status="RUNNING",
                            config={"solver": "gts", "seed": 1,
                                    ARM: {"variant": "gcn", "psedual.fusion": "teacher_forcing"}})
    progress.on_trial_start(0, [trial], trial)
    progress.on_trial_result(0, [trial], trial, {"epoch": 2, "train_loss": 1.23456, "infill_loss": 0.5,
                                                 "valid_value_acc": 0.4567})
    progress.on_trial_result(0, [trial], trial, {"done": True})  # Tune's last result has no epoch: no line
    progress.on_trial_complete(0, [trial], trial)  # 2 of its 5 epochs: stopped early, not done
    name = "trial abc_00001 (seed 1, variant gcn, psedual.fusion teacher_forcing)"
    # (Tune calls the end while the trial still reads RUNNING)
    assert out.getvalue().splitlines() == [
        f"{name} started",
        f"{name} epoch 2/5: loss 1.2346, infilling loss 0.5000, valid value 45.7%",
        f"{name} stopped early by the scheduler at epoch 2/5",
        "sweep: 1 of 4 trials ended (1 stopped), 0 running, 3 pending"]  # no time before the sweep's setup


def test_a_sweep_in_rounds_counts_its_most_trials_not_one_round(monkeypatch):
    """Seeds in rounds until decided: the searcher suggests each round as the last is judged, so the
    sweep has no fixed count; the line says the most it may run (arms x seeds still allowed), never
    `3 of 2 trials`, and its time left is a most."""
    spec = load_spec(ROOT / "search_spaces" / "control_rounds.yaml")  # 2 arms, 16 seeds taken, at most 40
    out, clock = io.StringIO(), [0.0]
    monkeypatch.setattr("psedual.tune.progress.time.monotonic", lambda: clock[0])
    progress = Progress(spec, 30, out, bar=False)
    progress.setup(total_num_samples=10 ** 10)  # a searcher's open count: not the sweep's
    trials = [SimpleNamespace(trial_id=t, status="RUNNING", config={"epochs": 30, ARM: {"variant": "base"}})
              for t in "abc"]
    for t in trials:
        progress.on_trial_result(0, trials, t, {"epoch": 30, "train_loss": 1.0, "valid_value_acc": 0.5})
    clock[0] = 90.0
    for t in trials:
        progress.on_trial_complete(0, trials, t)
    assert out.getvalue().splitlines()[-1] == (
        "sweep: 3 of at most 48 trials ended (3 done), 0 running, up to 45 more in rounds until decided; "
        "1 min 30 s so far, at most about 22 min 30 s left")


def test_progress_says_where_the_sweep_stands_and_what_is_left(monkeypatch):
    spec = SweepSpec(name="s", mode="optuna", fixed={"epochs": 4}, num_samples=3,
                     search={"lr": {"loguniform": [0.0001, 0.01]}})
    out, clock = io.StringIO(), [100.0]
    monkeypatch.setattr("psedual.tune.progress.time.monotonic", lambda: clock[0])
    progress = Progress(spec, 4, out, bar=False)
    progress.setup(total_num_samples=3)
    a = SimpleNamespace(trial_id="a", status="RUNNING", config={"lr": 0.0024035712509174524, "epochs": 4})
    b = SimpleNamespace(trial_id="b", status="RUNNING", config={"lr": 0.001, "epochs": 4})
    for epoch in (1, 2, 3, 4):
        progress.on_trial_result(0, [a, b], a, {"epoch": epoch, "train_loss": 1.0, "valid_value_acc": 0.5})
    progress.on_trial_result(0, [a, b], b, {"epoch": 1, "train_loss": 1.0, "valid_value_acc": 0.5})
    clock[0] = 150.0  # 5 epochs in 50 s: 10 s an epoch
    progress.on_trial_complete(0, [a, b], a)  # still RUNNING as Tune calls it
    b.status = "ERROR"
    progress.on_trial_error(0, [a, b], b)
    lines = out.getvalue().splitlines()
    # learning rates to 3 digits; left: b's 3 epochs and the pending trial's 4 at 10 s each
    assert lines[-4:] == [
        "trial a (lr 0.0024) done",
        "sweep: 1 of 3 trials ended (1 done), 1 running, 1 pending; 50 s so far, about 1 min 10 s left",
        f"trial b (lr 0.001) FAILED (its log: {RAY_LOGS})",
        "sweep: 2 of 3 trials ended (1 done, 1 failed), 0 running, 1 pending; 50 s so far, about 40 s left"]
    assert [duration(s) for s in (5, 65, 7385)] == ["5 s", "1 min 05 s", "2 h 03 min"]
    assert shown(0.0024035712509174524) == "0.0024" and shown(3) == "3" and plural(1, "trial") == "1 trial"


def test_verbose_is_an_option_of_the_tune_job():
    assert TuneJob().verbose is False and TuneJob(verbose=True).verbose is True


def test_trials_are_named_by_arm_seed_and_id_and_ranked_by_the_kept_score(tmp_path):
    from psedual.tune.sweep import OBJECTIVE, _tune_config, trial_name
    from psedual.tune.space import load_spec

    trial = SimpleNamespace(trial_id="ab12c_00003", config={"seed": 2, ARM: {"variant": "gcn"}, "lr": 0.001})
    assert trial_name(trial) == "gcn-s2-ab12c_00003"
    assert trial_name(SimpleNamespace(trial_id="x", config={"lr": 0.1})) == "base-s0-x"
    # TPE, ASHA and best_result rank by the best validation score so far: the kept checkpoint's
    assert OBJECTIVE == "best_valid_value_acc"
    config = _tune_config(load_spec("search_spaces/optuna.yaml"), str(tmp_path), "ranked")
    assert config.metric == OBJECTIVE and config.search_alg.metric == OBJECTIVE


def test_the_driver_log_file_is_attached_once_per_process(tmp_path):
    import logging

    from psedual.tune.progress import quiet_tune_logs

    before = list(logging.getLogger("ray.tune").handlers)
    try:
        quiet_tune_logs(tmp_path / "driver.log")
        quiet_tune_logs(tmp_path / "driver.log")  # a paper job's second part
        added = [h for h in logging.getLogger("ray.tune").handlers if h not in before]
        assert len(added) == 1 and logging.getLogger("ray.train").handlers[-1] is added[0]
        logging.getLogger("ray.tune.x").warning("snapshot slow")
        assert (tmp_path / "driver.log").read_text().count("snapshot slow") == 1
    finally:
        for name in ("ray.tune", "ray.train"):
            logger = logging.getLogger(name)
            for h in [h for h in logger.handlers if h not in before]:
                logger.removeHandler(h)
                h.close()
            logger.propagate = True


def test_on_a_terminal_a_bar_counts_the_trials_under_the_lines_and_a_resumed_sweep_draws_its_own():
    import pickle

    spec = SweepSpec(name="s", mode="grid", fixed={"epochs": 1}, grid={"seed": [0, 1]})
    out = io.StringIO()
    progress = Progress(spec, 1, out, bar=True)
    progress.setup(total_num_samples=2)
    trial = SimpleNamespace(trial_id="t0", status="RUNNING", config={"seed": 0, "epochs": 1})
    progress.on_trial_result(0, [trial], trial, {"epoch": 1, "train_loss": 1.0, "valid_value_acc": 0.5})
    progress.on_trial_complete(0, [trial], trial)
    text = out.getvalue()
    assert "trial t0 (seed 0) done\n" in text and "1/2" in text and "sweep" in text  # the lines, then tqdm's bar
    restored = pickle.loads(pickle.dumps(progress))
    assert restored._tqdm is None and restored.began is None and restored.ends == {"t0": "done"}
    assert Progress(spec, 1, io.StringIO()).bar is None  # decided at the sweep's start: a terminal or not
