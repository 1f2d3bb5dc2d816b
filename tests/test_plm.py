"""Pretrained encoders: local-only loading, exact word→subword alignment on the real datasets'
texts, the optimisation these models need, and a PLM checkpoint through `psedual solve`."""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest
import torch

from psedual.data.config import DataConfig
from psedual.data.record import NUM_TOKEN
from psedual.solvers.config import SolverConfig
from psedual.solvers.plm import WordAligner, plm_path
from psedual.train.config import TrainConfig
from psedual.train.solve import solve
from psedual.train.setup import parameter_groups
from psedual.train.trainer import StepLoss, train

TINY = SolverConfig(embedding_size=16, hidden_size=32, layers=1, dropout=0.0, plm_layers=2, plm_hidden=32)
RUN = TrainConfig(DataConfig("mawps", fold=0, train_size=32), solver="bert_tree", model=TINY, epochs=3, batch_size=16,
                  beam_size=1, lr=1e-2, plm_lr=1e-3, lr_schedule="linear", warmup_fraction=0.2, clip_grad_norm=1.0,
                  threads=1)


@pytest.fixture(scope="module")
def minilm_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(plm_path("minilm"), local_files_only=True)


def test_the_english_default_ships_in_a_package_and_other_paths_must_be_local(tmp_path):
    assert (plm_path("minilm") / "config.json").is_file() and (plm_path("minilm") / "vocab.txt").is_file()
    with pytest.raises(ValueError, match="not a local Hugging Face model directory.*nothing is downloaded.*Chinese"):
        plm_path(str(tmp_path / "bert-base-chinese"))
    with pytest.raises(ValueError, match="plm bert-base-uncased: not a local"):
        SolverConfig(plm="bert-base-uncased") and plm_path("bert-base-uncased")


def _check_alignment(aligner: WordAligner, problems) -> int:
    """Every word owns its subwords; every number slot is exactly one mask subword."""
    tok = aligner.tokenizer
    for p in problems:
        ids, first = aligner(p.tokens, p.id)
        assert len(first) == len(p.tokens) and first == sorted(set(first)), p.id
        assert first[0] == 1 and ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id, p.id
        masks = [i for i, t in enumerate(ids) if t == tok.mask_token_id]
        assert masks == [first[k] for k in p.num_pos], p.id  # one per slot, at the slot's word
        assert all(p.tokens[k] == NUM_TOKEN for k in p.num_pos)
    return len(problems)


def test_alignment_keeps_every_number_slot_in_english(datasets, minilm_tokenizer):
    aligner = WordAligner(minilm_tokenizer)
    n = sum(_check_alignment(aligner, datasets(name).problems) for name in ("mawps", "svamp"))
    assert n > 5000


def test_alignment_keeps_every_number_slot_in_chinese(datasets, tmp_path):
    """Math23K's texts under a Chinese WordPiece vocabulary (its characters, built here)."""
    from transformers import BertTokenizerFast

    problems = datasets("math23k").problems
    chars = sorted({c for p in problems[:3000] for w in p.tokens if w != NUM_TOKEN for c in w})
    (tmp_path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars]) + "\n")
    tokenizer = BertTokenizerFast(str(tmp_path / "vocab.txt"), tokenize_chinese_chars=True)
    aligner = WordAligner(tokenizer)
    assert _check_alignment(aligner, problems) > 23000
    p = next(p for p in problems if any(len(w) > 1 and w != NUM_TOKEN for w in p.tokens))
    ids, first = aligner(p.tokens, p.id)
    assert len(ids) > len(p.tokens) + 2  # multi-character words took several subwords


def test_too_long_a_problem_is_named_not_truncated(minilm_tokenizer):
    aligner = WordAligner(minilm_tokenizer)
    with pytest.raises(ValueError, match="mawps:x: 602 subwords, more than the encoder's 512 positions"):
        aligner(("apples",) * 600, "mawps:x")


def test_a_pretrained_encoder_trains_at_its_own_rate_and_the_recurrent_recipe_is_one_group(vocab):
    from psedual.solvers import get_solver

    torch.manual_seed(0)
    plm = StepLoss(get_solver("bert_tree")(vocab, TINY), None, 0.0)
    groups = parameter_groups(plm, RUN)
    assert len(groups) == 2 and groups[1]["lr"] == 1e-3 and groups[1]["weight_decay"] == 0.01
    assert sum(len(g["params"]) for g in groups) == len(list(plm.parameters()))
    assert all(p is q for p, q in zip(groups[1]["params"], plm.model.encoder.plm.parameters()))
    gts = StepLoss(get_solver("gts")(vocab, TINY), None, 0.0)
    assert [len(g["params"]) for g in parameter_groups(gts, RUN)] == [len(list(gts.parameters()))]
    with pytest.raises(ValueError, match="unknown lr_schedule 'cosine'; valid: step, linear"):
        replace(RUN, lr_schedule="cosine")


@pytest.mark.parametrize("solver", ["bert_tree", "re_deduction"])
def test_a_plm_run_warms_up_decays_and_its_checkpoint_solves(tmp_path, solver):
    result = train(replace(RUN, solver=solver), tmp_path, progress=False)
    lrs = pl.read_parquet(tmp_path / "epochs.parquet")["lr"].to_list()
    # 2 steps per epoch, 6 in all, 1 (20%) warming up: the lr read at each epoch's last step
    assert lrs == pytest.approx([1e-2 * 4 / 5, 1e-2 * 2 / 5, 0.0])
    assert result.test_value_acc >= 0.0 and (tmp_path / "best.pt").is_file()
    infix, answer = solve(tmp_path / "best.pt", "Tom has 3 apples and buys 5 more. How many apples does he have?")
    assert infix and answer


def test_gold_deduction_steps_rebuild_the_expression_and_its_answer(datasets):
    """Every MAWPS and SVAMP(-train) problem whose gold expression gives its answer: prefix → steps →
    prefix is the identity, and the steps, evaluated one by one, give the answer. The only
    exceptions are expressions without an operator (the answer is a number of the text), which
    a deduction cannot write: counted. (Identity up to the order of + and × operands, which the
    steps put in quantity order.)"""
    from psedual.data.expr import OPERATORS, from_prefix
    from psedual.data.numbers import parse_number
    from psedual.data.value import evaluate, values_equal
    from psedual.solvers.re_deduction import deduction_ops, gold_steps, steps_to_prefix

    ops = deduction_ops(OPERATORS)
    checked, bare = 0, []
    for name in ("mawps", "svamp"):
        problems = [p for p in datasets(name).problems if p.answer_agrees and (name != "svamp" or p.split == "train")]
        constants = sorted({t for p in problems for t in p.prefix if t not in OPERATORS and not t.startswith("N")})
        for p in problems:
            token_id = {**{o: k for k, o in enumerate(OPERATORS)},
                        **{c: len(OPERATORS) + k for k, c in enumerate(constants)},
                        **{f"N{k}": len(OPERATORS) + len(constants) + k for k in range(len(p.numbers))}}
            ids = [token_id[t] for t in p.prefix]
            n_leaves = len(constants) + len(p.numbers)
            steps = gold_steps(ids, len(OPERATORS), n_leaves, ops)
            if not steps:
                bare.append(p.id)
                continue
            tokens = {v: t for t, v in token_id.items()}
            rebuilt = [tokens[t] for t in steps_to_prefix(steps, len(OPERATORS), n_leaves, ops)]
            assert _commuted(from_prefix(rebuilt)) == _commuted(from_prefix(p.prefix)), p.id
            values = [parse_number(c) for c in constants] + list(p.values())
            for i, j, k in steps:
                assert i <= j
                o, reverse = ops[k]
                a, b = (values[j], values[i]) if reverse else (values[i], values[j])
                values.append(evaluate([OPERATORS[o], "N0", "N1"], [a, b]))
            assert values_equal(values[-1], p.answer_value()), p.id
            checked += 1
    print(f"gold deduction steps: {checked} problems rebuilt; {len(bare)} without an operator: {bare[:5]}")
    assert checked > 5000 and len(bare) < 0.01 * checked


def _commuted(node) -> str:
    """A tree as text with the operands of + and * in sorted order."""
    if node.is_leaf:
        return node.token
    a, b = _commuted(node.left), _commuted(node.right)
    if node.token in "+*":
        a, b = sorted((a, b))
    return f"({a} {node.token} {b})"


def test_math23k_without_a_chinese_encoder_says_what_to_give(tmp_path):
    config = replace(RUN, data=DataConfig("math23k", train_size=16))
    with pytest.raises(ValueError, match="math23k is not English.*--plm a local Chinese BERT/RoBERTa directory"):
        train(config, tmp_path, progress=False)
