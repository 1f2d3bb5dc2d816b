"""The encoders a sweep's trials read (`model.plm`), checked before its first trial and listed by
the plan (issue 42): a directory that is not here, or an English encoder on Math23K, is one line."""

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
        f"machine ({encoders._node()[len('this machine ('):-1]}): no config.json there; clusters/gpu.yaml's setup "
        "puts it on every node (hf download), elsewhere copy a local Hugging Face model there (nothing is "
        "downloaded)"]
    with pytest.raises(ValueError, match=r"^encoder .*chinese-roberta-wwm-ext \(model.plm of table1") as raised:
        encoders.check(parts)
    assert "\n" not in str(raised.value) and str(here) not in str(raised.value)
    encoders.check({"table1": [_config("gts", "math23k", gone)]})  # GTS reads no encoder: nothing to check


def test_an_english_encoder_on_math23k_is_refused_before_the_first_trial():
    parts = {"t": [_config("bert_tree", "mawps", "minilm"), _config("bert_tree", "math23k", "minilm")]}
    with pytest.raises(ValueError, match=r"^t: bert_tree on math23k, mawps read the English minilm on zh problems: "
                                         r"name a local encoder of that language in model.plm"):
        encoders.check(parts)
    encoders.check({"t": [_config("bert_tree", "mawps", "minilm")]})  # the shipped one, in English: fine


def test_the_full_paper_run_refuses_in_one_line_before_its_first_trial(monkeypatch, capsys):
    """With its encoders absent here (as on any machine but the cluster's nodes), the full profile
    stops before Ray starts or storage is read, naming both directories; --plan lists them."""
    monkeypatch.setattr(encoders.EncoderUse, "present", property(lambda self: self.plm == encoders.MINILM))
    code = main(["tune", "--space", str(ROOT / "search_spaces" / "paper.yaml"), "--profile", "full",
                 "--storage", "s3://no-such-bucket/psedual", "--only", "table1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "encoder /home/ubuntu/models/chinese-roberta-wwm-ext (model.plm of table1: bert_tree, re_deduction on " \
           "math23k) is missing" in err and "encoder /home/ubuntu/models/roberta-base" in err
