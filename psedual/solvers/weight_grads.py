"""One weight gradient per layer for a sequential decoder, instead of one per step.

A rollout calls each decoder Linear once a step, on the few rows still writing (1 to 64 on a
batch of 64). Autograd then computes, at every step, that step's weight gradient (a [out, in]
matrix from a product with the step's few rows) and adds it into the running sum: on a CPU both
are as dear as the step's own product, as they read and write the whole matrix whatever the rows
(a [512, 1152] weight gradient from 2 rows: 170 µs, its sum 100 µs, measured with torch.profiler).
Inside `deferred_weight_grads`, a Linear's backward at a step computes only its input's gradient
and keeps the step's rows and output gradients; after the last step's backward, one product over
all steps' rows gives the weight's gradient, and one sum the bias's. The same gradients up to the
order of a float sum; the input gradients, and so everything upstream, are the same bits.

The last step's backward is known by autograd's own order: each step's Linear reads the weight
through one alias made at the context's start (`_Gather`), whose backward autograd runs only
after every node that read the alias has run its own. Each kept row is tagged with its backward
pass (autograd's graph task id, as torch.utils.checkpoint reads it), so a pass that never reached
`_Gather` (`torch.autograd.grad(loss, x)`, `backward(inputs=...)`) leaves nothing that a later
pass would count twice. Not differentiable twice (`create_graph=True` raises).

One rollout per model at a time: the context sets each layer's `forward` on the instance, which
every thread calling the model sees, and which a `copy.deepcopy` or `pickle` made inside it
would carry (checkpoints save `state_dict`s, outside rollouts).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.function import once_differentiable


class _Gather(torch.autograd.Function):
    """Aliases of a Linear's weight and bias; their backward is the layer's gradients from every
    step kept in `bank` (each step returns none for them)."""

    @staticmethod
    def forward(ctx, weight, bias, bank):
        ctx.bank, ctx.has_bias = bank, bias is not None
        ctx.set_materialize_grads(False)
        return weight.view_as(weight), (bias.view_as(bias) if bias is not None else None)

    @staticmethod
    @once_differentiable
    def backward(ctx, _weight_grad, _bias_grad):
        task = torch._C._current_graph_task_id()
        mine = [(x, g) for t, x, g in ctx.bank if t == task]  # a pass that never came here left its own
        ctx.bank.clear()
        if not mine:
            return None, None, None
        grads = torch.cat([g for _, g in mine])
        weight = grads.t().mm(torch.cat([x for x, _ in mine])) if ctx.needs_input_grad[0] else None
        return weight, (grads.sum(0) if ctx.has_bias and ctx.needs_input_grad[1] else None), None


class _Step(torch.autograd.Function):
    """`F.linear` at one step; its backward returns the input's gradient and banks the rest."""

    @staticmethod
    def forward(ctx, x, weight, bias, bank):
        ctx.save_for_backward(x, weight)
        ctx.bank = bank
        return F.linear(x, weight, bias)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        if ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
            ctx.bank.append((torch._C._current_graph_task_id(), x, grad))
        return (grad.mm(weight) if ctx.needs_input_grad[0] else None), None, None, None


@contextlib.contextmanager
def deferred_weight_grads(model: nn.Module) -> Iterator[None]:
    """Within: every `nn.Linear` of `model` called on rows [R, in] (2-D, as a decoder step's
    are) with gradient on has its weight's and bias's gradients computed once, after the last
    step's backward. A call on other shapes, without gradient or under autocast is the layer's own;
    so is a layer already wrapped on its instance (a context inside another changes nothing)."""
    if not torch.is_grad_enabled():
        yield
        return
    patched: list[nn.Linear] = []
    try:
        for layer in model.modules():
            # a layer whose instance already has a forward (an outer context's, or someone else's
            # wrapper) is left as it is, and so is restored by whoever set it
            if type(layer) is nn.Linear and "forward" not in vars(layer):
                bank: list[tuple[int, torch.Tensor, torch.Tensor]] = []
                weight, bias = _Gather.apply(layer.weight, layer.bias, bank)
                layer.forward = _stepper(layer, weight, bias, bank)
                patched.append(layer)
        yield
    finally:
        for layer in patched:
            del layer.forward


def _stepper(layer: nn.Linear, weight: torch.Tensor, bias: torch.Tensor | None, bank: list):
    """`layer`'s forward inside the context: a deferred step over the aliases `weight` and `bias`
    where it may be one, else the class's own forward."""
    own = type(layer).forward.__get__(layer)

    def forward(x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2 or not torch.is_grad_enabled() or torch.is_autocast_enabled(x.device.type):
            return own(x)
        return _Step.apply(x, weight, bias, bank)
    return forward
