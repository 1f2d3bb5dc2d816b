"""The reexamining module: schedules, expression graphs, gradients, permutation, overfitting (small models)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import get_args

import pytest
import torch

from psedual.metrics import infilling_accuracy, perfect_match_ratio
from psedual.reexamine import PseDualConfig, Reexaminer
from psedual.reexamine import config as reexamine_config
from psedual.reexamine.expression import ROOT, LEFT, RIGHT, batch_trees, expression_encoder_class, tree_edges
from psedual.reexamine.module import GumbelNoise
from psedual.reexamine.schedules import (Clock, epoch_decay, epsilon, final, hold_epochs, hold_steps, regime, tau,
                                         warning)
from psedual.reexamine.targets import UNUSED, allowed_targets, canonical_answers, used_slots
from psedual.solvers import SOLVERS, get_solver
from psedual.solvers.batch import collate
from psedual.solvers.config import SolverConfig, inference
from psedual.solvers.vocab import Vocab
from psedual.train.trainer import StepLoss, optimise, train_step

ALL = sorted(SOLVERS)
pytestmark = pytest.mark.usefixtures("one_thread")
# (pretrained-encoder solvers: the shipped MiniLM's tokenizer under a tiny random encoder)
SMALL = SolverConfig(embedding_size=32, hidden_size=64, layers=1, dropout=0.0, plm_layers=2, plm_hidden=32)
AT = Clock(0, 10, 1)
"""The first of 10 steps (schedules that matter pin ε themselves)."""


def build(name, vocab, seed=0, **psedual):
    torch.manual_seed(seed)
    solver_cls = get_solver(name)
    solver = solver_cls(vocab, SMALL)
    return solver, Reexaminer(vocab, SMALL, PseDualConfig(**psedual))


# --- config and schedules ------------------------------------------------------------

def test_every_registered_expression_encoder_builds_and_reads_a_tree():
    tokens = torch.tensor([[0, 3, 4, -1], [1, 0, 3, 4]])  # N0 op N1 (padded), op op ... (cut short)
    for name in reexamine_config.EXPRESSION_ENCODERS:
        cls = expression_encoder_class(name)
        assert issubclass(cls, torch.nn.Module), name
        torch.manual_seed(0)
        out = cls(8, 6, 2, 0.0)(torch.randn(2, 4, 8), tokens)
        assert out.shape == (2, 4, 6), name
    assert reexamine_config.VARIANTS == ("base", *reexamine_config.EXPRESSION_ENCODERS)


def test_config_names_match_the_registry_and_bad_values_fail():
    assert get_args(reexamine_config.ExpressionEncoder) == tuple(reexamine_config.EXPRESSION_ENCODERS)
    with pytest.raises(ValueError, match="unknown expression encoder 'lstm'; valid: gru, gcn"):
        PseDualConfig(expression_encoder="lstm")
    with pytest.raises(ValueError, match="valid: scheduled, teacher_forcing, predicted"):
        PseDualConfig(fusion="sometimes")
    with pytest.raises(ValueError, match="tau_min"):
        PseDualConfig(tau_schedule="step", tau_min=0.0)
    with pytest.raises(ValueError, match="epsilon_decay"):
        PseDualConfig(epsilon_decay=1.5)


def test_epsilon_follows_its_formulas():
    step = PseDualConfig(epsilon_schedule="step", epsilon_hold=0.0)
    assert epsilon(step, Clock(0, 10, 1)) == 1.0
    assert epsilon(step, Clock(1000, 100, 20)) == pytest.approx(math.exp(1000 * math.log(0.99999)), rel=1e-12)
    assert epsilon(replace(step, epsilon0=0.8), Clock(50_000, 1000, 60)) == pytest.approx(0.8 * 0.99999 ** 50_000)
    by_epoch = PseDualConfig(epsilon_schedule="epoch")
    # 100 epochs, the run the published code was built for: its own constants
    assert [epsilon(by_epoch, Clock(e * 23 + 5, 23, 100)) for e in (0, 19)] == [1.0, 1.0]  # held for 20 epochs
    assert epsilon(by_epoch, Clock(20 * 23, 23, 100)) == pytest.approx(0.99)
    assert epsilon(by_epoch, Clock(99 * 23 + 22, 23, 100)) == pytest.approx(0.99 ** 80)
    # 80 epochs: held for 20% (16 epochs), then decaying faster, to the same end, 0.99^80 = 0.448
    assert [epsilon(by_epoch, Clock(e * 23 + 5, 23, 80)) for e in (0, 15)] == [1.0, 1.0]
    assert epsilon(by_epoch, Clock(16 * 23, 23, 80)) == pytest.approx(0.99 ** (80 / 64))
    assert epsilon(by_epoch, Clock(79 * 23 + 22, 23, 80)) == pytest.approx(0.99 ** 80)
    assert epsilon(PseDualConfig(fusion="teacher_forcing"), Clock(10 ** 6, 10 ** 6, 2)) == 1.0
    assert epsilon(PseDualConfig(fusion="predicted"), Clock(0, 1, 1)) == 0.0


def test_horizon_epsilon_ends_where_it_says_on_any_run_length():
    c = PseDualConfig(epsilon_final=0.1, epsilon_hold=0.0)
    for per_epoch, epochs in ((23, 80), (331, 80), (3, 2), (1, 1)):
        last = Clock(per_epoch * epochs - 1, per_epoch, epochs)
        assert epsilon(c, last) == 0.1
        assert final(c, per_epoch, epochs)[0] == 0.1
    assert epsilon(c, Clock(0, 23, 80)) == 1.0
    # exponential: the geometric mean of the ends halfway, and a constant ratio per step
    assert epsilon(c, Clock(40, 9, 9)) == pytest.approx(math.sqrt(0.1))
    ratios = [epsilon(c, Clock(t + 1, 23, 80)) / epsilon(c, Clock(t, 23, 80)) for t in (0, 500, 1800)]
    assert ratios == pytest.approx([0.1 ** (1 / 1839)] * 3, rel=1e-12)
    # the paper's literal rule ends where the run length puts it (the trap horizon avoids)
    literal = PseDualConfig(epsilon_schedule="step", epsilon_hold=0.0)
    assert final(literal, 23, 80)[0] == pytest.approx(0.98177, abs=1e-5)  # MAWPS fold 0, batch 64
    assert final(literal, 331, 80)[0] == pytest.approx(0.76736, abs=1e-5)  # Math23K
    with pytest.raises(ValueError, match="need 0 < epsilon_final <= epsilon0"):
        PseDualConfig(epsilon_final=0.0)
    with pytest.raises(ValueError, match="bad clock"):
        Clock(10, 5, 2)


def test_epsilon_is_held_for_its_share_of_the_run_then_decays_to_its_end():
    """The published code's hold: ε = epsilon0 (nothing sampled) for the first 20% of the steps."""
    c = PseDualConfig()  # horizon, hold 0.2, 1 -> 0.5
    per_epoch, epochs = 23, 80  # 1,840 steps: held for 368
    assert hold_steps(c, Clock(0, per_epoch, epochs)) == 368
    assert [epsilon(c, Clock(t, per_epoch, epochs)) for t in (0, 200, 367)] == [1.0, 1.0, 1.0]
    assert epsilon(c, Clock(368, per_epoch, epochs)) == 1.0  # the decay's first step
    assert epsilon(c, Clock(369, per_epoch, epochs)) == pytest.approx(0.5 ** (1 / 1471))
    assert epsilon(c, Clock(1839, per_epoch, epochs)) == 0.5
    step = PseDualConfig(epsilon_schedule="step", epsilon_hold=0.5)
    assert epsilon(step, Clock(99, 10, 20)) == 1.0 and epsilon(step, Clock(110, 10, 20)) == pytest.approx(0.99999 ** 10)
    # no hold is the decay from the first step; teacher forcing and `epoch` have no share-hold
    assert epsilon(replace(c, epsilon_hold=0.0), Clock(1, per_epoch, epochs)) < 1.0
    assert hold_steps(PseDualConfig(epsilon_schedule="epoch"), Clock(0, 23, 80)) == 0
    assert hold_steps(PseDualConfig(fusion="teacher_forcing"), Clock(0, 23, 80)) == 0
    with pytest.raises(ValueError, match=r"epsilon_hold is a share of the run in \[0, 1\), got 1.0"):
        PseDualConfig(epsilon_hold=1.0)


def test_tau_follows_its_formulas():
    c = PseDualConfig(tau_schedule="step")
    assert tau(c, Clock(0, 100, 300)) == tau(c, Clock(99, 100, 300)) == 1.0  # changes every 100 steps
    assert tau(c, Clock(100, 100, 300)) == pytest.approx(math.exp(-3e-3))
    assert tau(c, Clock(250, 100, 300)) == pytest.approx(math.exp(-6e-3))
    assert tau(c, Clock(23_100, 100, 300)) == pytest.approx(math.exp(-0.693))  # just above the floor
    assert tau(c, Clock(23_200, 100, 300)) == 0.5 and tau(c, Clock(29_999, 100, 300)) == 0.5
    assert tau(replace(c, tau0=2.0, tau_interval=10), Clock(15, 100, 1)) == pytest.approx(2.0 * math.exp(-3e-4))
    horizon = PseDualConfig(tau_final=0.25)
    assert tau(horizon, Clock(0, 23, 80)) == 1.0 and tau(horizon, Clock(1839, 23, 80)) == 0.25
    assert tau(horizon, Clock(22, 23, 80)) == pytest.approx(0.25 ** (22 / 1839))
    per_epoch = replace(horizon, tau_reset="epoch")  # the paper's anneal, restarted every epoch
    assert [tau(per_epoch, Clock(e * 23, 23, 80)) for e in (0, 1, 79)] == [1.0, 1.0, 1.0]
    assert [tau(per_epoch, Clock(e * 23 + 22, 23, 80)) for e in (0, 1, 79)] == [0.25, 0.25, 0.25]
    assert tau(per_epoch, Clock(23 + 11, 23, 80)) == pytest.approx(0.5)
    assert tau(replace(c, tau_reset="epoch"), Clock(250 + 3 * 1000, 1000, 5)) == pytest.approx(math.exp(-6e-3))


def test_the_regime_is_said_and_a_near_teacher_forcing_run_is_warned():
    assert regime(PseDualConfig(), 23, 80) == ("ε 1 for the first 368 steps (20%), then → 0.5 by the last of 1,840 steps "
                                                "(23 per epoch × 80 epochs; fusion scheduled, schedule horizon); τ 1 → 0.5 "
                                                "over the run (schedule horizon, Q_pred straight_through); quantity keys "
                                                "anonymous, loss averaged per problem")
    assert regime(PseDualConfig(epsilon_hold=0.0, quantity_keys="named", control="other_problem"), 23, 80).startswith(
        "ε 1 → 0.5 by the last of 1,840 steps (23 per epoch × 80 epochs")  # no hold: no "first 0 steps"
    assert regime(PseDualConfig(quantity_keys="named", control="other_problem"), 23, 80).endswith(
        "quantity keys named, control other_problem, loss averaged per problem")
    assert "for the first 92 steps (20%), then → 0.44752 by the last of 460 steps" in regime(
        PseDualConfig(epsilon_schedule="epoch"), 23, 20)
    assert "τ is unused" in regime(PseDualConfig(fusion="teacher_forcing"), 23, 80)
    assert "over each epoch's 23 steps" in regime(PseDualConfig(tau_reset="epoch"), 23, 80)
    assert final(PseDualConfig(fusion="teacher_forcing"), 23, 80) == (1.0, None)
    message = warning(PseDualConfig(epsilon_schedule="step", epsilon_hold=0.0), 23, 80)
    assert "ends at ε = 0.982 > 0.9 after 1,840 steps" in message and "--psedual.epsilon_final E" in message
    assert warning(PseDualConfig(), 23, 80) is None
    assert warning(PseDualConfig(fusion="teacher_forcing"), 23, 80) is None  # asked for, not a trap


# --- expressions and targets -----------------------------------------------------------

def test_gcn_graph_of_a_known_expression(vocab):
    ids = vocab.output_ids(["*", "+", "N0", "N1", "N2"])
    assert tree_edges(ids, len(vocab.operators)) == [(0, 1), (1, 2), (1, 3), (0, 4)]
    tokens = torch.tensor([vocab.output_ids(["N0"]) + [-1] * 4, ids])  # a lone leaf has no edges
    trees = batch_trees(tokens, len(vocab.operators))
    one_way = [[1, 2], [2, 3], [2, 4], [1, 5]]  # real nodes only: the second expression's are 1..5
    assert trees.edges.t().tolist() == one_way + [[c, p] for p, c in one_way]
    assert trees.nodes.tolist() == [0, 5, 6, 7, 8, 9]  # where they sit in the padded [2, 5] batch
    assert trees.place.tolist() == [ROOT] * 5 + [ROOT, LEFT, LEFT, RIGHT, RIGHT]
    assert batch_trees(tokens[:1], len(vocab.operators)).edges.shape == (2, 0)
    assert tree_edges(vocab.output_ids(["-", "N0"]), len(vocab.operators)) == [(0, 1)]  # cut short


def _gcnconv_defaults(encoder) -> list[torch.nn.Module]:
    """GCNConvs with their defaults (self loops added by `add_remaining_self_loops` in `gcn_norm`)
    holding copies of `encoder`'s two layers' weights."""
    from torch_geometric.nn import GCNConv

    convs = []
    for conv in (encoder.conv1, encoder.conv2):
        default = GCNConv(conv.in_channels, conv.out_channels)
        default.load_state_dict(conv.state_dict())
        convs.append(default)
    return convs


def _gcn_as_gcnconv_defaults(encoder, convs, embedded, tokens):
    """`encoder`'s forward as it was before it added its own self loops and left padding out, with
    `convs` (`_gcnconv_defaults`) for its layers: every position of the padded batch a node. Dropout
    is drawn as the encoder draws it now, over the real nodes in their order (padding's rows zero)."""
    B, L, _ = embedded.shape
    trees = batch_trees(tokens, encoder.n_ops)
    edges = trees.nodes[trees.edges]  # numbered b·L + p, as then

    def dropped(x):
        return x.new_zeros(x.shape).index_copy(0, trees.nodes, encoder.drop(x[trees.nodes]))

    x = dropped(embedded.reshape(B * L, -1) + encoder.place(trees.place))
    x = dropped(torch.relu(convs[0](x, edges)))
    return convs[1](x, edges).view(B, L, -1)


def test_gcn_encoder_adding_its_own_self_loops_is_gcnconv_s_default_bit_for_bit(vocab):
    """The same edges in the same order as `add_remaining_self_loops` makes (the tree's, then a loop
    per node), so the same sums in the same order: outputs equal to the last bit at the real
    positions (zero at padding, where GCNConv's states were never read), in training mode (dropout
    drawn from the same seed, over the real nodes), on trees, a cut-short one and lone leaves. The
    gradients, from what reads only the real positions (as a key does), equal to the last bit for
    the inputs; the layers' weights to a float sum's order, as their sums now skip padding's zeros."""
    ops = len(vocab.operators)
    rows = [["*", "+", "N0", "N1", "N2"], ["-", "N1", "N0"], ["N0"], ["/", "+", "N0"]]  # the last is cut short
    L = max(map(len, rows))
    tokens = torch.tensor([vocab.output_ids(r) + [-1] * (L - len(r)) for r in rows])
    assert (tokens[:, 0] < ops).tolist() == [True, True, False, True]
    torch.manual_seed(0)
    encoder = expression_encoder_class("gcn")(16, 12, ops, 0.3).train()
    for conv in (encoder.conv1, encoder.conv2):  # GCNConv's bias starts at zero: make it count
        torch.nn.init.normal_(conv.bias)
    embedded = torch.randn(len(rows), L, 16, requires_grad=True)
    real = (tokens >= 0).unsqueeze(-1)
    probe = torch.randn(len(rows), L, 12) * real

    torch.manual_seed(1)
    out = encoder(embedded, tokens)
    (out * probe).sum().backward()
    ours = [embedded.grad.clone(), encoder.place.weight.grad.clone(),
            *[p.grad.clone() for conv in (encoder.conv1, encoder.conv2) for p in conv.parameters()]]
    embedded.grad = None
    encoder.zero_grad()
    convs = _gcnconv_defaults(encoder)  # (their init draws from the RNG: made before the seed)
    torch.manual_seed(1)
    reference = _gcn_as_gcnconv_defaults(encoder, convs, embedded, tokens)
    (reference * probe).sum().backward()
    theirs = [embedded.grad, encoder.place.weight.grad, *[p.grad for conv in convs for p in conv.parameters()]]

    assert torch.equal(out, reference * real) and out.abs().sum() > 0
    assert (reference * ~real).abs().sum() > 0  # padding's states were not zero: they are left out
    assert len(ours) == len(theirs) == 6
    for a, b in zip(ours[:2], theirs[:2]):
        assert torch.equal(a, b) and a.abs().sum() > 0
    for a, b in zip(ours[2:], theirs[2:]):
        assert torch.allclose(a, b, rtol=1e-6, atol=1e-7) and a.abs().sum() > 0


@pytest.mark.parametrize("encoder", ["gru", "gcn"])
def test_an_expression_encoder_given_its_host_ids_reads_nothing_back(encoder):
    """Counted as bench/syncs.py counts them, a forward and backward of each encoder on device
    tensors, the expressions' ids given on the host: no host read. (Before, the GCN read 2, one a
    layer in torch-geometric's `add_remaining_self_loops`; the count saw 1 in the GRU, the RNN
    reading its packed batch sizes, which live on the host on every device.)"""
    from test_rollout_device import _load_bench

    rows = [[0, 3, 4], [1, 0, 3, 4, 5], [3]]
    tokens = torch.tensor([r + [-1] * (5 - len(r)) for r in rows])
    torch.manual_seed(0)
    module = expression_encoder_class(encoder)(8, 6, 2, 0.1)
    counter = _load_bench("syncs").SyncCounter()
    with counter:
        embedded = torch.randn(3, 5, 8, requires_grad=True)
        counter.mark(*module.parameters(), embedded, tokens)
        module(embedded, tokens, rows).sum().backward()
        syncs, apart, sites = counter.take()
    assert (syncs, apart, sites) == (0, {}, {})
    assert embedded.grad.abs().sum() > 0


def test_a_gcn_step_reads_the_host_only_in_the_masked_rollout(mawps, vocab):
    """Counted as bench/syncs.py counts them, one GTS PseDual-GCN step (masked rollout, as a GPU
    runs it): the rollout's designed reads and none from torch-geometric. Before the encoder added
    its own self loops, GCNConv's `add_remaining_self_loops` indexed the edges by a boolean mask,
    once a layer and expression: 4 more (7 in all), at `torch_geometric/utils/loop.py`."""
    from dataclasses import fields

    from psedual.solvers.batch import TreeIndex
    from psedual.solvers.rollout import MASKED_DEVICES
    from test_rollout_device import _load_bench

    torch.manual_seed(0)
    config = SolverConfig(embedding_size=32, hidden_size=64, layers=1, dropout=0.0)
    step = StepLoss(get_solver("gts")(vocab, config), Reexaminer(vocab, config, PseDualConfig(expression_encoder="gcn")),
                    1.0)
    opt = torch.optim.Adam(step.parameters(), 1e-3)
    batch = collate(mawps.train[:16], vocab)
    counter = _load_bench("syncs").SyncCounter()
    MASKED_DEVICES.add("cpu")
    try:
        with counter:  # what a GPU would hold (bench/syncs.py's `_on_device`)
            counter.mark(*step.parameters(), *step.buffers(), batch.words, batch.num_pos, batch.num_mask,
                         batch.targets, *[getattr(batch.tree, f.name) for f in fields(TreeIndex)])
            train_step(step, opt, batch, Clock(1, 2, 1))  # ε halfway: an expression sampled
            syncs, apart, sites = counter.take()
    finally:
        MASKED_DEVICES.discard("cpu")
    assert {site.rpartition(":")[0] for site in sites} == {"psedual/solvers/tree_rollout.py"}, sites
    assert syncs == 3, sites
    assert set(apart) == {"torch.optim"}  # Adam's host-side step counts, shown apart (see bench/syncs.py)


def test_n12_stays_n12(mawps):
    p = mawps.train[0]
    many = replace(p, numbers=tuple(str(k + 1) for k in range(13)), number_texts=tuple(str(k + 1) for k in range(13)),
                   num_pos=tuple(range(13)), prefix=("+", "N12", "N2"))
    v = Vocab.build([many], (), max_slots=13)
    gold = torch.tensor([v.output_ids(many.prefix)])
    slot0 = len(v.operators)
    assert used_slots(gold[0].tolist(), slot0) == {12, 2}
    allowed = allowed_targets([many], gold, slot0, 13)
    assert allowed[0, 12].nonzero().flatten().tolist() == [12]
    assert allowed[0, 2].nonzero().flatten().tolist() == [2]
    assert allowed[0, 1].nonzero().flatten().tolist() == [13]  # N1 is unused
    predicted, right = canonical_answers([many], gold, torch.tensor([[13] * 12 + [12]]), slot0)
    assert right == [[UNUSED, UNUSED, 2] + [UNUSED] * 9 + [12]]
    assert predicted == [[UNUSED] * 12 + [12]]


def test_repeated_numbers_may_be_filled_from_either_slot(mawps):
    p = replace(mawps.train[0], numbers=("3", "5", "3"), number_texts=("3", "5", "3"), num_pos=(0, 1, 2),
                prefix=("*", "N2", "N1"))
    v = Vocab.build([p], (), max_slots=3)
    gold, slot0 = torch.tensor([v.output_ids(p.prefix)]), len(v.operators)
    # slot 0 holds 3 like N2, which the expression uses: N2 is its answer, not "unused"
    assert allowed_targets([p], gold, slot0, 3)[0].tolist() == [[False, False, True, False],
                                                                 [False, True, False, False],
                                                                 [False, False, True, False]]
    assert canonical_answers([p], gold, torch.tensor([[2, 1, 3]]), slot0) == ([[2, 1, UNUSED]], [[2, 1, 2]])


# --- the module on every solver ---------------------------------------------------------

DECODER_ONLY = {"gts": ["ops.weight", "score_q.weight", "gen_l.weight"], "graph2tree": ["ops.weight", "score_q.weight"],
                "dns": ["out.weight", "cell.weight_hh", "combine.weight"],
                "bert_tree": ["ops.weight", "score_q.weight", "gen_l.weight"],
                "re_deduction": ["score.weight", "pair_i.weight", "pair_ij.weight"]}
WORD_EMBEDDING = {"bert_tree": "encoder.plm.embeddings.word_embeddings.weight",
                  "re_deduction": "encoder.plm.embeddings.word_embeddings.weight"}
"""The encoder's word embedding, where it is not `encoder.embed.weight`."""


@pytest.mark.parametrize("encoder", ["gru", "gcn"])
@pytest.mark.parametrize("name", ALL)
def test_infilling_gradient_reaches_the_decoder_only_straight_through(mawps, vocab, name, encoder):
    batch = collate(mawps.train[:16], vocab)
    grads = {}
    for qp in ("straight_through", "none"):
        solver, reexaminer = build(name, vocab, expression_encoder=encoder, fusion="predicted", qp_gradient=qp)
        torch.manual_seed(1)
        out = reexaminer(solver, batch, solver.encode(batch), AT)
        out.loss.backward()
        params = dict(solver.named_parameters())
        grads[qp] = [0.0 if params[n].grad is None else params[n].grad.abs().sum().item() for n in DECODER_ONLY[name]]
        embedding = params[WORD_EMBEDDING.get(name, "encoder.embed.weight")]
        assert embedding.grad.abs().sum() > 0  # the shared encoder learns either way
    assert all(g > 0 for g in grads["straight_through"])
    assert grads["none"] == [0.0] * len(DECODER_ONLY[name])


def _decoder_gradient(name, vocab, batch, **psedual) -> tuple[torch.Tensor, torch.Tensor]:
    """∇ of the infilling loss alone on the solver's decoder-only weights (flat), and the
    pointer's logits, for a fixed model and fixed Gumbel noise."""
    solver, reexaminer = build(name, vocab, expression_encoder="gcn", **psedual)
    torch.manual_seed(1)
    out = reexaminer(solver, batch, solver.encode(batch), AT)
    out.loss.backward()
    params = dict(solver.named_parameters())
    grad = torch.cat([torch.zeros(params[n].numel()) if params[n].grad is None else params[n].grad.flatten()
                      for n in DECODER_ONLY[name]])
    return grad, out.logits.detach()


def _constant_epsilon(eps: float) -> dict:
    return {"fusion": "scheduled", "epsilon_schedule": "step", "epsilon0": eps, "epsilon_decay": 1.0}


@pytest.mark.parametrize("name", ALL)
def test_decoder_gradient_scales_with_one_minus_epsilon(mawps, vocab, name):
    """Q = ε·Q_gold + (1−ε)·Q_pred: the infilling gradient reaches the decoder through Q_pred
    only, so it scales with (1−ε) and is exactly 0 under teacher forcing."""
    batch = collate(mawps.train[:16], vocab)
    g = {eps: _decoder_gradient(name, vocab, batch, **_constant_epsilon(eps))[0].abs().sum().item()
         for eps in (0.0, 0.5, 0.9, 1.0)}
    assert g[0.0] > 0
    assert 0.4 < g[0.5] / g[0.0] < 0.6
    assert 0.05 < g[0.9] / g[0.0] < 0.15
    assert g[1.0] == 0.0
    assert not _decoder_gradient(name, vocab, batch, fusion="teacher_forcing")[0].any()


@pytest.mark.parametrize("name", ALL)
def test_tau_shapes_the_gradient_straight_through_and_the_tokens_when_soft(mawps, vocab, name):
    batch = collate(mawps.train[:16], vocab)

    def at(tau, qp):
        return _decoder_gradient(name, vocab, batch, fusion="predicted", qp_gradient=qp, tau0=tau, tau_final=tau)

    def differ(a, b):
        return ((a - b).norm() / a.norm()).item()

    (g1, l1), (g4, l4) = at(1.0, "straight_through"), at(0.25, "straight_through")
    # straight-through: the same expressions are read (hard tokens), the gradient differs
    assert torch.equal(l1, l4)
    assert g1.any() and differ(g1, g4) > 0.2
    # soft: the infiller reads the relaxed rows, so τ changes what it reads; τ → 0 is the hard read
    (s1, sl1), (s4, sl4), (_, sl0) = at(1.0, "soft"), at(0.25, "soft"), at(1e-5, "soft")
    assert not torch.allclose(sl1, sl4, atol=1e-3)
    assert torch.allclose(sl0, l1, atol=5e-3)
    assert s1.any() and differ(s1, s4) > 0.2
    # no gradient (the published code): τ changes nothing at all
    (n1, nl1), (n4, nl4) = at(1.0, "none"), at(0.25, "none")
    assert not n1.any() and not n4.any() and torch.equal(nl1, l1) and torch.equal(nl4, l1)


@pytest.mark.parametrize("name", ALL)
def test_predicted_fusion_has_a_finite_loss_when_the_sample_misses_gold_numbers(mawps, vocab, name):
    """A gold quantity the sampled expression lacks stays a candidate (with a zero key): without
    it the target would be masked out and the loss would be ~1e12."""
    batch = collate(mawps.train[:32], vocab)
    solver, reexaminer = build(name, vocab, fusion="predicted")
    torch.manual_seed(0)
    out = reexaminer(solver, batch, solver.encode(batch), AT)
    assert out.epsilon == 0.0 and out.tau == 1.0
    assert torch.isfinite(out.loss) and out.loss.item() < 10
    out.loss.backward()


PERM = [5, 0, 11, 3, 1, 9, 2, 10, 4, 8, 7, 6]


@pytest.mark.parametrize("encoder", ["gru", "gcn"])
@pytest.mark.parametrize("name", ALL)
def test_permuting_a_batch_permutes_the_infilling(mawps, vocab, name, encoder):
    problems = mawps.train[:12]
    solver, reexaminer = build(name, vocab, expression_encoder=encoder, fusion="teacher_forcing")
    with inference(solver), inference(reexaminer):
        a = reexaminer(solver, collate(problems, vocab), solver.encode(collate(problems, vocab)), AT)
        pb = collate([problems[i] for i in PERM], vocab)
        b = reexaminer(solver, pb, solver.encode(pb), AT)
    assert torch.allclose(b.logits, a.logits[PERM], atol=1e-5)
    assert torch.equal(b.allowed, a.allowed[PERM])
    assert b.loss.item() == pytest.approx(a.loss.item(), abs=1e-6)


@pytest.mark.parametrize("name", ALL)
def test_permuting_a_batch_permutes_the_sampled_infilling(mawps, vocab, name):
    """Each problem's Gumbel noise is its own: the same seed samples the same expression for a
    problem wherever it sits in the batch (and whatever other problems share it)."""
    problems = mawps.train[:12]
    solver, reexaminer = build(name, vocab, expression_encoder="gcn", fusion="predicted")
    with inference(solver):  # no dropout; the module stays in training mode and samples
        torch.manual_seed(7)
        a = reexaminer(solver, collate(problems, vocab), solver.encode(collate(problems, vocab)), AT)
        pb = collate([problems[i] for i in PERM], vocab)
        torch.manual_seed(7)
        b = reexaminer(solver, pb, solver.encode(pb), AT)
        torch.manual_seed(8)
        c = reexaminer(solver, pb, solver.encode(pb), AT)
    assert torch.allclose(b.logits, a.logits[PERM], atol=1e-5)
    assert b.loss.item() == pytest.approx(a.loss.item(), abs=1e-6)
    assert not torch.allclose(c.logits, b.logits, atol=1e-3)  # another seed samples other expressions


@pytest.mark.parametrize("encoder", ["gru", "gcn"])
def test_the_infiller_overfits_a_tiny_set(mawps, vocab, encoder):
    problems = [p for p in mawps.train if len(p.numbers) >= 3][:16]  # has unused numbers too
    batch = collate(problems, vocab)
    solver, reexaminer = build("gts", vocab, expression_encoder=encoder, fusion="teacher_forcing")
    opt = torch.optim.Adam([*solver.parameters(), *reexaminer.parameters()], 1e-2)
    for _ in range(150):
        optimise(reexaminer(solver, batch, solver.encode(batch), AT).loss, opt)  # the infiller's loss alone
    with inference(solver), inference(reexaminer):
        predicted, right = reexaminer.infill_gold(solver, batch)
    assert any(UNUSED in r for r in right)
    assert infilling_accuracy(predicted, right).value == 1.0
    assert perfect_match_ratio(predicted, right).value == 1.0


@pytest.mark.parametrize("name", ALL)
def test_rollout_writes_well_formed_expressions(mawps, vocab, name):
    solver, reexaminer = build(name, vocab, fusion="predicted")
    batch = collate(mawps.train[:24], vocab)
    torch.manual_seed(0)
    noise = GumbelNoise([p.id for p in batch.problems], 7, len(vocab.output_tokens), torch.device("cpu"))
    r = solver.rollout(batch, solver.encode(batch), reexaminer._pick(1.0, noise), max_length=7)
    n_ops = len(vocab.operators)
    for row, choice in zip(r.tokens.tolist(), r.choices):
        ids = [t for t in row if t >= 0]
        assert 1 <= len(ids) <= 7
        need = 1
        for t in ids:
            need += 1 if t < n_ops else -1
        assert need == 0  # complete: every operator has two operands
        assert torch.equal(choice[: len(ids)].argmax(-1), torch.tensor(ids))
        assert choice[len(ids):].abs().sum() == 0


def test_separate_problem_encoder_has_its_own_weights(mawps, vocab):
    solver, reexaminer = build("gts", vocab, problem_encoder="separate", fusion="teacher_forcing")
    batch = collate(mawps.train[:8], vocab)
    reexaminer(solver, batch, solver.encode(batch), AT).loss.backward()
    assert reexaminer.problem.embed.weight.grad.abs().sum() > 0
    assert solver.encoder.embed.weight.grad is None  # the solver's encoder is not used


# Solver loss + infilling loss of two seeded Adam steps (GCN with anonymous quantity keys, the
# infilling loss averaged per problem, ε decaying by half per step so
# sampled expressions count from the first step; 32 MAWPS problems, dropout 0.5). Compared with
# a relative tolerance of 1e-6: other torch builds may sum in another order.
PINNED = {"gts": [3.542232036590576, 3.429762840270996], "dns": [3.569514274597168, 3.480982780456543],
          "graph2tree": [3.689004421234131, 3.4752845764160156], "bert_tree": [3.5605998039245605, 3.3638453483581543],
          "re_deduction": [7.169483184814453, 6.949048042297363]}


@pytest.mark.parametrize("name", ALL)
def test_loss_of_two_seeded_psedual_steps_is_pinned(mawps, vocab, name):
    torch.manual_seed(0)
    solver_cls = get_solver(name)
    config = replace(SMALL, dropout=0.5)
    solver = solver_cls(vocab, config)
    reexaminer = Reexaminer(vocab, config, PseDualConfig(expression_encoder="gcn", epsilon_schedule="step",
                                                         epsilon_decay=0.5, tau_schedule="step"))
    opt = torch.optim.Adam([*solver.parameters(), *reexaminer.parameters()], 1e-3)
    batch = collate(mawps.train[:32], vocab)
    step = StepLoss(solver, reexaminer, 1.0)
    losses = [train_step(step, opt, batch, Clock(i, 2, 1)).loss.item() for i in range(2)]
    assert losses == pytest.approx(PINNED[name], rel=1e-6), losses


# --- what the infiller may read (issue 41) ------------------------------------------------

def _ids(vocab, *prefixes):
    from psedual.solvers.tensors import padded_ids

    return padded_ids([vocab.output_ids(p) for p in prefixes])


def _keys(reexaminer, vocab, problems, *prefixes):
    from psedual.reexamine.module import hard_rollout

    with inference(reexaminer):
        return reexaminer.keys(hard_rollout(_ids(vocab, *prefixes), len(vocab.output_tokens)), 3, problems)[0]


@pytest.mark.parametrize("encoder", ["gru", "gcn"])
def test_default_keys_do_not_change_when_the_quantities_are_renamed(mawps, vocab, encoder):
    """N_k is the answer for slot k: on the default the encoder never sees k, so renaming the
    quantities (N0 -> N2, N1 -> N0, N2 -> N1) moves each key to its new name unchanged."""
    p = [q for q in mawps.train if len(q.numbers) == 3][0]
    original, renamed = ("*", "+", "N0", "N1", "N2"), ("*", "+", "N2", "N0", "N1")
    _, reexaminer = build("gts", vocab, expression_encoder=encoder)
    keys = _keys(reexaminer, vocab, [p, p], original, renamed)
    assert torch.allclose(keys[0, [0, 1, 2]], keys[1, [2, 0, 1]], atol=1e-6)
    assert not torch.allclose(keys[0, 0], keys[0, 1], atol=1e-3)  # the structure still tells them apart
    _, named = build("gts", vocab, expression_encoder=encoder, quantity_keys="named")
    keys = _keys(named, vocab, [p, p], original, renamed)
    assert not torch.allclose(keys[0, [0, 1, 2]], keys[1, [2, 0, 1]], atol=1e-3)  # the leak the default closes


def test_gcn_keys_tell_the_left_operand_from_the_right(mawps, vocab):
    p = [q for q in mawps.train if len(q.numbers) == 3][0]
    _, reexaminer = build("gts", vocab, expression_encoder="gcn")
    keys = _keys(reexaminer, vocab, [p, p], ("-", "N0", "N1"), ("-", "N1", "N0"))
    assert not torch.allclose(keys[0, 0], keys[1, 0], atol=1e-3)  # N0 as minuend, then as subtrahend
    assert torch.allclose(keys[0, 0], keys[1, 1], atol=1e-6)  # the left operand's key, whatever its name
    with torch.no_grad():
        reexaminer.expression.place.weight.zero_()  # without the place, GCNConv's edges have no order
    keys = _keys(reexaminer, vocab, [p, p], ("-", "N0", "N1"), ("-", "N1", "N0"))
    assert torch.allclose(keys[0, 0], keys[1, 0], atol=1e-6)


def test_value_keys_read_the_value_not_the_slot(mawps, vocab):
    from psedual.reexamine.module import value_features

    p = replace(mawps.train[0], numbers=("3", "0.5", "3", "-12"), number_texts=("3", "0.5", "3", "-12"),
                num_pos=(0, 1, 2, 3), prefix=("+", "N0", "N1"))
    expected = [[1, math.log10(3), 1, 0], [1, math.log10(0.5), 0, 1], [1, math.log10(3), 1, 0],
                [-1, math.log10(12), 1, 0], [0, 0, 0, 0]]
    assert torch.allclose(value_features([p], 5)[0], torch.tensor(expected))
    _, reexaminer = build("gts", vocab, expression_encoder="gru", quantity_keys="value")
    keys = _keys(reexaminer, vocab, [p, p, p], ("*", "N0", "N1"), ("*", "N2", "N1"), ("*", "N1", "N0"))
    assert torch.allclose(keys[0, 0], keys[1, 2], atol=1e-6)  # N0 and N2 both hold 3: the same key
    assert not torch.allclose(keys[0, 0], keys[2, 1], atol=1e-3)  # 0.5 in N0's place: another key


def test_the_infilling_loss_is_each_problems_mean_then_the_batch_mean(mawps, vocab):
    one = [q for q in mawps.train if len(q.numbers) == 1][0]
    three = [q for q in mawps.train if len(q.numbers) == 3][0]
    batch = collate([one, three], vocab)
    losses = {}
    for average in ("problem", "slot"):
        solver, reexaminer = build("gts", vocab, fusion="teacher_forcing", infill_average=average)
        with inference(solver), inference(reexaminer):
            out = reexaminer(solver, batch, solver.encode(batch), AT)
        target = out.logits.masked_fill(~out.allowed, float("-inf")).argmax(-1)
        ce = torch.nn.functional.cross_entropy(out.logits.flatten(0, 1), target.flatten(), reduction="none").view(2, -1)
        losses[average] = (out.loss.item(), ce)
        assert reexaminer.loss_terms([one, three]) == (2 if average == "problem" else 4)
    loss, ce = losses["problem"]
    assert loss == pytest.approx((ce[0, 0].item() + ce[1, :3].mean().item()) / 2, rel=1e-6)
    loss, ce = losses["slot"]
    assert loss == pytest.approx((ce[0, 0].item() + ce[1, :3].sum().item()) / 4, rel=1e-6)


def test_the_control_fills_each_problem_from_the_next_problems_expression(mawps, vocab):
    problems = [q for q in mawps.train if len(q.numbers) >= 2][:4]
    batch = collate(problems, vocab)
    solver, control = build("gts", vocab, fusion="teacher_forcing", control="other_problem")
    with inference(solver), inference(control):
        enc = solver.encode(batch)
        out = control(solver, batch, enc, AT)
        from psedual.reexamine.module import gold_rollout

        keys, _ = control.keys(gold_rollout(batch, len(vocab.output_tokens)), batch.num_mask.shape[1], batch.problems)
        expected = control.pointer(control.slot_states(solver, batch, enc), keys.roll(1, 0), batch.num_mask.bool())
    assert torch.allclose(out.logits, expected, atol=1e-6)  # problem b reads problem b-1's keys
    assert torch.equal(out.allowed, allowed_targets(problems, batch.targets, control.slot0, batch.num_mask.shape[1]))


def test_the_no_expression_control_reads_no_expression_and_teaches_only_used_or_not(mawps, vocab):
    """Every quantity key is zero and every slot a candidate, so the pointer scores the candidates
    alike: the loss can teach only whether each number is used. Nothing is encoded or sampled: the
    solver's rollout is never called, and the module has no expression reader to leave unused."""
    problems = [q for q in mawps.train if len(q.numbers) >= 2][:4]
    batch = collate(problems, vocab)
    solver, control = build("gts", vocab, control="no_expression")  # fusion scheduled: ignored
    assert not any(n.startswith(("expression.", "embed", "quantity")) for n, _ in control.named_parameters())
    solver.rollout = None  # calling it would fail
    with inference(solver), inference(control):
        enc = solver.encode(batch)
        out = control(solver, batch, enc, Clock(9, 10, 1))  # the last step: ε at its lowest
        slots = control.slot_states(solver, batch, enc)
        expected = control.pointer(slots, torch.zeros_like(slots), batch.num_mask.bool())
    assert torch.allclose(out.logits, expected, atol=1e-6)
    S = batch.num_mask.shape[1]
    for b, p in enumerate(problems):  # a slot's quantity candidates all score alike
        n = len(p.num_pos)
        assert torch.allclose(out.logits[b, :n, :n], out.logits[b, :n, :1].expand(n, n), atol=1e-6)
        assert (out.logits[b, :, n:S] < -1e8).all()  # slots past the problem's numbers are no candidates
    assert out.tau is None
    assert regime(PseDualConfig(control="no_expression"), 23, 80).startswith("control no_expression: the infiller reads")
    # and `psedual train`'s result line names ε and τ unused (it printed the schedule's last ε, 0.5, as if it mixed)
    from psedual.results.records import RunResult, result_line

    run = RunResult(3, 0.5, 0.4, 0.5, 0.4, 0.45, 0.8, 0.6, 0.9, 0.7, 0.5, 0.5, 12.0, "run")
    assert "final ε 0.5 τ 0.5" in result_line(run) and "infilling 80.00%" in result_line(run)
    line = result_line(run, "no_expression")
    assert "ε" in line and "final ε" not in line and "infilling 80.00%" in line
    # its test-time infilling reads no expression either: another problem's gold shown changes nothing
    with inference(solver), inference(control):
        own = control.infill_gold(solver, batch)
        other = control.infill_gold(solver, batch, shown=batch.targets.roll(1, 0))
    assert own == other


def test_scrambling_the_gold_costs_a_trained_default_infiller_20_points(mawps, vocab):
    """A goal of issue 41: on the default the infiller needs the expression. (That it cannot read
    names is `test_default_keys_do_not_change_when_the_quantities_are_renamed`; a named infiller
    trained like this one also learns the structure of so small a set, so this test alone would
    not tell them apart: tools/infill_probe.py on real runs does, docs/psedual.md.)"""
    import random

    from psedual.reexamine.probe import scrambled

    problems = [p for p in mawps.train if 2 <= len(p.numbers) <= 3][:64]
    batch = collate(problems, vocab)
    rng = random.Random(0)
    shown = _ids(vocab, *(scrambled(p.prefix, vocab.operators, rng) for p in problems))
    solver, reexaminer = build("gts", vocab, fusion="teacher_forcing")
    opt = torch.optim.Adam([*solver.parameters(), *reexaminer.parameters()], 1e-2)
    for _ in range(60):
        optimise(reexaminer(solver, batch, solver.encode(batch), AT).loss, opt)
    with inference(solver), inference(reexaminer):
        gold, scrambled_ = [infilling_accuracy(*reexaminer.infill_gold(solver, batch, s)).value for s in (None, shown)]
    assert gold > 0.9 and gold - scrambled_ >= 0.2, (gold, scrambled_)


def test_the_probes_known_answers(mawps):
    import random

    from psedual.reexamine.probe import in_text_order, name_rule, scrambled

    p = replace(mawps.train[0], numbers=("3", "5", "3", "7"), number_texts=("3", "5", "3", "7"), num_pos=(0, 1, 2, 3),
                prefix=("*", "N2", "+", "N1", "N1"))
    # slot 0 holds 3 like the used N2: the rule says "unused", the right filling is 2
    assert name_rule(p) == ([UNUSED, 1, 2, UNUSED], [2, 1, 2, UNUSED])
    s = scrambled(("*", "N2", "+", "N1", "3"), ("+", "-", "*", "/"), random.Random(1))
    assert [t in "+-*/" for t in s] == [True, False, True, False, False]
    assert sorted(t for t in s if t not in "+-*/") == ["3", "N1", "N2"]
    assert in_text_order(("*", "N0", "+", "N1", "N0")) and not in_text_order(("-", "N1", "N0"))
    assert in_text_order(("+", "N2", "N12"))  # N12 is slot 12, after slot 2


def test_shuffled_leaf_order_swaps_only_commutative_operands(vocab):
    from psedual.reexamine.expression import swap_operands

    ids = vocab.output_ids(["*", "+", "N0", "N1", "-", "N2", "N3"])
    commutative = {vocab.operators.index("+"), vocab.operators.index("*")}
    flips = iter([True, True])  # `*`, then `+`: `-` is never asked
    assert swap_operands(ids, len(vocab.operators), commutative, lambda: next(flips)) == \
        vocab.output_ids(["*", "-", "N2", "N3", "+", "N1", "N0"])
    assert swap_operands(ids, len(vocab.operators), commutative, lambda: False) == ids
    cut = vocab.output_ids(["+", "N0"])  # incomplete: left as it is
    assert swap_operands(cut, len(vocab.operators), commutative, lambda: True) == cut


def test_shuffled_leaf_order_reads_other_golds_in_training_only(mawps, vocab):
    problems = [q for q in mawps.train if len(q.numbers) >= 2][:16]
    batch = collate(problems, vocab)
    solver, written = build("gts", vocab, fusion="teacher_forcing")
    _, shuffled = build("gts", vocab, fusion="teacher_forcing", leaf_order="shuffled")
    shuffled.load_state_dict(written.state_dict())
    with inference(solver), inference(written), inference(shuffled):
        torch.manual_seed(3)
        a = written(solver, batch, solver.encode(batch), AT)
        b = shuffled(solver, batch, solver.encode(batch), AT)
        assert not torch.allclose(a.logits, b.logits, atol=1e-4)  # some `+` / `*` operands were swapped
        assert torch.equal(a.allowed, b.allowed)  # the same right answers
        assert written.infill_gold(solver, batch) == shuffled.infill_gold(solver, batch)  # tests read the gold as written


def test_the_published_epoch_schedule_is_scaled_to_the_run():
    """Issue 48: on the converged study's 30 epochs the published constants (hold 20 epochs, ×0.99)
    ended at 0.99^10 = 0.904, close to teacher forcing (its runs recorded final_epsilon 0.904); scaled,
    'ε per epoch (published)' holds 6 of 30 epochs and ends where the published 100-epoch run ends."""
    by_epoch = PseDualConfig(epsilon_schedule="epoch")
    assert (hold_epochs(by_epoch, 30), hold_epochs(by_epoch, 100), hold_epochs(by_epoch, 4)) == (6, 20, 0)
    assert epoch_decay(by_epoch, 100) == pytest.approx(0.99)
    assert epoch_decay(by_epoch, 30) == pytest.approx(0.99 ** (80 / 24))
    for epochs in (1, 4, 30, 80, 100, 150):
        assert final(by_epoch, 23, epochs)[0] == pytest.approx(0.99 ** 80), epochs
        assert warning(by_epoch, 23, epochs) is None, epochs
    assert [epsilon(by_epoch, Clock(e * 23, 23, 30)) for e in (5, 6)] == [1.0, pytest.approx(0.99 ** (80 / 24))]
    # the other schedules keep their numbers: horizon ends at epsilon_final, step at r^t
    assert final(PseDualConfig(), 23, 30)[0] == 0.5
    with pytest.raises(ValueError, match="epsilon_hold_epochs holds epochs of the published 100-epoch run"):
        PseDualConfig(epsilon_hold_epochs=100)
