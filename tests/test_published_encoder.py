"""`model.problem_vector: published` against the published GTS encoder's own tensors, side by side
(as ../shared/bench/gts_side_by_side.py runs the published code beside ours).

The published code (github ShichaoSun/math_seq2tree@d2310d0) is not part of the project. Its
src/models.py is read at run time, never copied into the package: from $PSEDUAL_GTS_REFERENCE (a
checkout) if set, else from a git mirror at ../.mirror/ShichaoSun+math_seq2tree/repo; it imports
only torch, so it is imported as it is. Without either, the tests check against `_LiteralEncoder`,
the published forward written out (src/models.py:177-188), and warn that they do.

The published encoder is trained on padded batches (src/train_and_evaluate.py:664, `transpose(0, 1)`)
and tested on batches of one (:776, `unsqueeze(1)`); `published` must equal the first in training
and the second at test, however we batch.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from psedual.data.config import DataConfig
from psedual.solvers.config import SolverConfig
from psedual.solvers.encoder import WordEncoder
from psedual.train.config import TrainConfig

PUBLISHED_COMMIT = "d2310d08818ef073d75a3e736f2c0ee0c0aac02a"
MIRROR = Path(__file__).resolve().parents[1].parent / ".mirror" / "ShichaoSun+math_seq2tree" / "repo"
E, H, LAYERS, WORDS = 6, 5, 2, 20
LENGTHS = [4, 7, 2, 7, 5]  # unsorted, two of the longest: ours batches in any order


class _LiteralEncoder(nn.Module):
    """The published EncoderSeq's forward, written out from src/models.py:163-188 at d2310d0 (used
    only where that file cannot be read): embedding, dropout, a packed bidirectional GRU over
    S x B inputs sorted longest first, and the problem vector of line 186."""

    def __init__(self, input_size, embedding_size, hidden_size, n_layers=2, dropout=0.5):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, embedding_size, padding_idx=0)
        self.em_dropout = nn.Dropout(dropout)
        self.gru_pade = nn.GRU(embedding_size, hidden_size, n_layers, dropout=dropout, bidirectional=True)

    def forward(self, input_seqs, input_lengths, hidden=None):
        embedded = self.em_dropout(self.embedding(input_seqs))
        packed = nn.utils.rnn.pack_padded_sequence(embedded, input_lengths)
        pade_outputs, _ = self.gru_pade(packed, hidden)
        pade_outputs, _ = nn.utils.rnn.pad_packed_sequence(pade_outputs)
        # src/models.py:186, the line under test
        problem_output = pade_outputs[-1, :, :self.hidden_size] + pade_outputs[0, :, self.hidden_size:]
        pade_outputs = pade_outputs[:, :, :self.hidden_size] + pade_outputs[:, :, self.hidden_size:]
        return pade_outputs, problem_output


def _published_source(tmp: Path) -> Path | None:
    """The published src/models.py, as a file under `tmp`; None where neither source exists."""
    checkout = os.environ.get("PSEDUAL_GTS_REFERENCE")
    if checkout:
        return Path(checkout) / "src" / "models.py"
    if not MIRROR.is_dir():
        return None
    text = subprocess.run(["git", "--git-dir", str(MIRROR), "show", f"{PUBLISHED_COMMIT}:src/models.py"],
                          capture_output=True, text=True, check=True).stdout
    path = tmp / "published_gts_models.py"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def published_class(tmp_path_factory):
    path = _published_source(tmp_path_factory.mktemp("published"))
    if path is None:
        warnings.warn(f"the published GTS code is neither at $PSEDUAL_GTS_REFERENCE nor at {MIRROR}: checking "
                      "against its forward as written out in this test", UserWarning, stacklevel=1)
        return _LiteralEncoder
    spec = importlib.util.spec_from_file_location("published_gts_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EncoderSeq


def _pair(published_class, problem_vector: str):
    """Ours and the published encoder with the same weights, no dropout (so training mode is
    deterministic on both sides)."""
    torch.manual_seed(0)
    ours = WordEncoder(WORDS, SolverConfig(E, H, LAYERS, 0.0), problem_vector).double()
    theirs = published_class(WORDS, E, H, n_layers=LAYERS, dropout=0.0).double()
    theirs.embedding.load_state_dict(ours.embed.state_dict())
    theirs.gru_pade.load_state_dict(ours.gru.state_dict())  # nn.GRU's names; batch_first changes no weight
    return ours, theirs


def _batch():
    """A padded [B, T] batch (T beyond the longest, as our collate may pad) and its lengths."""
    torch.manual_seed(1)
    words = torch.zeros(len(LENGTHS), max(LENGTHS) + 2, dtype=torch.long)
    for b, n in enumerate(LENGTHS):
        words[b, :n] = torch.randint(1, WORDS, (n,))
    return SimpleNamespace(words=words, lengths=torch.tensor(LENGTHS))


def _published_training(theirs, batch) -> tuple[torch.Tensor, torch.Tensor]:
    """The published encoder on the whole batch as its training feeds it (sorted longest first,
    S x B, padded to the longest): states [B, T, H] and problem vectors [B, H] in our order."""
    order = sorted(range(len(LENGTHS)), key=lambda b: -LENGTHS[b])
    T = max(LENGTHS)
    states, problem = theirs(batch.words[order, :T].t(), [LENGTHS[b] for b in order])
    back = torch.tensor(order).argsort()
    return states.transpose(0, 1)[back], problem[back]


def _published_test(theirs, batch) -> torch.Tensor:
    """The published encoder as its test feeds it: each problem alone (a batch of one)."""
    return torch.cat([theirs(batch.words[b, :n].unsqueeze(1), [n])[1] for b, n in enumerate(LENGTHS)])


def test_published_read_equals_the_published_encoder_in_training_and_at_test(published_class):
    ours, theirs = _pair(published_class, "published")
    batch = _batch()
    ours.train(), theirs.train()
    want_states, want_problem = _published_training(theirs, batch)
    states, problem = ours(batch)
    assert torch.allclose(states[:, :max(LENGTHS)], want_states, atol=1e-12)
    assert torch.allclose(problem, want_problem, atol=1e-12)
    ours.eval(), theirs.eval()
    with torch.no_grad():
        assert torch.allclose(ours(batch)[1], _published_test(theirs, batch), atol=1e-12)


def test_final_state_differs_from_the_published_training_read_exactly_on_the_shorter_problems(published_class):
    ours, theirs = _pair(published_class, "final_state")
    batch = _batch()
    ours.train(), theirs.train()
    _, published_training = _published_training(theirs, batch)
    problem = ours(batch)[1]
    same = torch.isclose(problem, published_training, atol=1e-12).all(1)
    assert same.tolist() == [n == max(LENGTHS) for n in LENGTHS]
    # and it is the published test-time read (the true final state), batched or not
    assert torch.allclose(problem, _published_test(theirs, batch), atol=1e-12)


def test_the_published_read_gives_the_shorter_problems_no_forward_gradient(published_class):
    """Padding carries no gradient in the published code: the last layer's forward direction reaches
    a shorter problem's vector through nothing (its reverse half reads that layer's reverse weights)."""
    ours, _ = _pair(published_class, "published")
    batch = _batch()
    _, problem = ours(batch)
    forward_last_layer = ours.gru.weight_hh_l1
    (shortest,) = torch.autograd.grad(problem[2].sum(), forward_last_layer, retain_graph=True)  # length 2
    (longest,) = torch.autograd.grad(problem[1].sum(), forward_last_layer)  # length 7
    assert not shortest.any() and longest.abs().sum() > 0


def test_gts_and_graph2tree_pass_the_setting_to_their_encoder_and_other_solvers_refuse_it():
    from psedual.data.cache import load_dataset
    from psedual.data.splits import split_dataset
    from psedual.solvers import get_solver
    from psedual.solvers.vocab import Vocab

    splits = split_dataset(load_dataset("mawps"), DataConfig("mawps", fold=0, train_size=50))
    vocab = Vocab.build(list(splits.train), splits.constants, 1)
    published = SolverConfig(16, 32, 1, 0.0, problem_vector="published")
    for solver in ("gts", "graph2tree"):
        TrainConfig(DataConfig("mawps", fold=0), solver=solver, model=published)
        assert get_solver(solver)(vocab, published).encoder.problem_vector == "published"
        assert get_solver(solver)(vocab, SolverConfig(16, 32, 1, 0.0)).encoder.problem_vector == "final_state"
    for solver in ("dns", "bert_tree", "re_deduction"):
        with pytest.raises(ValueError, match="problem_vector 'published' is read by gts, graph2tree only"):
            TrainConfig(DataConfig("mawps", fold=0), solver=solver, model=published)
    with pytest.raises(ValueError, match="unknown problem_vector 'padded'; valid: final_state, published"):
        SolverConfig(problem_vector="padded")
