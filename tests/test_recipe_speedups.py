"""The plan's GPU-hours before and after issue 59's speed-ups (psedual/tune/cost.py): only speed-ups
measured on a GPU beside the calibrated figures change the 'after'; the others are said, not assumed."""

from __future__ import annotations

import pytest

from psedual.train.resources import Resources
from psedual.tune.cost import PART, SPEEDUP_SESSION, Figures, Sizes, plan_part, shape
from psedual.tune.plan_text import render
from psedual.tune.space import make_config

H100 = "NVIDIA H100 80GB HBM3 x1"
GPU = Resources(use_gpu=True, in_process=False, max_concurrent=1)
FLAT = {"solver": "re_deduction", "variant": "base", "data.fold": 0, "epochs": 2, "batch_size": 64, "seed": 0,
        "precision": "auto"}


def _plan(flat: dict, commit: str = SPEEDUP_SESSION, resources: Resources = GPU):
    config = make_config(flat)
    # a PseDual row with its sampled step (0.5 s as the other): the sum below counts steps alone
    sample = 0.5 if config.psedual is not None else None
    costs = {(H100, 1, shape(config)): Figures(3, 0.5, 0.01, commit, sample_step_s=sample),
             (H100, 1, PART): Figures(6, 0, 0, commit)}
    return plan_part("table1", [config], resources, costs, H100, size_of=lambda c: Sizes(640, 100, 200))


def test_a_recipes_measured_precision_shortens_its_steps_by_the_measured_ratio():
    # 3 s start + 2 epochs x (10 steps x 0.5 s + 100 problems x 0.01 s) + 200 x 0.01 s = 17 s; bf16's
    # RE-Deduction base step is 419.6 / 691.6 of fp32's (docs/gpu/h100_report.md:221-222)
    plan = _plan(FLAT)
    assert plan.seconds == pytest.approx(17.0) and plan.priced == 1
    assert plan.after_seconds == pytest.approx(3 + 2 * (10 * 0.5 * 419.6 / 691.6 + 1) + 2)
    assert plan.sped_up == {"precision by measurement": 1}
    gcn = _plan({**FLAT, "variant": "gcn"})
    assert gcn.after_seconds == pytest.approx(3 + 2 * (10 * 0.5 * 250.3 / 313.3 + 1) + 2)
    # nothing measured: the same before and after
    for unchanged in (_plan({**FLAT, "precision": "fp32"}),  # the option overrides the recipe
                      _plan({**FLAT, "precision": "bf16"}),  # calibrated as it trains: already in the figures
                      _plan({**FLAT, "solver": "gts"}),  # fp32 measured faster
                      _plan({**FLAT, "variant": "gru"}),  # a variant without a bf16 figure
                      _plan(FLAT, commit="abc1234"),  # rows calibrated later already train at auto
                      _plan(FLAT, resources=Resources(max_concurrent=1))):  # a CPU part: fp32
        assert unchanged.after_seconds == pytest.approx(unchanged.seconds) and not unchanged.sped_up


def test_the_plan_prints_both_and_says_what_is_unmeasured():
    long = {**FLAT, "epochs": 2000}  # 12,005 s a trial before; RE-Deduction's 8,072 s after
    plans = [_plan(long), _plan({**long, "solver": "gts"})]
    text = render(plans, "laptop", 0.05, 12.29, [])
    assert "  table1            1 of 1    3.33 GPU-h    2.24 GPU-h" in text
    assert "  table1            1 of 1    3.33 GPU-h    3.33 GPU-h" in text
    assert "  total             2 of 2    6.67 GPU-h    5.58 GPU-h" in text
    assert "applied: precision by measurement (bf16 where measured faster on the H100 for base and GCN: " \
           "re_deduction; the measured step ratio, to those variants' steps) to 1 priced trial(s)" in text
    assert "not applied: the masked rollout" in text and "no faster than the rows rollout" in text
    assert "not applied: several trials sharing a GPU: 8.22x steady throughput for 8 trials" in text
    assert "rows of 3d2b7a9; the speed-ups measured beside 3d2b7a9" in text
    cpu = render([_plan(FLAT, resources=Resources(max_concurrent=1))], "laptop", 0.05, 12.29, [])
    assert "GPU-hours before and after" not in cpu  # a CPU plan has no GPU-hours


def test_a_plan_of_later_rows_names_them_and_applies_nothing_twice():
    # rows calibrated after 3d2b7a9 (the H200's at 50ac138) were timed at the recipe's precision: the
    # H100's bf16 ratio is not applied again, and the header names the rows' session
    text = render([_plan({**FLAT, "epochs": 2000}, commit="abc1234")], "laptop", 0.05, 12.29, [])
    assert "rows of abc1234; the speed-ups measured beside 3d2b7a9's rows apply to those alone" in text
    assert "to 0 priced trial(s): no priced trial has 3d2b7a9's rows" in text
    assert "  table1            1 of 1    3.33 GPU-h    3.33 GPU-h" in text
