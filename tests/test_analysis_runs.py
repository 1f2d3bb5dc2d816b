"""analysis/ checks what its runs are, not only what they say they are (issue 39): crafted result
tables, written with the package's own table writer, for each way a claim read `better` (or
crashed) before. Each yields a refusal naming the runs, a flag, or one error line."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import crafted_runs as crafted
from analysis.checks import guardrails
from analysis.claims import claims
from analysis.cli import main as analyze
from analysis.report import summaries
from analysis.stats import stats
from analysis.tables import read
from crafted_runs import N, seeds
from test_analysis_checks import GOLD, WRONG, _build, _effect, _ids, _preds, _write


def _cli(capsys, *words: str) -> tuple[int, str, str]:
    code = analyze(["analyze", *words])
    said = capsys.readouterr()
    return code, said.out, said.err


def _refused(root: Path, pattern: str, **build) -> None:
    """The crafted tables under `root` make no claim: a GuardrailError matching `pattern`."""
    with pytest.raises(claims.GuardrailError, match=pattern):
        _build(root, **build)


def test_a_runs_row_whose_validation_score_is_not_its_epochs_tables_is_refused(tmp_path):
    # six tuned trials per slot and no effect at all; gcn's runs rows hold their test accuracy as
    # valid_value_acc (their epochs tables say 0.5 at the kept epoch), so the runs column picks the
    # luckiest on test. Before: "better", flagged only as tuned.
    crafted.selected_on_test(tmp_path)
    with pytest.raises(claims.GuardrailError, match=r"x/g0-\d: valid_value_acc 0\.\d+ in the runs table but 0\.5 at "
                                                    r"its best_epoch 1 in its epochs table"):
        _build(tmp_path)


def test_seeds_with_identical_predictions_are_refused_as_one_seed(tmp_path):
    # 3 real seeds, copied under seeds 3-5: before, 6 seeds read "better" (3 read "inconclusive")
    _write(tmp_path / "three", seeds(3))
    assert _build(tmp_path / "three").rows["verdict"][0] == "inconclusive (3 seeds)"
    crafted.seed_copies(tmp_path)
    with pytest.raises(claims.GuardrailError, match=r"x/b0 \(seed 0\) and x/b3 \(seed 3\) hold identical predictions"):
        _build(tmp_path)


def test_identical_training_curves_are_refused_as_one_seed(tmp_path):
    runs = seeds(2)
    _write(tmp_path, runs, epochs={"g0": [0.5, 0.4, 0.3], "g1": [0.5, 0.4, 0.3]})
    assert _build(tmp_path).rows.height == 1  # validation curves may tie: only a loss curve is a fingerprint
    root = tmp_path / "loss"
    _write(root, runs)
    for trial in ("g0", "g1"):
        pl.DataFrame({"trial": trial, "epoch": [1, 2], "train_loss": [2.25, 1.125], "valid_value_acc": [0.5, 0.4]},
                     schema_overrides={"epoch": pl.Int32}).write_parquet(
            root / "epochs" / "experiment=x" / f"{trial}.parquet")
    with pytest.raises(claims.GuardrailError, match=r"x/g0 \(seed 0\) and x/g1 \(seed 1\) hold identical training "
                                                    r"curves"):
        _build(root)


def test_a_config_column_missing_from_one_arm_is_a_confound(tmp_path):
    # the base runs' files lack epochs, hidden size, beam and code version: before, "better"
    crafted.config_missing(tmp_path)
    _refused(tmp_path, r"the arms differ in more than base vs gcn: code_version: base \[None\] vs gcn \['v2'\]; "
                       r"epochs: base \[None\] vs gcn \[80\]; beam_size: .*; model.hidden_size: ")


def test_the_pseudual_fields_are_absent_by_design_on_base_runs_only(tmp_path):
    psedual = {"psedual.fusion": "scheduled", "psedual.alpha": 1.0}
    runs = [(r | (psedual if r["variant"] == "gcn" else {}), p) for r, p in seeds(6)]
    _write(tmp_path / "base", runs)
    assert _build(tmp_path / "base").rows["verdict"][0] == "better"
    # gru's files predate psedual.alpha: between two PseDual arms that is a confound
    _write(tmp_path / "gru", [(r | ({"variant": "gru", "psedual.fusion": "scheduled"} if r["variant"] == "base"
                                    else psedual), p) for r, p in seeds(6)])
    with pytest.raises(claims.GuardrailError, match=r"psedual.alpha: gru \[None\] vs gcn \[1.0\]"):
        _build(tmp_path / "gru", base="gru")


@pytest.mark.parametrize("failure, who", [({"status": "failed"}, ("base", "gcn")),
                                          ({"error": "RuntimeError: CUDA out of memory"}, ("gcn",)),
                                          ({"status": "error"}, ("gcn",))])
def test_failed_runs_never_make_a_claim(tmp_path, failure, who):
    # before: "better" from six runs of each arm that failed, or from six gcn runs that recorded an
    # error (status error: skipped, as before)
    crafted.failing(failure, who)(tmp_path)
    _refused(tmp_path, r"x/(b|g)0 \((status failed|error: RuntimeError: CUDA out of memory|status error)\)")


def test_expression_correctness_is_checked_against_the_expressions(tmp_path):
    # the value accuracy is the same; gcn's rows mark wrong expressions as right
    crafted.expression_marked(tmp_path)
    with pytest.raises(claims.GuardrailError, match=r"x/g0: \d+ test example\(s\) marked expression_correct .* not "
                                                    r"the gold expression: \['mawps:"):
        _build(tmp_path, metrics=("value", "expression"))  # before: expression "better" at value Δ 0
    # an expression marked wrong although it is the gold one deflates an arm just as well
    honest = _preds(_ids(N), np.ones(N, bool))
    _write(tmp_path / "deflated", [({"trial": "b0", "variant": "base"}, [{**p, "expression_correct": False}
                                                                         for p in honest]),
                                   ({"trial": "g0", "variant": "gcn"}, honest)])
    with pytest.raises(claims.GuardrailError, match=r"x/b0: 400 test example\(s\) marked not expression_correct"):
        _build(tmp_path / "deflated", metrics=("expression",))


def test_a_runs_expression_accuracy_must_be_its_predictions(tmp_path):
    a, b = _effect()
    _write(tmp_path, [({"trial": "b0", "variant": "base", "test_expr_acc": 0.1}, _preds(_ids(N), a)),
                      ({"trial": "g0", "variant": "gcn"}, _preds(_ids(N), b))])
    with pytest.raises(claims.GuardrailError, match=r"x/b0: its predictions give test_expr_acc 0.5775\d+ but the runs "
                                                    r"table says 0.100000"):
        _build(tmp_path)


def test_an_empty_llm_model_is_no_llm_run(tmp_path):
    crafted.empty_llm_model(tmp_path)
    r = _build(tmp_path).rows.row(0, named=True)
    assert r["verdict"] == "inconclusive (1 seed)"  # before: "better"
    assert "test-selected? x/g0 has no validation split" in r["flags"]  # before: no flag


def test_a_required_field_left_empty_is_refused(tmp_path):
    blank = pl.DataFrame({"experiment": ["x"], "trial": ["g0"], "llm.model": ["  "], "solver": [""]})
    assert guardrails.blank_strings(blank).row(0) == ("x", "g0", None, "")  # the config's own strings: as written
    _write(tmp_path, [(r | ({"variant": ""} if r["trial"] == "b1" else {}), p) for r, p in seeds(2)])
    with pytest.raises(claims.GuardrailError, match=r"x/b1: variant is an empty string"):
        _build(tmp_path)


def test_no_pooling_across_a_config_column(tmp_path):
    # before: the solver's difference read as PseDual's ("better", flagged "tuned")
    crafted.two_solvers(tmp_path)
    with pytest.raises(claims.GuardrailError, match=r"data.dataset=mawps: its runs pool over solver \['g2t', 'gts'\]"
                                                    r".* --by\+ solver"):
        _build(tmp_path, by=("data.dataset",))
    rows = _build(tmp_path, by=("data.dataset", "solver")).rows
    # each solver's arms answered alike on every seed: no spread, so neither a t-test nor a TOST
    assert rows.height == 2 and set(rows["verdict"].to_list()) == {
        "untestable (Δ +0.00 on every seed: no spread, so no t-test)"}


def test_a_null_seed_or_fold_is_one_line(tmp_path, capsys):
    crafted.with_null("seed")(tmp_path / "seed")
    code, _, err = _cli(capsys, "table1", "--root", str(tmp_path / "seed"), "--resamples", "200")
    assert code == 2 and err.count("\n") == 1 and "x/g1: no seed" in err  # before: TypeError traceback
    crafted.with_null("data.fold")(tmp_path / "fold")
    code, _, err = _cli(capsys, "table1", "--root", str(tmp_path / "fold"), "--resamples", "200")
    assert code == 2 and err.count("\n") == 1 and "x/g1 has no fold but mawps runs beside it have folds" in err


def test_an_experiment_named_like_a_partition_is_read(tmp_path, capsys):
    crafted.partition_name(tmp_path)
    code, out, err = _cli(capsys, "table1", "--root", str(tmp_path), "--experiment", "solver=gts", "--resamples",
                          "200")
    assert (code, err) == (0, "") and "claims/table1_solver=gts.parquet" in out  # before: no command read this root
    assert read.scan(str(tmp_path), "runs").collect()["experiment"].sort().to_list() == [
        "plain", "plain", "solver=gts", "solver=gts"]


@pytest.mark.parametrize("words, said", [
    (["--treatment+", "gcn", "--by+", "seed"], "--by seed: a claim pairs its arms over the seeds"),
    (["--treatment+", "gcn", "--by+", "variant"], "--by variant: it is the arm"),
    (["--arm", "seed", "--base", "0", "--treatment+", "1"], "--arm seed: a claim pairs its arms over the seeds"),
    (["--arm", "lr", "--base", "0.001", "--treatment+", "abc"], "--treatment 'abc': not a Float64 value of lr"),
])
def test_odd_by_and_arm_values_are_one_line(tmp_path, capsys, words, said):
    crafted.two_seeds(tmp_path)
    code, _, err = _cli(capsys, "compare", "--root", str(tmp_path), "--resamples", "200", *words)
    assert code == 2 and err.count("\n") == 1 and said in err, err


def test_a_numeric_arm_is_compared(tmp_path, capsys):
    crafted.two_lrs(tmp_path)
    code, out, err = _cli(capsys, "compare", "--root", str(tmp_path), "--resamples", "200", "--arm", "lr", "--base",
                          "0.001", "--treatment+", "0.002")
    assert (code, err) == (0, "") and "0.002" in out  # before: a Polars error (String vs Float64)


def test_the_example_permutation_test_runs_in_bounded_memory():
    # 1 seed × 100,000 examples: before, scipy was asked for 10,000 × 100,000 resamples at once (14.9 GiB)
    rng = np.random.default_rng(0)
    a = rng.random(100_000) < 0.6
    b = a ^ (rng.random(100_000) < 0.05)
    tracemalloc.start()
    r = stats.paired(a, b, n_resamples=2_000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 600 * 2**20, f"{peak / 2**20:.0f} MiB"
    assert r.n_resamples == 2_000 and 0 <= r.p_permutation <= 1 and r.ci_low < r.delta < r.ci_high


def test_infill_refuses_runs_without_a_reexamining_module(tmp_path, capsys):
    crafted.infilling_base(tmp_path)
    code, out, err = _cli(capsys, "infill", "--root", str(tmp_path), "--resamples", "200")
    assert code == 2 and "x/b0: variant base has no reexamining module, but its row holds test_infill_acc 0.9" in err
    with pytest.raises(claims.GuardrailError, match="x/b0: variant base has no reexamining module"):
        summaries.infill(read.scan(str(tmp_path), "runs").collect(), read.scan(str(tmp_path), "epochs"),
                         read.scan(str(tmp_path), "predictions"), ["data.dataset", "solver", "variant"], 200, 0)


def test_the_crafted_predictions_are_consistent():
    # the fixture itself: a wrong answer's expression is not the gold one
    rows = _preds(_ids(2), [True, False])
    assert [r["predicted"] for r in rows] == [GOLD, WRONG]


def test_a_trial_without_epochs_rows_cannot_compete_for_its_slot(tmp_path):
    crafted.selected_on_test(tmp_path)
    for f in (tmp_path / "epochs" / "experiment=x").glob("g*.parquet"):
        f.unlink()  # nothing left to check the copied scores against
    with pytest.raises(claims.GuardrailError, match=r"x/g0-0: no epochs rows, and it competes with other trials"):
        _build(tmp_path)
    one = tmp_path / "one"
    _write(one, seeds(1))
    (one / "epochs" / "experiment=x" / "g0.parquet").unlink()  # its slot's only run: flagged, as before
    assert any("x/g0 has no epochs rows" in f for f in _build(one).rows["flags"][0])


def test_expression_correct_by_values_and_value_correct_are_checked_where_they_can_be(tmp_path):
    ok = _preds(_ids(N), np.arange(N) % 2 == 0)
    by_values = [{**p, "expression_correct_values": True} for p in ok]  # odd rows: `* N0 N1` for gold `+ N0 N1`
    _write(tmp_path / "values", [({"trial": "b0", "variant": "base"}, ok), ({"trial": "g0", "variant": "gcn"},
                                                                         by_values)])
    with pytest.raises(claims.GuardrailError, match=r"x/g0: 200 test example\(s\) marked expression_correct_values "
                                                    r"where the predicted expression's operators"):
        _build(tmp_path / "values", metrics=("expression_values",))
    # a slot for a slot, or a slot for a constant, is as far as the check can tell: not refused
    swapped = [{**p, "predicted": ["+", "N1", "N0"], "expression_correct": False, "expression_correct_values": True}
               if i % 2 else p for i, p in enumerate(ok)]
    _write(tmp_path / "slots", [({"trial": "b0", "variant": "base"}, ok), ({"trial": "g0", "variant": "gcn"}, swapped)])
    assert _build(tmp_path / "slots", metrics=("expression_values",)).rows.height == 1
    empty = [{**p, "predicted": [], "value_correct": True} if i == 3 else p for i, p in enumerate(ok)]
    _write(tmp_path / "empty", [({"trial": "b0", "variant": "base"}, ok), ({"trial": "g0", "variant": "gcn"}, empty)])
    with pytest.raises(claims.GuardrailError, match=r"x/g0: 1 test example\(s\) marked value_correct with no "
                                                    r"predicted expression: \['mawps:3'\]"):
        _build(tmp_path / "empty")
