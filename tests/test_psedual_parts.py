"""bench/psedual_parts.py's account of the PseDual step (issue 59): token counts, the decoder's passes alone
from the encoder's outputs as leaves, and the floor they imply."""

from __future__ import annotations

import collections
import importlib.util
import re
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import torch

from psedual.reexamine import PseDualConfig, Reexaminer
from psedual.reexamine.module import GumbelNoise
from psedual.solvers import SOLVERS
from psedual.solvers.batch import collate, gold_tokens
from psedual.solvers.config import SolverConfig

ROOT = Path(__file__).parent.parent
SMALL = SolverConfig(embedding_size=32, hidden_size=64, layers=1)


@pytest.fixture(scope="module")
def parts():
    spec = importlib.util.spec_from_file_location("psedual_parts", ROOT / "bench" / "psedual_parts.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "bench"))  # it imports train_speed beside it, as `python bench/...` would
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return module


def _arm(vocab, solver: str):
    torch.manual_seed(0)
    model = SOLVERS[solver](vocab, SMALL)
    return model, Reexaminer(vocab, SMALL, PseDualConfig(expression_encoder="gcn"))


def _graded(model) -> set[str]:
    return {name for name, p in model.named_parameters() if p.grad is not None}


def _encoding_parameters(model, batch) -> set[str]:
    """The parameters a backward from every floating field of `model`'s encoding reaches."""
    enc = model.encode(batch)
    floating = [getattr(enc, f.name) for f in fields(enc)]
    sum(t.sum() for t in floating if isinstance(t, torch.Tensor) and t.is_floating_point()).backward()
    reached = _graded(model)
    model.zero_grad(set_to_none=True)
    return reached


@pytest.mark.parametrize("solver", ["gts", "graph2tree"])
def test_leaves_stop_the_backward_at_the_encoders_outputs(parts, mawps, vocab, solver, one_thread):
    model, _ = _arm(vocab, solver)
    batch = collate(mawps.train[:8], vocab)
    encoding = _encoding_parameters(model, batch)
    assert any(name.startswith("encoder.") for name in encoding)
    enc = parts.leaves(model.encode(batch))
    model.loss(batch, enc).backward()
    assert _graded(model) and not _graded(model) & encoding  # the decoder's took theirs, the encoding's none
    assert enc.outputs.grad is not None and enc.problem.grad is not None
    assert not enc.mask.requires_grad  # not a floating field: no gradient asked for


@pytest.mark.parametrize("solver", ["gts", "graph2tree"])
def test_decoder_alone_counts_what_it_decoded_and_stops_at_the_encoder(parts, mawps, vocab, solver, one_thread,
                                                                       monkeypatch):
    model, reexaminer = _arm(vocab, solver)
    batch = collate(mawps.train[:8], vocab)
    encoding = _encoding_parameters(model, batch)
    rollouts, plain = [], type(model).rollout

    def kept(self, *args):
        rollouts.append(plain(self, *args))
        return rollouts[-1]

    monkeypatch.setattr(type(model), "rollout", kept)
    # the bench's timers wrap the instance's methods: these passes must not add to a step's parts
    clock = collections.defaultdict(float)
    model.encode = parts.timing(clock, "encoder", model.encode)
    model.loss = parts.timing(clock, "loss", model.loss)
    alone = parts.decoder_alone(model, reexaminer, batch)
    assert not clock
    [rollout] = rollouts
    max_length = reexaminer.config.max_length_factor * batch.targets.shape[1] + 1
    assert alone["sampled"] == sum(len(ids) for ids in rollout.ids) > 0
    assert all(len(ids) <= max_length for ids in rollout.ids)
    assert alone["gold"] == gold_tokens(batch.problems) > 0
    assert alone["rollout"] > 0 and alone["teacher-forced"] > 0
    assert _graded(model) and not _graded(model) & encoding


def test_counting_adds_the_tokens_of_each_rollout(parts, mawps, vocab, one_thread):
    model, reexaminer = _arm(vocab, "gts")
    counts = collections.defaultdict(int)
    rollout = parts.counting(counts, model.rollout)
    written = 0
    for problems in (mawps.train[:4], mawps.train[4:10]):
        batch = collate(problems, vocab)
        out = rollout(batch, model.encode(batch), reexaminer._pick(1.0, GumbelNoise(
            [p.id for p in problems], 9, len(vocab.output_tokens), torch.device("cpu"))), 9)
        written += sum(len(ids) for ids in out.ids)
    assert counts == {"sampled": written} and written > 0


def test_the_floor_is_the_base_step_plus_the_sampled_tokens_at_the_teacher_forced_cost(parts):
    clock = collections.defaultdict(float, {
        "base forward": 0.8, "base backward": 1.0, "base optimiser": 0.2,  # 1.0 s a step over 2
        "gcn forward": 1.2, "gcn backward": 1.6, "gcn optimiser": 0.24,  # 1.52 s a step
        "    expression encoder (gold and sample)": 0.04, "    infiller": 0.02})
    # teacher forcing 1 ms a gold token, the rollout 1.5 ms a sampled one; 300 sampled tokens a batch
    alone = {"rollout": 0.9, "sampled": 600, "teacher-forced": 0.4, "gold": 400}
    lines = parts.floor_lines(clock, alone, {"sampled": 600, "gold": 400}, "gcn", 2)
    text = "\n".join(lines)
    assert "sampled 300.0 (the PseDual step's rollouts), gold 200.0, ratio 1.50" in text
    assert re.search(r"rollout\s+450\.0 ms/batch\s+1\.500 ms/token", text)
    assert re.search(r"teacher-forced\s+200\.0 ms/batch\s+1\.000 ms/token", text)
    assert "rollout / teacher-forced: 1.50" in text
    # (1.0 + 300 x 1 ms + 0.03 + 0.02 extra optimiser) / 1.0
    assert "optimiser 50 ms) / base step = 1.35x, measured 1.52x" in text


def test_the_bench_prints_the_gold_tokens_of_its_batches(parts, mawps, monkeypatch, capsys):
    """End to end on MAWPS: the tokens line counts the timed batches' gold (the first batch is the
    warm-up's) and a floor is printed above the base step."""
    monkeypatch.setattr(sys, "argv", ["psedual_parts.py", "--dataset", "mawps", "--batches", "2", "--rounds", "1",
                                      "--batch-size", "4", "--clock", "cpu"])
    threads = torch.get_num_threads()
    try:
        parts.main()
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    train = list(mawps.train)
    gold = gold_tokens(train[4:12]) / 2
    assert f"gold {gold:.1f}, ratio" in out
    floor = float(re.search(r"base step = ([\d.]+)x", out).group(1))
    assert floor > 1.0
