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
after every node that read the alias has run its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn


class _Gather(torch.autograd.Function):
    """Aliases of a Linear's weight and bias; their backward is the layer's gradients from every
    step kept in `bank` (each step returns none for them)."""

    @staticmethod
    def forward(ctx, weight, bias, bank):
        ctx.bank, ctx.has_bias = bank, bias is not None
        ctx.set_materialize_grads(False)
        return weight.view_as(weight), (bias.view_as(bias) if bias is not None else None)

    @staticmethod
    def backward(ctx, _weight_grad, _bias_grad):
        if not ctx.bank:
            return None, None, None
        rows = torch.cat([x for x, _ in ctx.bank])
        grads = torch.cat([g for _, g in ctx.bank])
        ctx.bank.clear()
        return grads.t().mm(rows), (grads.sum(0) if ctx.has_bias else None), None


class _Step(torch.autograd.Function):
    """`F.linear` at one step; its backward returns the input's gradient and banks the rest."""

    @staticmethod
    def forward(ctx, x, weight, bias, bank):
        ctx.save_for_backward(x, weight)
        ctx.bank = bank
        return F.linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        ctx.bank.append((x, grad))
        return (grad.mm(weight) if ctx.needs_input_grad[0] else None), None, None, None


@contextlib.contextmanager
def deferred_weight_grads(model: nn.Module) -> Iterator[None]:
    """Within: every `nn.Linear` of `model` called on rows [R, in] (2-D, as a decoder step's
    are) with gradient on has its weight's and bias's gradients computed once, after the last
    step's backward. A call on other shapes, without gradient or under autocast is the layer's own."""
    if not torch.is_grad_enabled():
        yield
        return
    layers = [m for m in model.modules() if type(m) is nn.Linear]
    for layer in layers:
        bank: list[tuple[torch.Tensor, torch.Tensor]] = []
        weight, bias = _Gather.apply(layer.weight, layer.bias, bank)
        layer.forward = _stepper(layer, weight, bias, bank)
    try:
        yield
    finally:
        for layer in layers:
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
