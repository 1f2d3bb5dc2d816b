"""On a CUDA machine (`pytest -m gpu`): training on the GPU, bf16, a GPU checkpoint on a CPU.

Skipped where torch sees no GPU (CI, the 2-core dev machine).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
import torch

from psedual.train.trainer import train
from psedual.tune.space import Resources, load_spec, make_config

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

ROOT = Path(__file__).parent.parent
SPEC = load_spec(ROOT / "search_spaces" / "ddp_smoke.yaml")
CONFIG = make_config({**SPEC.fixed, "data.train_size": 96, "batch_size": 32, "epochs": 3})


@pytest.mark.parametrize("in_process", [True, False], ids=["in-process", "train-worker"])
def test_a_gpu_trial_trains_on_the_gpu(local_ray, tmp_path, in_process):
    from psedual.tune.sweep import run_sweep

    spec = replace(SPEC, name="gpu", fixed={**SPEC.fixed, "epochs": 1},
                   resources=Resources(num_workers=1, use_gpu=True, in_process=in_process))
    outcome, = run_sweep(spec, str(tmp_path), verbose=0)
    assert outcome.status == "completed", outcome.error
    outcome.checkpoint.to_directory(str(tmp_path / "trial"))
    state = torch.load(tmp_path / "trial" / "last.pt", weights_only=False)  # where it was saved from
    assert all(t.is_cuda for t in state["model"].values())


def test_first_losses_match_cpu(tmp_path):
    cuda = replace(CONFIG, device="cuda", epochs=1)
    train(cuda, tmp_path / "cuda", test=False, progress=False)
    state = torch.load(tmp_path / "cuda" / "last.pt", weights_only=False)
    assert all(t.is_cuda for t in state["model"].values())
    train(replace(cuda, device="cpu"), tmp_path / "cpu", test=False, progress=False)
    a, b = (pl.read_parquet(tmp_path / d / "epochs.parquet").row(0, named=True) for d in ("cuda", "cpu"))
    assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-4)
    assert a["infill_loss"] == pytest.approx(b["infill_loss"], rel=1e-4)


def test_bf16_trains(tmp_path):
    bf16 = replace(CONFIG, device="cuda", precision="bf16")
    train(bf16, tmp_path / "bf16", test=False, progress=False)
    train(replace(bf16, precision="fp32"), tmp_path / "fp32", test=False, progress=False)
    a, b = (pl.read_parquet(tmp_path / d / "epochs.parquet")["train_loss"].to_list() for d in ("bf16", "fp32"))
    assert a[-1] < a[0]  # it learns
    assert a[-1] == pytest.approx(b[-1], rel=0.05) and a != b  # like fp32, and autocast did run


def test_a_gpu_checkpoint_solves_on_a_cpu(tmp_path):
    result = train(replace(CONFIG, device="cuda"), tmp_path / "run", progress=False)
    assert result is not None
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # the process sees no GPU, as on a laptop
    out = subprocess.run([sys.executable, "-m", "psedual.cli", "solve", "--checkpoint", str(tmp_path / "run" / "best.pt"),
                          "Tom has 3 apples and buys 5 more. How many apples does he have?"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert " = " in out.stdout
