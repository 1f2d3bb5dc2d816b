"""The cost plan prices a PseDual trial by the steps it really runs (issue 59): its steps at ε = 1
(no expression sampled) at the row's `step_s`, those at ε < 1 (the rollout) at `sample_step_s`,
from the trial's own schedule; calibration times both through the trainer's own epochs; a row
measured before the sampled figure is priced only where a bench measured it, and said so."""

from __future__ import annotations

import pytest

from psedual.reexamine import schedules
from psedual.reexamine.schedules import Clock
from psedual.train.resources import Resources
from psedual.tune.cost import PART, Figures, Sizes, plan_part, read_costs, shape, trial_seconds, write_costs
from psedual.tune.plan_text import render
from psedual.tune.sampling import H100, MEASURED, sampled_steps
from psedual.tune.space import make_config

CPU = "test machine x2"
FLAT = {"solver": "gts", "variant": "gcn", "data.fold": 0, "epochs": 10, "batch_size": 64, "seed": 0}
SIZES = Sizes(640, 100, 200)  # 10 steps an epoch at batch 64


def _walked(config, per_epoch: int) -> int:
    """The sampling steps counted one by one (what `sampled_steps` finds by bisection)."""
    total = per_epoch * config.epochs
    return sum(schedules.epsilon(config.psedual, Clock(t, per_epoch, config.epochs)) < 1 for t in range(total))


@pytest.mark.parametrize("extra, expected", [
    ({"variant": "base"}, 0),
    ({"psedual.fusion": "teacher_forcing"}, 0),
    ({"psedual.control": "no_expression"}, 0),
    ({"psedual.epsilon_final": 1.0}, 0),  # horizon from 1 to 1: ε stays 1 all trial
    ({"psedual.fusion": "predicted"}, 100),
    # horizon, the first fifth held: steps 0-20 at ε = 1 (step 20 is the decay's first, ε0 exactly)
    ({}, 79),
    ({"psedual.epsilon_hold": 0.0}, 99),
    # the epoch schedule at 10 epochs holds 20 * 10 // 100 = 2 epochs: it samples from epoch 2
    ({"psedual.epsilon_schedule": "epoch"}, 80),
    ({"psedual.epsilon_schedule": "step"}, 79),
    ({"psedual.epsilon_schedule": "step", "psedual.epsilon_decay": 1.0}, 0),
])
def test_the_sampling_steps_are_the_schedules_own(extra, expected):
    config = make_config({**FLAT, **extra})
    assert sampled_steps(config, 10) == expected
    if config.psedual is not None and schedules.samples(config.psedual):
        assert _walked(config, 10) == expected


def _costs(fig: Figures, flat: dict = FLAT, where: str = CPU, concurrency: int = 2) -> dict:
    return {(where, concurrency, shape(make_config(flat))): fig, (where, concurrency, PART): Figures(6, 0, 0, "abc")}


def test_a_trial_is_priced_by_the_steps_it_samples():
    """One row (start 3 s, 0.5 s a step at ε = 1, 2 s a sampled one, 0.01 s a problem) prices two trials
    of its shape apart: 10 epochs of 10 steps, 100 validation and 200 test problems."""
    fig = Figures(3, 0.5, 0.01, "abc", sample_step_s=2.0)
    resources = Resources(max_concurrent=2)
    # ε stays 1 all trial: teacher-forced steps only, 3 + 100 × 0.5 + 10 × 100 × 0.01 + 200 × 0.01
    flat = {**FLAT, "psedual.epsilon_final": 1.0}
    held = plan_part("table3", [make_config(flat)], resources, _costs(fig), CPU, size_of=lambda c: SIZES)
    assert held.seconds == pytest.approx(3 + 50 + 10 + 2) and (held.sampled, held.priced_steps) == (0, 100)
    # samples from epoch 2 (the epoch schedule): 20 steps at 0.5 s, 80 at 2 s
    flat = {**FLAT, "psedual.epsilon_schedule": "epoch"}
    mixed = plan_part("table3", [make_config(flat)], resources, _costs(fig), CPU, size_of=lambda c: SIZES)
    assert mixed.seconds == pytest.approx(3 + 20 * 0.5 + 80 * 2.0 + 10 + 2) and mixed.sampled == 80
    assert mixed.sampling_s == pytest.approx(80 * 1.5)
    text = render([held, mixed], CPU, 0.05, 1.0, [])
    assert "table3: 80 of its priced trials' 100 steps sample an expression (ε < 1 by each trial's schedule)" in text
    assert f"the sampling adds {120 / 3600:.2f} CPU-h of its {185 / 3600:.2f}" in text
    # a base trial's row has no sampled figure and needs none
    base = {**FLAT, "variant": "base"}
    plain = plan_part("table1", [make_config(base)], resources, _costs(Figures(3, 0.5, 0.01, "abc"), base), CPU,
                      size_of=lambda c: SIZES)
    assert plain.seconds == pytest.approx(65) and not plain.uncalibrated
    with pytest.raises(ValueError, match="80 sampling steps and no sampled-step figure"):
        trial_seconds(Figures(3, 0.5, 0.01), 10, 10, SIZES, sampled=80)


def test_a_row_measured_before_the_sampled_figure_is_not_priced_where_a_trial_samples():
    old = Figures(3, 0.5, 0.01, "0be082e")
    resources = Resources(max_concurrent=2)
    plan = plan_part("table1", [make_config(FLAT)], resources, _costs(old), CPU, size_of=lambda c: SIZES)
    key = shape(make_config(FLAT))
    assert plan.uncalibrated == (key,) and plan.old_rows == {key: "commit 0be082e, concurrency 2"}
    assert plan.seconds == 0 and plan.priced == 0
    text = render([plan], CPU, 0.05, 1.0, [], profile="small")
    assert "table1: not priced: 1 shapes whose trials sample an expression have a row measured before the " \
           "sampled-step figure" in text
    assert f"e.g. the row of {CPU}, commit 0be082e, concurrency 2: {key}; recalibrate: psedual tune --space " \
           "search_spaces/paper.yaml --profile small --calibrate (on this machine)" in text
    assert "not calibrated" in text.splitlines()[2]
    # the same old row prices a trial that never samples: its one figure is all it needs
    tf = {**FLAT, "psedual.fusion": "teacher_forcing"}
    fine = plan_part("table3", [make_config(tf)], resources, _costs(old, tf), CPU, size_of=lambda c: SIZES)
    assert fine.seconds == pytest.approx(65) and not fine.old_rows


def test_the_h100_sessions_old_rows_price_their_sampled_steps_at_the_benchs_figure():
    """The H100 rows (commit 3d2b7a9) timed 10-step epochs of 80-epoch trials, held at ε = 1: their
    sampled steps are priced at the bench's PseDual-GCN step (GTS: 0.417 s), GRU's at GCN's, and
    the plan says so; another batch size, session or machine is not priced."""
    gpu = Resources(use_gpu=True, in_process=False, max_concurrent=1)
    old = Figures(3, 0.18117, 0.01, "3d2b7a9")
    for variant in ("gcn", "gru"):
        flat = {**FLAT, "variant": variant}
        plan = plan_part("table1", [make_config(flat)], gpu, _costs(old, flat, H100, 1), H100, size_of=lambda c: SIZES)
        assert plan.seconds == pytest.approx(3 + 21 * 0.18117 + 79 * MEASURED["gts"].step_s + 10 + 2)
        assert plan.bench_sampled == {shape(make_config(flat)): "gts"} and not plan.uncalibrated
    text = render([plan], "laptop", 0.05, 12.29, [], profile="full")
    assert "table1: extrapolated: 1 shapes' rows were measured before the sampled-step figure (they timed " \
           "teacher-forced steps): their sampled steps priced at bench/train_speed.py on the H100" in text
    assert "PseDual-GRU's at PseDual-GCN's" in text and "--profile full --calibrate --address auto" in text
    for flat, fig, where in (({**FLAT, "batch_size": 32}, old, H100), (FLAT, Figures(3, 0.2, 0.01, "abc1234"), H100),
                             (FLAT, old, "NVIDIA A10G x1")):
        plan = plan_part("table1", [make_config(flat)], gpu, _costs(fig, flat, where, 1), where,
                         size_of=lambda c: SIZES)
        assert plan.uncalibrated and plan.old_rows and not plan.bench_sampled


def test_the_committed_h100_rows_timed_teacher_forced_epochs():
    """What `sampling.MEASURED` stands on: the full profile's first GTS-GCN trial on Math23K, timed as
    the session did (10-step epochs, its 80 epochs), sampled nothing in its second epoch."""
    from psedual.tune.paper import load_paper, runnable

    spec, _ = runnable(load_paper("search_spaces/paper.yaml").sweep("table3", "full"))
    config = next(c for c in map(make_config, spec.trial_configs()) if c.variant == "gcn"
                  and c.psedual.fusion == "scheduled" and c.solver == "gts")
    assert config.epochs >= 10
    assert all(schedules.epsilon(config.psedual, Clock(10 + i, 10, config.epochs)) == 1.0 for i in range(10))
    assert read_costs()[(H100, 1, shape(config))].sample_step_s is None  # an old row: priced from the bench


def test_the_sampled_figure_round_trips_and_a_bad_one_names_its_row(tmp_path):
    path = tmp_path / "costs.tsv"
    rows = [{"machine": "m", "commit": "abc", "concurrency": 1, "shape": "s", "start_s": 1, "step_s": 0.5,
             "sample_step_s": 2.0, "eval_s": 0.01},
            {"machine": "m", "commit": "abc", "concurrency": 1, "shape": "base", "start_s": 1, "step_s": 0.5,
             "sample_step_s": None, "eval_s": 0.01}]
    write_costs(rows, path)
    stored = read_costs(path)
    assert stored[("m", 1, "s")] == Figures(1, 0.5, 0.01, sample_step_s=2.0)
    assert stored[("m", 1, "base")].sample_step_s is None
    # an older file has no such column: its rows read as measured before the figure
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    old = tmp_path / "old.tsv"
    old.write_text("\n".join("\t".join(c for i, c in enumerate(line.split("\t")) if i != 6) for line in lines) + "\n")
    assert "sample_step_s" not in old.read_text() and read_costs(old)[("m", 1, "s")].sample_step_s is None
    for bad, message in (("fast", "could not convert string to float: 'fast'"), ("-1", "negative seconds")):
        broken = tmp_path / f"bad{bad}.tsv"
        broken.write_text(path.read_text().replace("\t2.0\t", f"\t{bad}\t"))
        # the file's own line number (an editor's): the command comment, the header, base's row, then s's
        assert broken.read_text().splitlines()[3].split("\t")[6] == bad
        with pytest.raises(ValueError, match=f"{broken}: line 4: .*{message}"):
            read_costs(broken)


def test_calibration_times_both_steps_through_the_trainers_own_epochs(monkeypatch):
    """A fake clock: a trainer epoch costs 0.5 s a step at ε = 1 and 2 s a step that samples, read from the
    reexaminer's own ε at the epoch's clock; measure's rows then say exactly those (3 steps an epoch)."""
    import torch

    import psedual.train.trainer as trainer
    from psedual.tune import calibrate

    now = [0.0]
    seen = []

    def fake_epoch(run, epoch, show_bar):
        clock = Clock(epoch * run.per_epoch, run.per_epoch, run.config.epochs)
        eps = 1.0 if run.reexaminer is None else schedules.epsilon(run.reexaminer.config, clock)
        seen.append(eps)
        now[0] += run.per_epoch * (0.5 if eps == 1.0 else 2.0)
        return {}

    monkeypatch.setattr(trainer, "_train_epoch", fake_epoch)
    monkeypatch.setattr(trainer, "_validate", lambda run: (0.0, 0.0))
    monkeypatch.setattr(calibrate.time, "perf_counter", lambda: now[0])
    small = {"solver": "gts", "data.dataset": "mawps", "data.fold": 0, "data.train_size": 96, "epochs": 1,
             "batch_size": 32, "model.embedding_size": 16, "model.hidden_size": 32, "model.layers": 1, "threads": 1}
    before = torch.get_num_threads()
    mine = 3 if before != 3 else 2  # not the shape's 1: measure times at 1 and gives this process's back
    torch.set_num_threads(mine)
    try:
        gcn = calibrate.measure({**small, "variant": "gcn"})
        assert torch.get_num_threads() == mine
    finally:
        torch.set_num_threads(before)
    assert seen == [calibrate.SAMPLED_EPSILON, 1.0, calibrate.SAMPLED_EPSILON]
    assert (gcn["step_s"], gcn["sample_step_s"]) == (0.5, 2.0)
    seen.clear()
    base = calibrate.measure({**small, "variant": "base"})
    assert seen == [1.0, 1.0] and (base["step_s"], base["sample_step_s"]) == (0.5, None)
    seen.clear()
    tf = calibrate.measure({**small, "variant": "gcn", "psedual.fusion": "teacher_forcing"})
    assert seen == [1.0, 1.0] and tf["sample_step_s"] is None
