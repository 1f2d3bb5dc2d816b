"""The reexamining module: schedules, expression graphs, gradients, permutation, overfitting (small models)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from psedual.metrics import infilling_accuracy, perfect_match_ratio
from psedual.reexamine import PseDualConfig, Reexaminer
from psedual.reexamine import config as reexamine_config
from psedual.reexamine.expression import EXPRESSION_ENCODERS, batch_edge_index, tree_edges
from psedual.reexamine.schedules import epsilon, tau
from psedual.reexamine.targets import UNUSED, allowed_targets, canonical_answers, used_slots
from psedual.solvers import SOLVERS, get_solver
from psedual.solvers.batch import collate
from psedual.solvers.config import SolverConfig, inference
from psedual.solvers.vocab import Vocab

ALL = sorted(SOLVERS)
pytestmark = pytest.mark.usefixtures("one_thread")
SMALL = SolverConfig(embedding_size=32, hidden_size=64, layers=1, dropout=0.0)





def build(name, vocab, seed=0, **psedual):
    torch.manual_seed(seed)
    solver_cls, _ = get_solver(name)
    solver = solver_cls(vocab, SMALL)
    return solver, Reexaminer(vocab, SMALL, PseDualConfig(**psedual))


# --- config and schedules ------------------------------------------------------------

def test_config_names_match_the_registry_and_bad_values_fail():
    assert reexamine_config.EXPRESSION_ENCODERS == tuple(EXPRESSION_ENCODERS)
    with pytest.raises(ValueError, match="unknown expression encoder 'lstm'; valid: gru, gcn"):
        PseDualConfig(expression_encoder="lstm")
    with pytest.raises(ValueError, match="valid: scheduled, teacher_forcing, predicted"):
        PseDualConfig(fusion="sometimes")
    with pytest.raises(ValueError, match="tau_min"):
        PseDualConfig(tau_min=0.0)
    with pytest.raises(ValueError, match="epsilon_decay"):
        PseDualConfig(epsilon_decay=1.5)


def test_epsilon_follows_its_formulas():
    step = PseDualConfig()
    assert epsilon(step, 0, 0) == 1.0
    assert epsilon(step, 1000, 7) == pytest.approx(math.exp(1000 * math.log(0.99999)), rel=1e-12)
    assert epsilon(replace(step, epsilon0=0.8), 50_000, 0) == pytest.approx(0.8 * 0.99999 ** 50_000)
    by_epoch = PseDualConfig(epsilon_schedule="epoch")
    assert [epsilon(by_epoch, 12345, e) for e in (0, 19)] == [1.0, 1.0]  # held for 20 epochs
    assert epsilon(by_epoch, 0, 20) == pytest.approx(0.99)
    assert epsilon(by_epoch, 0, 79) == pytest.approx(0.99 ** 60)
    assert epsilon(PseDualConfig(fusion="teacher_forcing"), 10 ** 9, 99) == 1.0
    assert epsilon(PseDualConfig(fusion="predicted"), 0, 0) == 0.0


def test_tau_follows_its_formula():
    c = PseDualConfig()
    assert tau(c, 0) == tau(c, 99) == 1.0  # changes every 100 steps
    assert tau(c, 100) == pytest.approx(math.exp(-3e-3))
    assert tau(c, 250) == pytest.approx(math.exp(-6e-3))
    assert tau(c, 23_100) == pytest.approx(math.exp(-0.693))  # just above the floor
    assert tau(c, 23_200) == 0.5 and tau(c, 10 ** 7) == 0.5
    assert tau(replace(c, tau0=2.0, tau_interval=10), 15) == pytest.approx(2.0 * math.exp(-3e-4))


# --- expressions and targets -----------------------------------------------------------

def test_gcn_graph_of_a_known_expression(vocab):
    ids = vocab.output_ids(["*", "+", "N0", "N1", "N2"])
    assert tree_edges(ids, len(vocab.operators)) == [(0, 1), (1, 2), (1, 3), (0, 4)]
    tokens = torch.tensor([vocab.output_ids(["N0"]) + [-1] * 4, ids])  # a lone leaf has no edges
    edges = {tuple(e) for e in batch_edge_index(tokens, len(vocab.operators)).t().tolist()}
    one_way = {(5, 6), (6, 7), (6, 8), (5, 9)}  # the second expression's nodes are 5..9
    assert edges == one_way | {(c, p) for p, c in one_way}
    assert tree_edges(vocab.output_ids(["-", "N0"]), len(vocab.operators)) == [(0, 1)]  # cut short


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
                "dns": ["out.weight", "cell.weight_hh", "combine.weight"]}


@pytest.mark.parametrize("encoder", ["gru", "gcn"])
@pytest.mark.parametrize("name", ALL)
def test_infilling_gradient_reaches_the_decoder_only_straight_through(mawps, vocab, name, encoder):
    batch = collate(mawps.train[:16], vocab)
    grads = {}
    for qp in ("straight_through", "none"):
        solver, reexaminer = build(name, vocab, expression_encoder=encoder, fusion="predicted", qp_gradient=qp)
        torch.manual_seed(1)
        out = reexaminer(solver, batch, solver.encode(batch), step=0, epoch=0)
        out.loss.backward()
        params = dict(solver.named_parameters())
        grads[qp] = [0.0 if params[n].grad is None else params[n].grad.abs().sum().item() for n in DECODER_ONLY[name]]
        assert params["encoder.embed.weight"].grad.abs().sum() > 0  # the shared encoder learns either way
    assert all(g > 0 for g in grads["straight_through"])
    assert grads["none"] == [0.0] * len(DECODER_ONLY[name])


@pytest.mark.parametrize("encoder", ["gru", "gcn"])
@pytest.mark.parametrize("name", ALL)
def test_permuting_a_batch_permutes_the_infilling(mawps, vocab, name, encoder):
    problems = mawps.train[:12]
    perm = [5, 0, 11, 3, 1, 9, 2, 10, 4, 8, 7, 6]
    solver, reexaminer = build(name, vocab, expression_encoder=encoder, fusion="teacher_forcing")
    with inference(solver), inference(reexaminer):
        a = reexaminer(solver, collate(problems, vocab), solver.encode(collate(problems, vocab)), 0, 0)
        pb = collate([problems[i] for i in perm], vocab)
        b = reexaminer(solver, pb, solver.encode(pb), 0, 0)
    assert torch.allclose(b.logits, a.logits[perm], atol=1e-5)
    assert torch.equal(b.allowed, a.allowed[perm])
    assert b.loss.item() == pytest.approx(a.loss.item(), abs=1e-6)


@pytest.mark.parametrize("encoder", ["gru", "gcn"])
def test_the_infiller_overfits_a_tiny_set(mawps, vocab, encoder):
    problems = [p for p in mawps.train if len(p.numbers) >= 3][:16]  # has unused numbers too
    batch = collate(problems, vocab)
    solver, reexaminer = build("gts", vocab, expression_encoder=encoder, fusion="teacher_forcing")
    opt = torch.optim.Adam([*solver.parameters(), *reexaminer.parameters()], 1e-2)
    for _ in range(150):
        loss = reexaminer(solver, batch, solver.encode(batch), 0, 0).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
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
    r = solver.rollout(batch, solver.encode(batch), reexaminer._pick(1.0), max_length=7)
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
    reexaminer(solver, batch, solver.encode(batch), 0, 0).loss.backward()
    assert reexaminer.problem.embed.weight.grad.abs().sum() > 0
    assert solver.encoder.embed.weight.grad is None  # the solver's encoder is not used


# Solver loss + infilling loss of two seeded Adam steps (GCN, ε decaying by half per step so
# sampled expressions count from the first step; 32 MAWPS problems, dropout 0.5).
PINNED = {"gts": [3.5174882411956787, 3.4808402061462402], "dns": [3.551985263824463, 3.5208802223205566],
          "graph2tree": [3.7394752502441406, 3.5298075675964355]}


@pytest.mark.parametrize("name", ALL)
def test_loss_of_two_seeded_psedual_steps_is_pinned(mawps, vocab, name):
    torch.manual_seed(0)
    solver_cls, _ = get_solver(name)
    config = replace(SMALL, dropout=0.5)
    solver = solver_cls(vocab, config)
    reexaminer = Reexaminer(vocab, config, PseDualConfig(expression_encoder="gcn", epsilon_decay=0.5))
    opt = torch.optim.Adam([*solver.parameters(), *reexaminer.parameters()], 1e-3)
    batch = collate(mawps.train[:32], vocab)
    losses = []
    for step in range(2):
        enc = solver.encode(batch)
        loss = solver.loss(batch, enc) + reexaminer(solver, batch, enc, step, 0).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses == PINNED[name]
