"""The trainer: resume equals an uninterrupted run, outputs, checkpoints, solve (tiny models)."""

from __future__ import annotations

import warnings
from dataclasses import replace

import polars as pl
import pytest
import torch

from psedual.cli import main
from psedual.data.config import DataConfig
from psedual.reexamine import PseDualConfig
from psedual.solvers.config import SolverConfig
from psedual.train import checkpoint
from psedual.train.config import TrainConfig
from psedual.train.solve import solve
from psedual.train.trainer import train

TINY = TrainConfig(DataConfig("mawps", fold=0, train_size=96), model=SolverConfig(16, 32, 1, 0.2), epochs=3, batch_size=32, lr=1e-2, beam_size=2, seed=3, threads=1)
# threads=1: multi-threaded CPU kernels may sum in another order from run to run, which
# moves losses in the 8th digit; one thread makes runs bit-for-bit repeatable.


THREADS_BEFORE = torch.get_num_threads()


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    return train(TINY, out), out


def test_a_run_folder_holds_exactly_the_files_its_list_names(finished):
    """The one list of a run's files is what a trained run writes: its training's (what a sweep
    trial's checkpoint carries) and its test's, and nothing it does not list."""
    from psedual.results.folder import CHECKPOINT, ENCODER, FILES

    _, out = finished  # GTS: no pretrained encoder, so no encoder.json (tests/test_plm.py checks BERT-Tree's)
    written = [*(name for name in CHECKPOINT if name != ENCODER), *(f.name for f in FILES if f.trained == "test")]
    assert sorted(p.name for p in out.iterdir()) == sorted(written)
    assert "data.json" in CHECKPOINT  # what a test checks its data against


def test_resume_equals_uninterrupted(finished, tmp_path):
    whole, whole_dir = finished
    assert train(TINY, tmp_path, stop_after_epoch=1) is None
    resumed = train(TINY, tmp_path, resume=True)
    assert replace(resumed, out_dir="", train_seconds=0) == replace(whole, out_dir="", train_seconds=0)
    cols = ["epoch", "train_loss", "valid_value_acc", "valid_expr_acc", "lr"]
    assert pl.read_parquet(tmp_path / "epochs.parquet").select(cols).equals(
        pl.read_parquet(whole_dir / "epochs.parquet").select(cols))
    assert pl.read_parquet(tmp_path / "predictions.parquet").equals(pl.read_parquet(whole_dir / "predictions.parquet"))
    assert torch.get_num_threads() == THREADS_BEFORE  # the trainer gives back torch's thread setting


def test_outputs(finished):
    result, out = finished
    epochs = pl.read_parquet(out / "epochs.parquet")
    assert epochs["epoch"].to_list() == [1, 2, 3] and epochs["lr"].to_list() == [0.01] * 3
    preds = pl.read_parquet(out / "predictions.parquet")
    assert preds.height == 397 and preds["id"].n_unique() == 397
    assert preds["value_correct"].mean() == pytest.approx(result.test_value_acc)
    metrics = pl.read_parquet(out / "metrics.parquet").row(0, named=True)
    assert metrics["data.fold"] == 0 and metrics["solver"] == "gts" and metrics["n_test"] == 397
    assert metrics["model.hidden_size"] == 32
    assert metrics["best_epoch"] == result.best_epoch
    assert epochs["valid_value_acc"].max() == pytest.approx(result.valid_value_acc)


def test_refuses_to_overwrite_or_resume_another_config(finished):
    _, out = finished
    with pytest.raises(checkpoint.CheckpointError, match="exists: pass resume=True"):
        train(TINY, out)
    with pytest.raises(checkpoint.CheckpointError, match="saved for a different config"):
        train(replace(TINY, lr=5e-3), out, resume=True)


def test_checkpoint_for_another_solver_or_vocabulary(finished, tmp_path):
    _, out = finished
    state = checkpoint.load(out / "best.pt")
    with pytest.raises(checkpoint.CheckpointError, match="is for solver 'gts', not 'dns'"):
        checkpoint.build_model(state, out / "best.pt", expect_solver="dns")
    other = checkpoint.build_model(state, out / "best.pt").vocab
    other = replace(other, constants=other.constants + ("99",))
    with pytest.raises(checkpoint.CheckpointError, match="vocabulary differs from this run's in constants"):
        checkpoint.build_model(state, out / "best.pt", expect_vocab=other)
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(checkpoint.CheckpointError, match="junk.pt: not a readable checkpoint"):
        checkpoint.load(tmp_path / "junk.pt")
    torch.save({"model": {}}, tmp_path / "other.pt")
    with pytest.raises(checkpoint.CheckpointError, match="not a PseDual checkpoint"):
        checkpoint.load(tmp_path / "other.pt")


def test_solve_and_its_bad_input(finished, capsys):
    _, out = finished
    infix, answer = solve(out / "best.pt", "Maria has 3 boxes of 7 eggs. How many eggs does she have?")
    assert "3" in infix or "7" in infix
    assert main(["solve", "--checkpoint", str(out / "best.pt"), "Tom has 5 apples and eats 2."]) == 0
    assert " = " in capsys.readouterr().out
    assert main(["solve", "--checkpoint", str(out / "best.pt"), "   "]) == 2
    assert "empty problem text" in capsys.readouterr().err
    many = "Add " + " and ".join(str(i) for i in range(1, 12)) + "."
    assert main(["solve", "--checkpoint", str(out / "best.pt"), many]) == 2
    assert "11 numbers, but the solver has" in capsys.readouterr().err
    assert main(["solve", "--checkpoint", str(out / "missing.pt"), "x"]) == 2
    assert "checkpoint not found" in capsys.readouterr().err


def test_config_checks():
    with pytest.raises(ValueError, match="valid names: gts"):
        TrainConfig(solver="seq2seq")
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        TrainConfig(batch_size=0)
    assert TrainConfig.from_dict(__import__("dataclasses").asdict(TINY)) == TINY


# PseDual on the horizon schedules: ε 1 → 0.25 and τ 1 → 0.5 over the run's 6 steps, so sampled
# expressions take part from the second step.
TINY_PSEDUAL = replace(TINY, epochs=2, psedual=PseDualConfig(expression_encoder="gcn", epsilon_final=0.25))


@pytest.fixture(scope="module")
def finished_psedual(tmp_path_factory):
    out = tmp_path_factory.mktemp("psedual")
    return train(TINY_PSEDUAL, out), out


def test_psedual_resume_equals_uninterrupted(finished_psedual, tmp_path):
    whole, whole_dir = finished_psedual
    assert train(TINY_PSEDUAL, tmp_path, stop_after_epoch=1) is None
    resumed = train(TINY_PSEDUAL, tmp_path, resume=True)
    assert replace(resumed, out_dir="", train_seconds=0) == replace(whole, out_dir="", train_seconds=0)
    cols = ["epoch", "train_loss", "infill_loss", "epsilon", "tau", "valid_value_acc"]
    resumed_epochs = pl.read_parquet(tmp_path / "epochs.parquet")
    assert resumed_epochs.select(cols).equals(pl.read_parquet(whole_dir / "epochs.parquet").select(cols))
    # the horizon is the whole run's, across the resume: the last step ends exactly there
    assert resumed_epochs["epsilon"][-1] == 0.25 and resumed_epochs["tau"][-1] == 0.5
    assert (resumed.final_epsilon, resumed.final_tau) == (0.25, 0.5)
    assert pl.read_parquet(tmp_path / "predictions.parquet").equals(pl.read_parquet(whole_dir / "predictions.parquet"))


def test_psedual_outputs(finished_psedual, finished):
    result, out = finished_psedual
    epochs = pl.read_parquet(out / "epochs.parquet")
    metrics = pl.read_parquet(out / "metrics.parquet").row(0, named=True)
    # 96 training problems in batches of 32: 3 steps per epoch, 6 in all; ε and τ at each epoch's last step.
    # ε is held for int(0.2 · 6) = 1 step, then decays over the other 5 (step 2 is the decay's second)
    assert epochs["epsilon"].to_list() == pytest.approx([0.25 ** (1 / 4), 0.25])
    assert epochs["tau"].to_list() == pytest.approx([0.5 ** (2 / 5), 0.5]) and (epochs["infill_loss"] > 0).all()
    assert (metrics["final_epsilon"], metrics["final_tau"]) == (0.25, 0.5)
    preds = pl.read_parquet(out / "predictions.parquet")
    scored = preds.filter(pl.col("infill_gold").is_not_null())
    # 14 test golds use a constant outside the vocabulary of this 96-problem training subset
    assert scored.height == metrics["n_test_infilled"] == 383
    # the data identity analysis pairs by: the test split's hash is its predictions' (ids and golds)
    from psedual.data.identity import split_hash

    assert metrics["data_test_hash"] == split_hash(zip(preds["id"].to_list(), preds["gold"].to_list()))
    assert len(metrics["data_train_hash"]) == 16 and metrics["data_train_hash"] != metrics["data_test_hash"]
    slots = scored.select(pl.col("infill_predicted").explode(), pl.col("infill_gold").explode())
    assert metrics["test_infill_acc"] == pytest.approx((slots["infill_predicted"] == slots["infill_gold"]).mean())
    assert result.test_infill_acc == metrics["test_infill_acc"] and metrics["psedual.fusion"] == "scheduled"
    used = slots.filter(pl.col("infill_gold") != -1)  # the paper's Table 4 scores the used slots only
    assert 0 < used.height < slots.height
    assert metrics["test_infill_acc_used"] == pytest.approx((used["infill_predicted"] == used["infill_gold"]).mean())
    assert metrics["test_perfect_match_used"] is not None
    # by values is the looser definition: every strictly right expression is right by values
    assert (preds["expression_correct_values"] | ~preds["expression_correct"]).all()
    assert metrics["test_expr_acc_values"] == pytest.approx(preds["expression_correct_values"].mean())
    base = pl.read_parquet(finished[1] / "metrics.parquet").row(0, named=True)
    assert base["test_infill_acc"] is None and base["psedual.fusion"] is None  # same columns, null
    assert pl.read_parquet(finished[1] / "predictions.parquet")["infill_gold"].null_count() == 397
    assert TrainConfig.from_dict(__import__("dataclasses").asdict(TINY_PSEDUAL)) == TINY_PSEDUAL


def test_a_run_says_its_regime_and_warns_when_it_stays_near_teacher_forcing(tmp_path, capsys):
    literal = replace(TINY_PSEDUAL, epochs=1, psedual=PseDualConfig(epsilon_schedule="step"))
    with pytest.warns(UserWarning, match=r"ends at ε = 1.000 > 0.9 after 3 steps.*--psedual.epsilon_final E"):
        train(literal, tmp_path / "literal", test=False)
    assert "PseDual: ε 1 → 0.99998 by the last of 3 steps (3 per epoch × 1 epoch;" in capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # this horizon ends at 0.25: no warning
        train(replace(TINY_PSEDUAL, epochs=1), tmp_path / "horizon", test=False)
    assert "PseDual: ε 1 → 0.25 by the last of 3 steps" in capsys.readouterr().err  # int(0.2 · 3) = 0: no hold


def test_psedual_cli_flags_need_psedual(tmp_path, capsys):
    assert main(["train", "--data.fold", "0", "--psedual.fusion", "predicted", "--out", str(tmp_path)]) == 2
    assert "--psedual.fusion set PseDual's knobs: they need --variant gru|gcn" in capsys.readouterr().err
    assert main(["train", "--variant", "gcn", "--psedual.fusion", "sometimes", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "psedual train: error:" in err and "psedual.fusion" in err and "sometimes" in err


def test_resumes_a_checkpoint_saved_before_the_psedual_field(finished, tmp_path):
    whole, whole_dir = finished
    state = checkpoint.load(whole_dir / "last.pt")
    del state["config"]["psedual"]  # as written before PseDual existed
    checkpoint.save(tmp_path / "last.pt", state)
    (tmp_path / "best.pt").write_bytes((whole_dir / "best.pt").read_bytes())
    resumed = train(TINY, tmp_path, resume=True)
    assert replace(resumed, out_dir="", train_seconds=0) == replace(whole, out_dir="", train_seconds=0)


def test_run_folders_join_the_result_tables_and_the_analysis(finished, finished_psedual, tmp_path, capsys):
    import pyarrow.parquet as pq

    from psedual.results import tables

    base_dir, psedual_dir = finished[1], finished_psedual[1]
    root = str(tmp_path / "results")
    assert main(["results", "add", str(base_dir), str(psedual_dir), "--experiment", "solo", "--root", root]) == 0
    assert "2 run(s) in" in capsys.readouterr().out
    runs = pl.read_parquet(tmp_path / "results" / "runs" / "experiment=solo" / f"{psedual_dir.name}.parquet")
    assert pq.read_schema(tmp_path / "results" / "runs" / "experiment=solo" / f"{base_dir.name}.parquet") \
        == tables.RUNS_SCHEMA
    row = runs.row(0, named=True)
    assert (row["variant"], row["final_epsilon"], row["epochs_done"]) == ("gcn", 0.25, 2)
    # the run's data summary reaches the runs table (the writer once dropped it unsaid)
    assert row["data_kept"] > 0 and row["n_test_unscored"] == 0 and row["test_seconds"] > 0
    assert row["test_value_acc"] == finished_psedual[0].test_value_acc
    compare = ["analyze", "compare", "--root", root, "--experiment+", "solo", "--treatment+", "gcn",
               "--resamples", "200"]
    assert main(compare) == 2  # these two runs differ in epochs too (3 vs 2): refused unless allowed
    assert "epochs: base [3] vs gcn [2]" in capsys.readouterr().err
    assert main([*compare, "--allow_diff+", "epochs", "--allow_diff+", "epochs_done"]) == 0
    claim = pl.read_parquet(tmp_path / "results" / "claims" / "compare_solo.parquet").row(0, named=True)
    assert (claim["n_examples"], claim["test"]) == (397, "mcnemar_exact")
    assert claim["base"] == pytest.approx(100 * finished[0].test_value_acc)
    # the run folders' data identity came along: both trained and tested on the same problems
    both = pl.read_parquet(tmp_path / "results" / "runs" / "experiment=solo" / "*.parquet")
    assert both["data_train_hash"].n_unique() == 1 and both["data_test_hash"].null_count() == 0
    assert not any(f.startswith("data identity not recorded") for f in claim["flags"])
    assert main(["results", "add", str(tmp_path), "--experiment", "solo", "--root", root]) == 2
    assert "not a finished run folder (missing config.json" in capsys.readouterr().err


def test_the_infill_probe_scores_a_finished_run_as_its_metrics_do(finished_psedual):
    """tools/infill_probe.py's numbers: from the gold, the run's own test metrics; the rule with no
    model and the scrambled gold beside them (issue 41)."""
    from psedual.train.probe import probe_run

    _, out = finished_psedual
    metrics = pl.read_parquet(out / "metrics.parquet").row(0, named=True)
    probe = probe_run(out)
    assert probe.n == metrics["n_test_infilled"] == 383 and probe.quantity_keys == "anonymous"
    assert probe.gold.acc == pytest.approx(metrics["test_infill_acc"])
    assert probe.gold.pmr == pytest.approx(metrics["test_perfect_match"])
    assert probe.rule.acc > 0.95 and 0.8 < probe.in_text_order < 0.9  # MAWPS fold 0's scored test golds
    assert probe.scrambled.acc != probe.gold.acc


def test_the_metrics_record_the_test_splits_leakage_and_no_changed_data(finished_psedual):
    _, out = finished_psedual
    metrics = pl.read_parquet(out / "metrics.parquet").row(0, named=True)
    import json

    data = json.loads((out / "data.json").read_text())
    assert metrics["data_test_leaked"] == data["leaked"]["test"] > 0  # MAWPS fold 0 repeats problems across splits
    assert metrics["data_changed"] is False


def test_the_metrics_record_where_and_with_what_the_run_trained(finished):
    """Issue 42: the runs row says the Python, torch, CUDA and Ray a run trained with, the device
    it really used (never `auto`), its GPU's name on a GPU, and the node."""
    import json
    import platform
    from importlib.metadata import version

    _, out = finished
    metrics = pl.read_parquet(out / "metrics.parquet").row(0, named=True)
    assert TINY.device == "auto"
    assert {k: v for k, v in metrics.items() if k.startswith("env.")} == {
        "env.python": platform.python_version(), "env.torch": torch.__version__,
        "env.cuda": torch.version.cuda or "none", "env.ray": version("ray"), "env.device": "cpu", "env.gpu": None,
        "env.node": platform.node(), "env.plm_commit": None, "env.precision": "fp32"}
    assert json.loads((out / "env.json").read_text())["device"] == "cpu"  # written where it trained
