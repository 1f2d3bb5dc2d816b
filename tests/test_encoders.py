"""The encoders a sweep's trials read (`model.plm`), checked before its first trial and listed by
the plan (issues 42, 49): a folder that is not here, a hub id not in this machine's Hugging Face
cache, or an English encoder on Math23K, is one line."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from psedual.cli import main
from psedual.data.config import DataConfig
from psedual.solvers.config import SolverConfig
from psedual.train.config import TrainConfig
from psedual.tune import encoders

ROOT = Path(__file__).parent.parent


def _config(solver: str, dataset: str, plm: str) -> TrainConfig:
    return TrainConfig(DataConfig(dataset, fold=0 if dataset == "mawps" else None), solver=solver,
                       model=SolverConfig(plm=plm))


def test_only_pretrained_encoder_solvers_read_model_plm_and_a_missing_one_is_one_line(tmp_path):
    here = tmp_path / "roberta-base"
    here.mkdir()
    (here / "config.json").write_text("{}")
    gone = str(tmp_path / "chinese-roberta-wwm-ext")
    parts = {"table1": [_config("gts", "math23k", gone), _config("bert_tree", "mawps", str(here)),
                        _config("re_deduction", "math23k", gone), _config("bert_tree", "math23k", gone)]}
    assert encoders.plan_lines(parts) == [
        f"encoder {here}: present here (table1: bert_tree on mawps)",
        f"MISSING: encoder {gone} (model.plm of table1: bert_tree, re_deduction on math23k) is missing on this "
        f"machine ({encoders._node()[len('this machine ('):-1]}): no config.json there; copy a local Hugging Face "
        "model folder there, or name a hub id"]
    with pytest.raises(ValueError, match=r"^encoder .*chinese-roberta-wwm-ext \(model.plm of table1") as raised:
        encoders.check(parts)
    assert "\n" not in str(raised.value) and str(here) not in str(raised.value)
    encoders.check({"table1": [_config("gts", "math23k", gone)]})  # GTS reads no encoder: nothing to check


def test_an_english_encoder_on_math23k_is_refused_before_the_first_trial():
    parts = {"t": [_config("bert_tree", "mawps", "minilm"), _config("bert_tree", "math23k", "minilm")]}
    with pytest.raises(ValueError, match=r"^t: bert_tree on math23k, mawps read the English minilm on zh problems: "
                                         r"name an encoder of that language in model.plm"):
        encoders.check(parts)
    encoders.check({"t": [_config("bert_tree", "mawps", "minilm")]})  # the shipped one, in English: fine


def test_a_hub_id_is_present_when_this_machines_cache_holds_it_and_the_plan_gives_its_commit(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the check never goes online, offline or not
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    repo = tmp_path / "hub" / "models--org--zh-bert"
    (repo / "snapshots" / "c0ffee").mkdir(parents=True)
    (repo / "snapshots" / "c0ffee" / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("c0ffee")
    parts = {"table3": [_config("bert_tree", "math23k", "org/zh-bert"), _config("re_deduction", "math23k", "org/absent"),
                        _config("re_deduction", "mawps", "org/absent@v2")]}
    assert encoders.plan_lines(parts) == [
        "encoder org/zh-bert: present here at commit c0ffee (table3: bert_tree on math23k)",
        f"MISSING: encoder org/absent (model.plm of table3: re_deduction on math23k) is not in the Hugging Face cache "
        f"on {encoders._node()} ({tmp_path / 'hub'}): fetch it first with `hf download org/absent` (clusters/gpu.yaml's "
        f"setup does, on every node), so that every trial reads the same commit",
        f"MISSING: encoder org/absent@v2 (model.plm of table3: re_deduction on mawps) is not in the Hugging Face cache "
        f"on {encoders._node()} ({tmp_path / 'hub'}): fetch it first with `hf download org/absent --revision v2` "
        f"(clusters/gpu.yaml's setup does, on every node), so that every trial reads the same commit"]
    with pytest.raises(ValueError, match=r"^encoder org/absent \(model.plm of table3") as raised:
        encoders.check(parts)
    assert "\n" not in str(raised.value) and "org/zh-bert" not in str(raised.value)
    assert not (tmp_path / "hub" / "models--org--absent").exists()  # looked up, never fetched
    encoders.check({"table3": parts["table3"][:1]})


def test_the_full_paper_run_refuses_in_one_line_before_its_first_trial(monkeypatch, capsys):
    """With its encoders absent here (as on any machine but the cluster's nodes), the full profile
    stops before Ray starts or storage is read, naming each hub id its recipes read; --plan lists them."""
    monkeypatch.setattr(encoders.EncoderUse, "present", property(lambda self: self.plm == encoders.MINILM))
    code = main(["tune", "--space", str(ROOT / "search_spaces" / "paper.yaml"), "--profile", "full",
                 "--storage", "s3://no-such-bucket/psedual", "--only", "table1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    for hub_id, trials in (("google-bert/bert-base-chinese", "bert_tree on math23k"),
                           ("hfl/chinese-roberta-wwm-ext", "re_deduction on math23k"),
                           ("google-bert/bert-base-uncased", "bert_tree on mawps"),
                           ("FacebookAI/roberta-base", "re_deduction on mawps")):
        assert f"encoder {hub_id} (model.plm of table1: {trials}) is not in the Hugging Face cache" in err, hub_id
        assert f"`hf download {hub_id}`" in err
