"""RE-Deduction's sampled rollout (its pair × operator steps) without a host read per problem and
step: what a seeded PseDual step samples, its losses and its gradients, pinned against the
rollout as it was before (issue 59: a read of `live`, the option and the pair for every problem at
every step, and of the rows for each step's noise), and its host reads counted."""

from __future__ import annotations

import pytest
import torch

from psedual.solvers.config import SolverConfig
from test_rollout_device import _check, fingerprint

pytestmark = pytest.mark.usefixtures("one_thread")
TINY = SolverConfig(embedding_size=32, hidden_size=32, layers=1, dropout=0.0, plm_layers=1, plm_hidden=32)
"""A one-layer random stand-in for the pretrained encoder, 32 wide: the rollout is what is pinned."""


PINNED = {
    0.0: [{"ids": "7b0578f26ec9ceaa", "length": 48, "loss": 6.92532205581665, "infill": 1.1362676620483398,
           "grad_norm": 10.76988728930777, "grad_dot": -15.557580426788038},
          {"ids": "b30991289c8e677c", "length": 48, "loss": 6.689131259918213, "infill": 1.1382781267166138,
           "grad_norm": 8.925028096382203, "grad_dot": -13.533460071821398}],
    0.1: [{"ids": "9907bc5d90016cf8", "length": 50, "loss": 6.937705039978027, "infill": 1.145819067955017,
           "grad_norm": 10.181781368487483, "grad_dot": -16.66340855018767},
          {"ids": "40e9182fcc06b7d1", "length": 48, "loss": 6.7278971672058105, "infill": 1.1417350769042969,
           "grad_norm": 9.038331634559015, "grad_dot": -13.41022830027613}],
}
"""Two PseDual steps' fingerprints (`test_rollout_device.fingerprint`) by dropout, from the rollout
before it read the host once a step (commit 9a6dac4); with dropout made again when the GCN expression
encoder began to draw its dropout over the real nodes only (77688fb: later draws move)."""


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_sample_losses_and_gradients_of_two_steps_are_the_pinned_ones(mawps, vocab, dropout):
    _check(fingerprint("re_deduction", mawps, vocab, dropout, config=TINY), PINNED[dropout])


def deep_rollout(mawps, vocab, max_length: int, counter=None) -> tuple[object, int | None]:
    """A rollout that never stops before its step limit ((max_length - 1) // 2 steps), and with
    `counter` (bench/syncs.py's `SyncCounter`, entered) its host reads."""
    from psedual.reexamine import PseDualConfig, Reexaminer
    from psedual.reexamine.module import GumbelNoise
    from psedual.solvers import get_solver
    from psedual.solvers.batch import collate

    torch.manual_seed(0)
    solver = get_solver("re_deduction")(vocab, TINY)
    with torch.no_grad():
        solver.stop.bias.fill_(-100.0)  # never stop early: every problem deduces to the limit
    reexaminer = Reexaminer(vocab, TINY, PseDualConfig(fusion="predicted"))
    batch = collate(mawps.train[:12], vocab)
    noise = GumbelNoise([p.id for p in batch.problems], max_length, len(vocab.output_tokens), torch.device("cpu"))
    if counter is not None:  # what a GPU would hold
        counter.mark(*solver.parameters(), batch.words, batch.num_pos, batch.num_mask, batch.targets)
    enc = solver.encode(batch)
    if counter is not None:
        counter.take()
    r = solver.rollout(batch, enc, reexaminer._pick(1.0, noise), max_length)
    return r, None if counter is None else counter.take()[0]


@pytest.mark.parametrize("max_length", [3, 9])
def test_the_rollout_reads_the_host_once_a_step_and_once_at_the_end(mawps, vocab, max_length):
    """Counted as bench/syncs.py counts them: before, 12 problems read the host 64 times for one
    step and 214 for four (each problem's state, option and pair at every step, the noise's rows,
    the loop's check); now 2 and 5."""
    from test_rollout_device import _load_bench

    counter = _load_bench("syncs").SyncCounter()
    with counter:
        r, reads = deep_rollout(mawps, vocab, max_length, counter)
    steps = (max_length - 1) // 2
    assert reads == steps + 1
    n_ops = len(vocab.operators)
    assert max(map(len, r.ids)) == 2 * steps + 1 == r.tokens.shape[1]  # every problem ran to the limit
    for ids, row, choice in zip(r.ids, r.tokens.tolist(), r.choices):
        need = 1  # a prefix expression: two operands per operator
        for t in ids:
            assert need > 0
            need += 1 if t < n_ops else -1
        assert need == 0 and row[:len(ids)] == ids and all(t == -1 for t in row[len(ids):])
        assert torch.equal(choice[:len(ids)].argmax(-1), torch.tensor(ids))  # each token's row picks it
        assert choice[len(ids):].abs().sum() == 0
