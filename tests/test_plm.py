"""Pretrained encoders: local-only loading, exact word→subword alignment on the real datasets'
texts, the optimisation these models need, and a PLM checkpoint through `psedual solve`."""

from __future__ import annotations

import re
from dataclasses import replace

import polars as pl
import pytest
import torch

from psedual.data.config import DataConfig
from psedual.data.record import NUM_TOKEN
from psedual.solvers.config import SolverConfig
from psedual.solvers.hub import Encoder, resolve, split_hub_id
from psedual.solvers.plm import WordAligner, plm_path
from psedual.train.config import TrainConfig
from psedual.train.solve import solve
from psedual.train.setup import parameter_groups
from psedual.train.trainer import StepLoss, train
from psedual.cli import main

TINY = SolverConfig(embedding_size=16, hidden_size=32, layers=1, dropout=0.0, plm_layers=2, plm_hidden=32)
RUN = TrainConfig(DataConfig("mawps", fold=0, train_size=32), solver="bert_tree", model=TINY, epochs=3, batch_size=16,
                  beam_size=1, lr=1e-2, plm_lr=1e-3, lr_schedule="linear", warmup_fraction=0.2, clip_grad_norm=1.0,
                  threads=1)


@pytest.fixture(scope="module")
def minilm_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(plm_path("minilm"), local_files_only=True)


def test_the_english_default_ships_in_a_package_and_a_path_must_hold_a_model(tmp_path):
    assert (plm_path("minilm") / "config.json").is_file() and (plm_path("minilm") / "vocab.txt").is_file()
    for path in (str(tmp_path / "bert-base-chinese"), "./models/bert", "~/models/bert", "/a/b/c"):
        with pytest.raises(ValueError, match=f"plm {re.escape(path)}: not a local Hugging Face model folder "
                                             r"\(no config.json there\) nor a hub id"):
            plm_path(path)
    (tmp_path / "empty").mkdir()  # an existing folder is a folder, whatever its name looks like
    with pytest.raises(ValueError, match="no config.json there"):
        plm_path(str(tmp_path / "empty"))


@pytest.mark.parametrize("name, split", [
    ("FacebookAI/roberta-base", ("FacebookAI/roberta-base", None)), ("roberta-base", ("roberta-base", None)),
    ("hfl/chinese-roberta-wwm-ext@v1.0", ("hfl/chinese-roberta-wwm-ext", "v1.0")),
    ("org/name@" + "a" * 40, ("org/name", "a" * 40)), ("org/name@", None), ("./org/name", None),
    ("/org/name", None), ("a/b/c", None), ("~/m", None), ("-x/y", None)])
def test_what_is_read_as_a_hub_id(name, split):
    assert split_hub_id(name) == split


REVISION = "0123456789abcdef0123456789abcdef01234567"
"""The tiny model's commit in the test cache."""


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory):
    """An HF_HOME whose cache holds `tiny-org/tiny-bert` in the hub cache's own layout
    (hub/models--tiny-org--tiny-bert/snapshots/REV/ and refs/main): a 2-layer, 32-wide BERT built
    here, with a WordPiece vocabulary of letters, digits and their continuations."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    home = tmp_path_factory.mktemp("hf_home")
    repo = home / "hub" / "models--tiny-org--tiny-bert"
    snapshot = repo / "snapshots" / REVISION
    snapshot.mkdir(parents=True)
    chars = list("abcdefghijklmnopqrstuvwxyz0123456789.,?!$%'-/")
    (home / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars,
                                               *(f"##{c}" for c in chars)]) + "\n")
    BertTokenizerFast(str(home / "vocab.txt")).save_pretrained(snapshot)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=5 + 2 * len(chars), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=256)
    BertModel(config).save_pretrained(snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    return home


@pytest.fixture
def offline_cache(hf_home, monkeypatch):
    """huggingface_hub reading `hf_home`'s cache, offline (it read HF_HOME and HF_HUB_OFFLINE at import)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hf_home / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # and nothing listens, were it asked
    return hf_home / "hub"


def test_a_hub_id_in_the_cache_resolves_to_its_snapshot_and_commit(offline_cache):
    snapshot = offline_cache / "models--tiny-org--tiny-bert" / "snapshots" / REVISION
    assert resolve("tiny-org/tiny-bert") == Encoder("tiny-org/tiny-bert", str(snapshot), "tiny-org/tiny-bert", None,
                                                    REVISION)
    for revision in ("main", REVISION):
        found = resolve(f"tiny-org/tiny-bert@{revision}")
        assert (found.path, found.revision, found.commit) == (str(snapshot), revision, REVISION)
    assert plm_path("tiny-org/tiny-bert") == snapshot


@pytest.mark.parametrize("name, command", [("tiny-org/absent", "hf download tiny-org/absent"),
                                           ("tiny-org/tiny-bert@v2", "hf download tiny-org/tiny-bert --revision v2")])
def test_offline_an_id_not_in_the_cache_is_one_line_naming_the_command_that_fetches_it(offline_cache, name, command):
    with pytest.raises(ValueError) as raised:
        resolve(name)
    assert str(raised.value) == (f"plm {name}: not in the Hugging Face cache ({offline_cache}) and the hub is offline "
                                 f"here (HF_HUB_OFFLINE=1): fetch it with `{command}` where the hub can be reached, "
                                 f"into this HF_HOME")


def test_without_a_connection_an_id_not_in_the_cache_is_one_line_too(offline_cache, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # online, but the endpoint refuses: nothing downloads
    with pytest.raises(ValueError, match=r"^plm tiny-org/absent: not in the Hugging Face cache \(.*\) and the hub "
                                         r"could not be reached \(LocalEntryNotFoundError\): fetch it with "
                                         r"`hf download tiny-org/absent` where it can") as raised:
        resolve("tiny-org/absent")
    assert "\n" not in str(raised.value)
    assert not (offline_cache / "models--tiny-org--absent").exists()
    assert resolve("tiny-org/tiny-bert").commit == REVISION  # a cached id needs no connection at all


def test_a_hub_id_trains_solves_and_records_its_commit_offline(offline_cache, hf_home, tmp_path, capsys):
    """A run reads `--model.plm ORG/NAME` from the cache with no network and records the commit it
    read; `psedual solve`, in a process of its own under HF_HOME and HF_HUB_OFFLINE=1 as a user runs
    it, rebuilds the model from the same id; an id not in the cache stops `train` in one line."""
    import json
    import os
    import subprocess
    import sys

    out = tmp_path / "run"
    config = replace(RUN, data=DataConfig("mawps-single", train_size=32), epochs=1, model=replace(
        TINY, plm="tiny-org/tiny-bert", plm_layers=None, plm_hidden=None))  # the cached model's own weights
    result = train(config, out, progress=False)
    assert result.best_epoch == 1
    snapshot = offline_cache / "models--tiny-org--tiny-bert" / "snapshots" / REVISION
    assert json.loads((out / "encoder.json").read_text()) == {
        "name": "tiny-org/tiny-bert", "path": str(snapshot), "hub_id": "tiny-org/tiny-bert", "revision": None,
        "commit": REVISION}
    assert json.loads((out / "config.json").read_text())["model"]["plm"] == "tiny-org/tiny-bert"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HF_")}, "HF_HOME": str(hf_home),
           "HF_HUB_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9"}
    solved = subprocess.run([sys.executable, "-m", "psedual.cli", "solve", "--checkpoint", str(out / "best.pt"),
                             "Tom has 3 apples and buys 5 more. How many apples does he have?"],
                            env=env, capture_output=True, text=True, timeout=600)
    assert solved.returncode == 0 and " = " in solved.stdout, solved.stderr[-3000:]
    # the encoder's cache gone (a new HF_HOME, empty): the checkpoint's own copy of its config and
    # tokenizer rebuilds the model; solve answers the same, and test scores as the trainer did
    gone = {**env, "HF_HOME": str(tmp_path / "empty_hf_home")}
    again = subprocess.run([sys.executable, "-m", "psedual.cli", "solve", "--checkpoint", str(out / "best.pt"),
                            "Tom has 3 apples and buys 5 more. How many apples does he have?"],
                           env=gone, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and again.stdout == solved.stdout, again.stderr[-3000:]
    tested = subprocess.run([sys.executable, "-m", "psedual.cli", "test", str(out)], env=gone, capture_output=True,
                            text=True, timeout=600)
    assert tested.returncode == 0, tested.stderr[-3000:]
    assert f"{100 * result.test_value_acc:.1f}" in tested.stdout, tested.stdout
    # the runs table's row carries the id (config) and the commit it resolved to (env.plm_commit)
    from psedual.results.folder import RunFolder
    row = RunFolder(out).metrics()
    assert (row.config["model.plm"], row.environment.plm_commit) == ("tiny-org/tiny-bert", REVISION)
    capsys.readouterr()
    code = main(["train", "--solver", "bert_tree", "--model.plm", "tiny-org/absent", "--data.dataset", "mawps-single",
                 "--data.train_size", "32", "--epochs", "1", "--out", str(tmp_path / "absent")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("psedual: error: plm tiny-org/absent: not in the Hugging Face cache") and \
        "`hf download tiny-org/absent`" in err


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


def test_a_byte_level_bpe_reads_each_word_as_it_reads_running_text(datasets, minilm_tokenizer):
    """RoBERTa's tokenizer (byte-level BPE, a tiny one trained here) spells a word after a space
    ('Ġapples') otherwise than alone ('apples'): the aligner gives each word its leading space, so a
    problem's subwords are those of its running text (it tokenized each word alone before). A
    WordPiece tokenizer takes no space."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizerFast

    problems = datasets("mawps").problems
    special = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator((" ".join(p.tokens) for p in problems), vocab_size=600, special_tokens=special,
                            show_progress=False)
    tok = RobertaTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                               cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")
    aligner = WordAligner(tok)
    assert (aligner.prefix, WordAligner(minilm_tokenizer).prefix) == (" ", "")
    assert _check_alignment(aligner, problems) == len(problems)
    for p in problems[:200]:
        words = tuple(w if w != NUM_TOKEN else "7" for w in p.tokens)
        assert aligner(words, p.id)[0] == tok(" " + " ".join(words))["input_ids"], p.id
    assert aligner(("apples",))[0] != tok("apples")["input_ids"]  # alone, another spelling


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
    with pytest.raises(ValueError, match="math23k is not English.*--model.plm a Chinese BERT/RoBERTa: a hub id "
                                         r"\(hfl/chinese-roberta-wwm-ext\) or a local folder"):
        train(config, tmp_path, progress=False)


@pytest.mark.parametrize("files, named", [({"../config.json": b"{}"}, "'../config.json'"),
                                          ({".hidden": b"", "config.json": b"{}"}, "'.hidden'"),
                                          ({"config.json": "text, not bytes"}, "'config.json'"),
                                          ({"vocab.txt": b""}, "no config.json"),
                                          (["config.json"], "(not a mapping)")])
def test_a_checkpoint_s_encoder_files_are_checked_before_any_is_written(tmp_path, files, named):
    """A checkpoint's encoder files are written to a temporary folder: a name that leaves it, hides
    or is not bytes is refused in one line naming the checkpoint, before anything is written."""
    from psedual.train.checkpoint import CheckpointError, encoder_of

    state = {"solver_config": {"plm": "tiny-org/tiny-bert"}, "encoder_files": files}
    with pytest.raises(CheckpointError, match=re.escape(named)):
        with encoder_of(state, tmp_path / "best.pt"):
            pass
    assert not (tmp_path.parent / "config.json").exists()
