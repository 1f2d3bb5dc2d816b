"""A decoder layer's weight gradient computed once over its steps (`solvers.weight_grads`): the
gradients autograd gives step by step, in one product over every step's rows."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from psedual.solvers import get_solver
from psedual.solvers.batch import collate
from psedual.solvers.config import SolverConfig
from psedual.solvers.weight_grads import deferred_weight_grads

pytestmark = pytest.mark.usefixtures("one_thread")


class Loop(nn.Module):
    """A toy sequential decoder: each step runs fewer rows through two Linears (one without a
    bias), and one 3-D call that the deferral leaves to the layer."""

    def __init__(self) -> None:
        super().__init__()
        self.cell, self.out = nn.Linear(6, 6), nn.Linear(6, 3, bias=False)
        self.wide = nn.Linear(6, 2)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        total = self.wide(h.unsqueeze(0).expand(2, -1, -1)).sum()
        for rows in (5, 3, 1, 2):
            h = torch.tanh(self.cell(h[:rows])) + h[:rows]
            total = total + (self.out(h) ** 2).sum()
        return total


def _backward_names(t: torch.Tensor) -> set[str]:
    """The names of the backward nodes of `t`'s graph."""
    names, todo, seen = set(), [t.grad_fn], set()
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.add(node.name())
        todo += [n for n, _ in node.next_functions]
    return names


def _grads(module: nn.Module, x: torch.Tensor, deferred: bool) -> tuple[list[torch.Tensor], set[str]]:
    """The gradients of `x` and of `module`'s parameters, and the names of the graph's backward nodes."""
    module.zero_grad()
    x = x.detach().requires_grad_()
    with deferred_weight_grads(module) if deferred else torch.enable_grad():
        loss = module(x)
    names = _backward_names(loss)
    loss.backward()
    return [x.grad] + [p.grad for p in module.parameters()], names


def _plain_then_fresh() -> tuple[Loop, torch.Tensor, list[torch.Tensor]]:
    """A seeded `Loop`, an input that asks for its gradient, and plain autograd's gradients of both
    (the module's cleared again)."""
    torch.manual_seed(0)
    loop, x = Loop(), torch.randn(5, 6)
    plain, _ = _grads(loop, x, deferred=False)
    loop.zero_grad()
    return loop, x.detach().requires_grad_(), plain


def _assert_plain(loop: Loop, x: torch.Tensor, plain: list[torch.Tensor]) -> None:
    """`x`'s and `loop`'s gradients are `plain`'s, to a float sum's order."""
    for a, b in zip([x.grad] + [p.grad for p in loop.parameters()], plain, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_the_gradients_are_autograd_s_the_inputs_to_the_bit():
    torch.manual_seed(0)
    loop, x = Loop(), torch.randn(5, 6)
    plain, plain_nodes = _grads(loop, x, deferred=False)
    ours, our_nodes = _grads(loop, x, deferred=True)
    assert "_StepBackward" in our_nodes and "_StepBackward" not in plain_nodes  # deferred, or this proves nothing
    assert torch.equal(ours[0], plain[0])  # the input's gradient: the same products, the same bits
    assert len(ours) == len(plain) == 6
    for a, b in zip(ours[1:], plain[1:]):
        assert a is not None and a.abs().sum() > 0
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)  # one sum over the steps, in another order


def test_the_layers_are_their_own_after_and_without_gradient():
    torch.manual_seed(0)
    loop, x = Loop(), torch.randn(5, 6)
    with deferred_weight_grads(loop):
        assert "forward" in vars(loop.cell)
    assert not any("forward" in vars(m) for m in loop.modules())  # the class's forward again
    with pytest.raises(RuntimeError, match="boom"), deferred_weight_grads(loop):
        raise RuntimeError("boom")
    assert not any("forward" in vars(m) for m in loop.modules())  # also after an error
    with torch.no_grad(), deferred_weight_grads(loop):
        assert not any("forward" in vars(m) for m in loop.modules())
        assert torch.equal(loop(x), Loop.forward(loop, x))


def test_a_pass_that_stops_short_of_the_weights_leaves_nothing_behind():
    """`autograd.grad(loss, x)` (or `backward(inputs=...)`) runs the steps' backward but not the
    weights': a later full backward must count each step once, not its rows from both passes."""
    loop, x, plain = _plain_then_fresh()
    with deferred_weight_grads(loop):
        loss = loop(x)
    torch.autograd.grad(loss, x, retain_graph=True)
    loss.backward(inputs=[x], retain_graph=True)
    x.grad = None
    loss.backward()
    _assert_plain(loop, x, plain)


def test_a_second_derivative_is_refused_not_wrong():
    torch.manual_seed(0)
    loop, x = Loop(), torch.randn(5, 6, requires_grad=True)
    with deferred_weight_grads(loop):
        loss = loop(x)
    (g,) = torch.autograd.grad(loss, x, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable|differentiate twice"):
        g.sum().backward()


def test_a_context_inside_another_changes_nothing_and_an_error_comes_out_as_raised():
    loop, x, plain = _plain_then_fresh()
    with deferred_weight_grads(loop):
        outer = loop.cell.forward
        with deferred_weight_grads(loop):
            assert loop.cell.forward is outer  # the outer context's, left as it was
            loss = loop(x)
        assert loop.cell.forward is outer  # the inner exit took nothing away
    loss.backward()
    _assert_plain(loop, x, plain)
    with pytest.raises(ValueError, match="inner"), deferred_weight_grads(loop), deferred_weight_grads(loop):
        raise ValueError("inner")
    assert not any("forward" in vars(m) for m in loop.modules())


def test_under_autocast_a_layer_runs_as_its_own():
    """CPU autocast runs a Linear in bf16; the deferred step would mix dtypes in its backward, so
    under autocast the layer's own forward runs (same outputs, gradients in the weight's dtype)."""
    torch.manual_seed(0)
    loop, x = Loop(), torch.randn(5, 6)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = loop(x)
        with deferred_weight_grads(loop):
            got = loop(x)
    assert torch.equal(got, expected)
    got.backward()
    assert loop.cell.weight.grad.dtype == torch.float32 and loop.cell.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("masked", [False, True])
def test_the_tree_rollout_defers_its_layers(mawps, vocab, masked):
    """The rows rollout (a CPU's) and the masked one (a GPU's, eager) run their decoder's Linears
    deferred: the pinned fingerprints (tests/test_rollout_device.py) hold either way, so this is
    what sees the deferral go."""
    from psedual.solvers.rollout import MASKED_DEVICES

    torch.manual_seed(0)
    model = get_solver("gts")(vocab, SolverConfig(embedding_size=16, hidden_size=24, layers=1, dropout=0.0))
    batch = collate(mawps.train[:6], vocab)
    enc = model.encode(batch)

    def pick(scores, rows, position):
        soft = torch.softmax(scores, -1)
        return torch.nn.functional.one_hot(soft.argmax(-1), scores.shape[-1]).to(soft.dtype) - soft.detach() + soft

    if masked:
        MASKED_DEVICES.add("cpu")
    try:
        rollout = model.rollout(batch, enc, pick, 12)
    finally:
        MASKED_DEVICES.discard("cpu")
    names = _backward_names(rollout.choices)
    assert "_StepBackward" in names and "_GatherBackward" in names
    rollout.choices.sum().backward()
    assert model.gate_l.weight.grad.abs().sum() > 0
