"""analysis/ never over-claims: crafted result tables for each way a comparison can mislead."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from analysis.claims import claims
from analysis.cli import main as analyze
from analysis.report import summaries
from analysis.stats import stats
from analysis.tables import read, text
from analysis.tables.claim import CLAIMS_SCHEMA
from claim_rows import claim_row
from test_analysis import _build, _pairs, _preds, _write_tables


def _run(trial, variant, seed=0, **kw):
    return {"trial": trial, "variant": variant, "solver": "gts", "seed": seed, **kw}


def _ids(n, prefix="svamp"):
    return [f"{prefix}:{i}" for i in range(n)]


def test_a_dataset_without_folds_is_compared(tmp_path, capsys):
    rng = np.random.default_rng(2)
    a, b = _pairs(rng, 300, 0.02, 0.1)
    _write_tables(tmp_path, "sv", [_run("b0", "base", **{"data.dataset": "svamp", "data.fold": None}),
                                   _run("g0", "gcn", **{"data.dataset": "svamp", "data.fold": None})],
                  {"b0": _preds(_ids(300), a), "g0": _preds(_ids(300), b)})
    r = _build(tmp_path).rows.row(0, named=True)
    assert r["folds"] == [None] and r["n_examples"] == 300 and r["base_fold_acc"] == [pytest.approx(100 * a.mean())]
    assert not any("MAWPS" in f for f in r["flags"])
    assert analyze(["analyze", "table1", "--root", str(tmp_path), "--resamples", "200"]) == 0
    assert "| gts | base |" in capsys.readouterr().out


def test_example_order_is_irrelevant_ids_pair_the_arms(tmp_path):
    rng = np.random.default_rng(4)
    a, b = _pairs(rng, 200, 0.05, 0.15)
    order = rng.permutation(200)
    shuffled = _preds([_ids(200)[i] for i in order], b[order])
    _write_tables(tmp_path, "x", [_run("b0", "base"), _run("g0", "gcn")],
                  {"b0": _preds(_ids(200), a), "g0": shuffled})
    r = _build(tmp_path).rows.row(0, named=True)
    assert (r["only_base"], r["only_treatment"]) == (int((a & ~b).sum()), int((b & ~a).sum()))


def test_infill_keeps_one_trial_per_slot(tmp_path, capsys):
    good = _preds(_ids(4), [1, 1, 1, 1]).with_columns(
        infill_predicted=pl.Series([[0, 1]] * 4, dtype=pl.List(pl.Int32)),
        infill_gold=pl.Series([[0, 1]] * 4, dtype=pl.List(pl.Int32)))
    bad = good.with_columns(infill_predicted=pl.Series([[1, 0]] * 4, dtype=pl.List(pl.Int32)))
    # three tuned trials (lr searched) of one slot
    _write_tables(tmp_path, "x", [_run("g0", "gcn", valid_value_acc=0.9, test_infill_acc=1.0, lr=0.001),
                                  _run("g1", "gcn", valid_value_acc=0.5, test_infill_acc=0.0, lr=0.002),
                                  _run("g2", "gcn", valid_value_acc=0.4, test_infill_acc=0.0, lr=0.003)],
                  {"g0": good, "g1": bad, "g2": bad})
    notes: list[str] = []
    row = summaries.infill(read.scan(str(tmp_path), "runs").collect(), read.scan(str(tmp_path), "epochs"),
                           read.scan(str(tmp_path), "predictions"),
                           ["data.dataset", "solver", "variant"], 200, 0, notes=notes).row(0, named=True)
    # the trial picked on validation, alone: not 3 trials × 4 examples averaged
    assert (row["infill_acc"], row["n_examples"], row["n_seeds"]) == (100.0, 4, 1)
    assert notes == ["1 slot(s) held several trials; kept the best by valid_value_acc"]
    assert analyze(["analyze", "infill", "--root", str(tmp_path), "--resamples", "200"]) == 0
    assert "note: 1 slot(s) held several trials" in capsys.readouterr().out


def _equal_deltas(root: Path, seeds=(0, 1)):
    runs, preds = [], {}
    for s in seeds:
        a = np.zeros(300, bool)
        a[s:200 + s] = True  # each seed gets other problems right (identical seeds would be one seed)
        b = a.copy()
        b[250] = True  # the treatment fixes 1 of 300 on every seed
        runs += [_run(f"b{s}", "base", s), _run(f"g{s}", "gcn", s)]
        preds |= {f"b{s}": _preds(_ids(300, "mawps"), a), f"g{s}": _preds(_ids(300, "mawps"), b)}
    _write_tables(root, "eq", runs, preds)


def test_identical_deltas_across_seeds_are_untestable_not_p_zero(tmp_path, capsys):
    _equal_deltas(tmp_path)
    r = _build(tmp_path).rows.row(0, named=True)
    assert r["p"] is None and r["p_adjusted"] is None and r["ci_low"] is None
    assert r["verdict"] == "untestable (Δ +0.33 on every seed: no spread, so no t-test)"
    assert r["p_secondary"] == pytest.approx(0.5)  # Wilcoxon's exact p over 2 seeds
    assert analyze(["analyze", "table1", "--root", str(tmp_path), "--resamples", "200"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("|  | PseDual-GCN |"))
    assert row.endswith("(Δ +0.33) |")  # no significance mark


def test_below_six_seeds_a_significant_delta_is_inconclusive(tmp_path):
    rng = np.random.default_rng(5)
    runs, preds = [], {}
    for s in range(3):
        a, b = _pairs(rng, 400, 0.0, 0.2 + 0.01 * s)
        runs += [_run(f"b{s}", "base", s), _run(f"g{s}", "gcn", s)]
        preds |= {f"b{s}": _preds(_ids(400, "mawps"), a), f"g{s}": _preds(_ids(400, "mawps"), b)}
    _write_tables(tmp_path, "few", runs, preds)
    r = _build(tmp_path).rows.row(0, named=True)
    assert r["p_adjusted"] < 0.05 and r["verdict"] == "inconclusive (3 seeds)"


def test_the_interval_beside_a_t_test_is_the_t_interval():
    a = {0: 80.0, 1: 82.0, 2: 81.0}
    b = {0: 81.0, 1: 84.0, 2: 81.5}
    r = stats.across_seeds(a, b)
    d = np.array([1.0, 2.0, 0.5])
    low, high = sps.t.interval(0.95, 2, loc=d.mean(), scale=sps.sem(d))
    assert (r.ci_low, r.ci_high) == (pytest.approx(low), pytest.approx(high))
    assert r.ci_low < 0 < r.ci_high and r.p_ttest > 0.05  # the interval agrees with the test


def _confounded(root: Path, **gcn):
    p = _preds(_ids(50, "mawps"), np.arange(50) % 3 > 0)
    same = {"epochs": 10, "lr": 0.001, "code_version": "v1"}
    _write_tables(root, "c", [_run("b0", "base", **same), _run("g0", "gcn", **{**same, **gcn})], {"b0": p, "g0": p})


def test_arms_that_differ_in_more_than_the_arm_are_refused_or_flagged(tmp_path, capsys):
    _confounded(tmp_path / "a", epochs=80)
    with pytest.raises(claims.GuardrailError, match=r"differ in more than base vs gcn: epochs: base \[10\] vs gcn "
                                                    r"\[80\]; .* --allow_diff\+ epochs"):
        _build(tmp_path / "a")
    allowed = _build(tmp_path / "a", allow_diff=("epochs",)).rows.row(0, named=True)
    assert "config differs (allowed by --allow_diff): epochs: base [10] vs gcn [80]" in allowed["flags"]
    assert analyze(["analyze", "compare", "--root", str(tmp_path / "a"), "--treatment+", "gcn"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "epochs" in err
    _confounded(tmp_path / "b", code_version="v2")
    with pytest.raises(claims.GuardrailError, match=r"code_version: base \['v1'\] vs gcn \['v2'\]"):
        _build(tmp_path / "b")


def test_a_tuned_slot_may_differ_in_what_it_searched_and_says_its_budget(tmp_path, capsys):
    p = _preds(_ids(50, "mawps"), np.arange(50) % 3 > 0)
    _write_tables(tmp_path, "t", [_run("b0", "base", lr=0.001),
                                  _run("g0", "gcn", lr=0.003, valid_value_acc=0.7),
                                  _run("g1", "gcn", lr=0.002, valid_value_acc=0.6),
                                  _run("g2", "gcn", lr=0.001, valid_value_acc=0.5)], {k: p for k in ("b0", "g0", "g1", "g2")})
    r = _build(tmp_path).rows.row(0, named=True)
    assert "tuned: lr: base [0.001] vs gcn [0.003] (searched within the slots)" in r["flags"]
    assert (r["base_budget"], r["treatment_budget"]) == (1, 3)
    assert analyze(["analyze", "table1", "--root", str(tmp_path), "--resamples", "200"]) == 0
    assert "| 1/3 |" in capsys.readouterr().out


def test_null_truncated_and_inconsistent_predictions_are_refused(tmp_path):
    rng = np.random.default_rng(6)
    for seeds in ((0,), (0, 1)):
        root = tmp_path / f"null{len(seeds)}"
        runs, preds = [], {}
        for s in seeds:
            a, b = _pairs(rng, 100, 0.05, 0.1)
            runs += [_run(f"b{s}", "base", s), _run(f"g{s}", "gcn", s)]
            preds |= {f"b{s}": _preds(_ids(100, "mawps"), a), f"g{s}": _preds(_ids(100, "mawps"), b)}
        preds["g0"] = preds["g0"].with_columns(
            value_correct=pl.when(pl.col("id") == "mawps:7").then(None).otherwise(pl.col("value_correct")))
        _write_tables(root, "n", runs, preds)
        with pytest.raises(claims.GuardrailError, match=r"n/g0: 1 test example\(s\) with no value_correct: \['mawps:7'\]"):
            _build(root)
    a, b = _pairs(rng, 300, 0.05, 0.1)
    _write_tables(tmp_path / "cut", "cut", [_run("b0", "base", n_test=300), _run("g0", "gcn", n_test=300)],
                  {"b0": _preds(_ids(300, "mawps"), a)[:150], "g0": _preds(_ids(300, "mawps"), b)[:150]})
    with pytest.raises(claims.GuardrailError, match=r"cut/b0: 150 prediction rows but the run tested 300"):
        _build(tmp_path / "cut")


def test_a_run_without_epochs_rows_is_flagged(tmp_path):
    p = _preds(_ids(20, "mawps"), np.arange(20) % 2 > 0)
    _write_tables(tmp_path, "e", [_run("b0", "base"), _run("g0", "gcn")], {"b0": p, "g0": p})
    (tmp_path / "epochs" / "experiment=e" / "g0.parquet").unlink()
    r = _build(tmp_path).rows.row(0, named=True)
    assert "test-selected? e/g0 has no epochs rows: its best_epoch cannot be checked against validation" in r["flags"]


def test_tiny_paired_tables_give_no_interval_and_no_scipy_error():
    one = stats.paired([1], [0])
    assert (one.ci_low, one.ci_high, one.only_a) == (None, None, 1) and one.p_mcnemar == 1.0
    four = stats.paired([1, 1, 0, 0], [1, 1, 1, 1])
    assert four.ci_low is None and four.p_mcnemar == pytest.approx(0.5)


def test_p_values_never_print_as_zero_and_flags_sit_on_their_claim(tmp_path, capsys):
    assert text.p_value(0.0) == "< 1e-300" and text.p_value(0.01234) == "0.0123" and text.p_value(None) == "–"
    _confounded(tmp_path, epochs=80)
    assert analyze(["analyze", "compare", "--root", str(tmp_path), "--treatment+", "gcn", "--allow_diff+", "epochs",
                    "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    line = next(row for row in out.splitlines() if "PseDual-GCN vs base" in row)
    flags = [f for f in out.splitlines() if f.startswith("flag [")]
    assert any("--allow_diff" in f for f in flags) and line.endswith(", ".join(f"[{k + 1}]" for k in range(len(flags))) + " |")


def test_curve_stars_say_which_way(tmp_path):
    # one cell (no `by` columns: its label is ""), where GCN is significantly worse than base
    # a star stands beside a verdict that says the arms differ
    claims_rows = pl.DataFrame([claim_row(cell="", base=60.0, treatment=50.0, p_adjusted=0.001, delta=-5.0,
                                          ci_low=-6.0, ci_high=-4.0, verdict="worse")], schema=CLAIMS_SCHEMA)
    runs = pl.DataFrame({"experiment": ["x", "x"], "trial": ["b", "g"], "variant": ["base", "gcn"], "seed": [0, 0],
                         "n_train": [100, 100], "test_value_acc": [0.6, 0.5]})
    folder = tmp_path / "predictions" / "experiment=x"
    folder.mkdir(parents=True)
    for t, acc in (("b", 0.6), ("g", 0.5)):
        pl.DataFrame({"trial": [t] * 10, "id": _ids(10), "value_correct": [i < 10 * acc for i in range(10)]}) \
            .write_parquet(folder / f"{t}.parquet")
    points = summaries.size_points(runs, read.scan(str(tmp_path), "predictions"), "variant", ["base", "gcn"], [],
                                   claims_rows)
    stars = dict(zip(points["arm"], points["star"]))
    assert stars == {"base": "", "gcn": "**↓"}


def test_seeds_by_folds_of_unequal_size_pool_examples(tmp_path, capsys):
    rng = np.random.default_rng(9)
    runs, preds, base_acc = [], {}, {}
    for s in (0, 1):
        right = 0
        for f, n in ((0, 100), (1, 150)):
            a, b = _pairs(rng, n, 0.05, 0.1)
            ids = [f"mawps:{f}-{i}" for i in range(n)]
            runs += [_run(f"b{s}{f}", "base", s, **{"data.fold": f}), _run(f"g{s}{f}", "gcn", s, **{"data.fold": f})]
            preds |= {f"b{s}{f}": _preds(ids, a), f"g{s}{f}": _preds(ids, b)}
            right += int(a.sum())
        base_acc[s] = 100 * right / 250  # pooled over examples, not the mean of the two folds' accuracies
    _write_tables(tmp_path, "sf", runs, preds)
    r = _build(tmp_path).rows.row(0, named=True)
    assert (r["n_examples"], r["n_seeds"], r["folds"]) == (250, 2, [0, 1])
    assert r["base"] == pytest.approx(np.mean(list(base_acc.values())))
    assert analyze(["analyze", "compare", "--root", str(tmp_path), "--treatment+", "gcn", "--resamples", "200",
                    "--metric+", "value", "--metric+", "expression"]) == 0
    out = capsys.readouterr().out
    assert out.count("| PseDual-GCN vs base |") == 2 and "compare_all" in out


def test_claims_on_runs_with_leakage_or_changed_data_are_flagged():
    """Issue 37: a test split that overlaps training (other ids), or a run tested on data changed
    since it trained (`psedual test --allow_changed_data`), flags the claim."""
    from analysis.checks.guardrails import data_flags

    def run(trial, leaked=None, changed=None):
        return {"experiment": "x", "trial": trial, "data_train_hash": "a", "data_test_hash": "b",
                "data_test_leaked": leaked, "data_changed": changed}

    assert data_flags("cell", [(run("b0", 0), run("g0", 0))], set()) == []
    assert data_flags("cell", [(run("b0"), run("g0"))], set()) == []  # tables from before the columns
    flags = data_flags("cell", [(run("b0", 67), run("g0", 67)), (run("b1", 67, True), run("g1", 67))], set())
    assert flags == ["leakage: up to 67 test problem(s) per run also in its training split under other ids (4 of 4 "
                     "runs, e.g. x/b0): the test is not wholly held out (psedual data stats counts them)",
                     "tested on data changed since training (psedual test --allow_changed_data): x/b1"]


def test_arms_that_trained_in_different_environments_are_compared_and_flagged(tmp_path):
    """Issue 42: where a run trained (`env.*`) is no config. Two arms of one sweep whose trials got
    another GPU, another node, another torch build are compared (a refusal would make any
    heterogeneous cluster's sweep unanalysable); a set of torch, CUDA or GPU values that differs
    between the arms is said on the claim."""
    p = _preds(_ids(50, "mawps"), np.arange(50) % 3 > 0)
    env = {"env.python": "3.11.9", "env.torch": "2.7.1+cu126", "env.cuda": "12.6", "env.ray": "2.60.0",
           "env.device": "cuda:0", "env.gpu": "NVIDIA A10G", "env.node": "ip-10-0-0-1"}
    other = {**env, "env.device": "cpu", "env.gpu": None, "env.node": "ip-10-0-0-2", "env.torch": "2.7.1+cpu",
             "env.cuda": "none"}
    _write_tables(tmp_path / "a", "c", [_run("b0", "base", **env), _run("g0", "gcn", **other)], {"b0": p, "g0": p})
    flags = _build(tmp_path / "a").rows.row(0, named=True)["flags"]
    said = [f for f in flags if f.startswith("environment differs")]
    assert said == ["environment differs (not refused: trials take the nodes that are free): env.torch: base "
                    "['2.7.1+cu126'] vs gcn ['2.7.1+cpu']",
                    "environment differs (not refused: trials take the nodes that are free): env.cuda: base ['12.6'] "
                    "vs gcn ['none']",
                    "environment differs (not refused: trials take the nodes that are free): env.gpu: base "
                    "['NVIDIA A10G'] vs gcn ['cpu']"]
    # the same kernels on another node and device index: nothing to say
    _write_tables(tmp_path / "b", "c", [_run("b0", "base", **env),
                                        _run("g0", "gcn", **{**env, "env.device": "cuda:1", "env.node": "x"})],
                  {"b0": p, "g0": p})
    assert not any(f.startswith("environment") for f in _build(tmp_path / "b").rows.row(0, named=True)["flags"])
    # the same encoder id read at two hub commits (issue 49: the runs table records the commit)
    _write_tables(tmp_path / "c", "c", [_run("b0", "base", **env, **{"env.plm_commit": "a" * 40}),
                                        _run("g0", "gcn", **env, **{"env.plm_commit": "b" * 40})], {"b0": p, "g0": p})
    assert [f for f in _build(tmp_path / "c").rows.row(0, named=True)["flags"] if f.startswith("environment")] == [
        f"environment differs (not refused: trials take the nodes that are free): env.plm_commit: base ['{'a' * 40}'] "
        f"vs gcn ['{'b' * 40}']"]
