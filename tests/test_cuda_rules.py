"""One bf16 training step of every solver × variant under CUDA's autocast rules, emulated on CPU
(`cuda_autocast.CudaAutocastRules`): what `--device cuda --precision bf16` runs first."""

from __future__ import annotations

import pytest
import torch
from cuda_autocast import CudaAutocastRules

from psedual.reexamine import PseDualConfig, Reexaminer, schedules
from psedual.reexamine.config import VARIANTS, BASE
from psedual.reexamine.schedules import Clock
from psedual.solvers import SOLVERS, get_solver
from psedual.solvers.batch import collate
from psedual.solvers.config import SolverConfig
from psedual.train.trainer import StepLoss, train_step

pytestmark = pytest.mark.usefixtures("one_thread")
SMALL = SolverConfig(embedding_size=32, hidden_size=64, layers=1, dropout=0.1, plm_layers=2, plm_hidden=32)
MIDWAY = Clock(5, 10, 1)
"""ε between 0 and 1: both the gold and a sampled expression are encoded."""


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_a_bf16_step_follows_cudas_autocast_rules(mawps, vocab, name, variant):
    torch.manual_seed(0)
    model = get_solver(name)(vocab, SMALL)
    psedual = None if variant == BASE else PseDualConfig(expression_encoder=variant)
    reexaminer = None if psedual is None else Reexaminer(vocab, SMALL, psedual)
    assert psedual is None or 0 < schedules.epsilon(psedual, MIDWAY) < 1
    step = StepLoss(model, reexaminer, 1.0)
    opt = torch.optim.Adam(step.parameters(), 1e-3)
    rules = CudaAutocastRules()
    with rules:
        out = train_step(step, opt, collate(mawps.train[:16], vocab), MIDWAY, precision="bf16")
    assert rules.casts > 0  # the emulation cast matmuls to bf16: it ran
    assert rules.fp16 == 0  # no cuDNN RNN left to run in fp16 without a gradient scaler
    assert torch.isfinite(out.loss) and out.loss.dtype == torch.float32
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in step.parameters())
