"""The fused bidirectional GRU of the word encoder equals `nn.GRU` over packed sequences."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from psedual.solvers.encoder import Layout, bidirectional_gru


def reference(gru: nn.GRU, x: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, h_n = gru(packed)
    out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    H = gru.hidden_size
    return out[..., :H] + out[..., H:], h_n[-2:]  # the last layer's final states: forward, reverse


@pytest.mark.parametrize("layers", [1, 2, 3])
@pytest.mark.parametrize("lengths", [[5, 9, 3, 9, 1, 7], [4, 4, 4], [1], [2, 11]])
def test_outputs_and_gradients_equal_nn_gru(layers, lengths):
    torch.manual_seed(layers)
    gru = nn.GRU(6, 5, layers, batch_first=True, bidirectional=True).double()
    lengths = torch.tensor(lengths)
    x = torch.randn(len(lengths), 11, 6, dtype=torch.double, requires_grad=True)
    want, got = reference(gru, x, lengths), bidirectional_gru(gru, x, lengths)
    for a, b in zip(want, got):
        assert torch.allclose(a, b, atol=1e-12)
    weights = [torch.randn_like(t) for t in want]
    params = [x, *gru.parameters()]
    grads_want = torch.autograd.grad(sum((t * w).sum() for t, w in zip(want, weights)), params)
    grads_got = torch.autograd.grad(sum((t * w).sum() for t, w in zip(got, weights)), params)
    for name, a, b in zip(["x", *(n for n, _ in gru.named_parameters())], grads_want, grads_got):
        assert torch.allclose(a, b, atol=1e-12), name


def test_positions_beyond_a_length_are_zero_and_get_no_gradient():
    gru = nn.GRU(3, 4, 2, batch_first=True, bidirectional=True)
    x = torch.randn(2, 6, 3, requires_grad=True)
    out, _ = bidirectional_gru(gru, x, torch.tensor([6, 2]))
    assert out[1, 2:].abs().sum() == 0 and out[1, :2].abs().sum() > 0
    out.sum().backward()
    assert x.grad[1, 2:].abs().sum() == 0


def test_the_layout_mirrors_each_word_between_the_directions():
    at = Layout.of(torch.tensor([2, 3]), 4, torch.device("cpu"))
    assert at.steps == [2, 2, 1]
    # packed rows: step 0 (problem 1, problem 0), step 1 (1, 0), step 2 (1)
    assert at.forward.tolist() == [4, 0, 5, 1, 6]
    assert at.reverse.tolist() == [6, 1, 5, 0, 4]
    assert at.forward[at.mirror].tolist() == at.reverse.tolist()
    assert at.mirror[at.mirror].tolist() == list(range(5))
    assert at.last.tolist() == [3, 4]
    assert at.unpack.tolist() == [1, 3, 5, 5, 0, 2, 4, 5]
