"""analysis/ checks what it compares: crafted tables, written with the package's own table writer,
for each way a claim read wrongly before (issue 28). Each yields a refusal or a flagged claim."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.claims import claims
from analysis.cli import main as analyze
from analysis.report import summaries
from analysis.tables import read
from analysis.tables.claim import CLAIMS_SCHEMA
from psedual.data.identity import split_hash
from psedual.reexamine.config import EXPRESSION_ENCODERS
from psedual.results import tables
from claim_rows import claim_row

GOLD = ["+", "N0", "N1"]
WRONG = ["*", "N0", "N1"]
"""the predicted expression of a problem got wrong: a prediction table's expression correctness is
its predicted expression's being the gold (`guardrails` recomputes it)"""


def _pairs(rng, n, only_a, only_b, both=0.6):
    u = rng.random(n)
    a = (u < both) | ((u >= both) & (u < both + only_a))
    b = (u < both) | ((u >= both + only_a) & (u < both + only_a + only_b))
    return a, b


def _ids(n, dataset="mawps"):
    return [f"{dataset}:{i}" for i in range(n)]


def _preds(ids, correct, golds=None, infill=None) -> list[dict]:
    golds = golds or [GOLD] * len(ids)
    infill = infill or [None] * len(ids)
    return [{"id": i, "predicted": g if c else WRONG, "gold": g, "value_correct": bool(c),
             "expression_correct": bool(c), "expression_correct_values": bool(c), "infill_predicted": f, "infill_gold": f}
            for i, c, g, f in zip(ids, correct, golds, infill)]


def _write(root: Path, runs: list[tuple[dict, list[dict]]], experiment: str = "x", identity: bool = True,
           epochs: dict[str, list[float]] | None = None) -> None:
    """Each (run row, its prediction rows) through `psedual.results.tables.write`, as a sweep writes
    them; the run's defaults are those of a finished trial, its data identity that of its rows, its
    epochs table its validation score at epoch 1 and a lower one at epoch 2 (or `epochs[trial]`)."""
    for run, preds in runs:
        # a PseDual run's config names its expression encoder, as the variant does (analysis.checks.labels)
        encoder = {"psedual.expression_encoder": run["variant"]} if run.get("variant") in EXPRESSION_ENCODERS else {}
        row = {"status": "completed", "solver": "gts", "seed": 0, "data.dataset": "mawps", "data.fold": 0,
               "epochs": 10, "lr": 0.001, "code_version": "v1", "best_epoch": 1, "valid_value_acc": 0.5,
               "n_train": 1000, "n_valid": 100, "n_test": len(preds),
               "test_value_acc": float(np.mean([p["value_correct"] for p in preds])), **encoder, **run}
        if identity:
            row = {"data_train_hash": f"train-{row['n_train']}",
                   "data_test_hash": split_hash((p["id"], p["gold"]) for p in preds), **row}
        trial = row["trial"]
        tables.write(str(root), "runs", experiment, trial, [row])
        tables.write(str(root), "predictions", experiment, trial, [{"trial": trial, **p} for p in preds])
        # the epochs table holds the run's validation score at its best_epoch (1), a lower one after
        v = row["valid_value_acc"]
        later = v - 0.1 if v is not None and np.isfinite(v) else v
        curve = (epochs or {}).get(trial, [v, later])
        tables.write(str(root), "epochs", experiment, trial,
                     [{"trial": trial, "epoch": e, "valid_value_acc": x} for e, x in enumerate(curve, 1)])


def _build(root: Path, **kw) -> claims.Claims:
    cmp = claims.Comparison(family="t", treatments=("gcn",), n_resamples=500, **kw)
    return claims.build(read.scan(str(root), "runs").collect(), read.scan(str(root), "epochs"),
                        read.scan(str(root), "predictions"), cmp)


def _effect(n=400, seed=0):
    return _pairs(np.random.default_rng(seed), n, 0.02, 0.15)


def test_a_diverged_trial_never_wins_its_slot(tmp_path):
    a, b = _effect()
    worse = a & (np.arange(a.size) % 2 == 0)
    _write(tmp_path, [({"trial": "b0", "variant": "base"}, _preds(_ids(400), a)),
                      ({"trial": "g0", "variant": "gcn", "valid_value_acc": float("nan"), "lr": 0.01},
                       _preds(_ids(400), b)),
                      ({"trial": "g1", "variant": "gcn", "valid_value_acc": 0.3, "lr": 0.002},
                       _preds(_ids(400), worse))])
    built = _build(tmp_path)
    r = built.rows.row(0, named=True)
    assert r["treatment_trials"] == ["x/g1"] and r["delta"] < 0  # before: x/g0 (NaN sorts first), Δ > 0
    assert "1 run(s) with a non-finite valid_value_acc cannot win their slot: x/g0 (nan)" in built.notes
    _write(tmp_path, [({"trial": "g1", "variant": "gcn", "valid_value_acc": float("inf"), "lr": 0.002},
                       _preds(_ids(400), worse))])
    with pytest.raises(claims.GuardrailError, match=r"x/g\d has valid_value_acc (nan|inf), and no run of its slot"):
        _build(tmp_path)


def test_a_nan_test_accuracy_is_refused_as_a_result(tmp_path, capsys):
    a, b = _effect()
    _write(tmp_path, [({"trial": "b0", "variant": "base"}, _preds(_ids(400), a)),
                      ({"trial": "g0", "variant": "gcn", "test_value_acc": float("nan")}, _preds(_ids(400), b))])
    with pytest.raises(claims.GuardrailError, match=r"x/g0: test_value_acc is nan: not a result"):
        _build(tmp_path)
    assert analyze(["analyze", "table1", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "x/g0" in err


def test_arms_trained_on_different_data_are_refused(tmp_path):
    a, b = _effect()
    other = [GOLD if i % 10 else ["-", "N0", "N1"] for i in range(400)]
    # the same config; the treatment trained on 1400 problems and its test golds differ on 40 ids
    _write(tmp_path / "hash", [({"trial": "b0", "variant": "base"}, _preds(_ids(400), a)),
                               ({"trial": "g0", "variant": "gcn", "n_train": 1400}, _preds(_ids(400), b, other))])
    with pytest.raises(claims.GuardrailError, match=r"x/b0 and x/g0 trained or tested on different data: n_train "
                                                    r"1000 vs 1400; .*--allow_diff\+ n_train"):
        _build(tmp_path / "hash")
    _write(tmp_path / "size", [({"trial": "b0", "variant": "base"}, _preds(_ids(400), a)),
                               ({"trial": "g0", "variant": "gcn", "n_train": 1400}, _preds(_ids(400), b))])
    flagged = _build(tmp_path / "size", allow_diff=("n_train", "data_train_hash"))
    assert "data differs (allowed by --allow_diff): x/b0 and x/g0 trained or tested on different data: n_train " \
           "1000 vs 1400" in flagged.rows["flags"][0]
    # tables without the data identity: the golds of the paired examples still tell
    _write(tmp_path / "old", [({"trial": "b0", "variant": "base"}, _preds(_ids(400), a)),
                              ({"trial": "g0", "variant": "gcn"}, _preds(_ids(400), b, other))], identity=False)
    with pytest.raises(claims.GuardrailError, match=r"other gold expressions for 40 test example\(s\) \['mawps:0', "):
        _build(tmp_path / "old")


def test_tables_without_a_data_identity_are_flagged(tmp_path):
    a, b = _effect()
    _write(tmp_path, [({"trial": "b0", "variant": "base"}, _preds(_ids(400), a)),
                      ({"trial": "g0", "variant": "gcn"}, _preds(_ids(400), b))], identity=False)
    flags = _build(tmp_path).rows["flags"][0].to_list()
    assert any(f.startswith("data identity not recorded for 1 pair(s) (x/b0 and x/g0)") for f in flags)


def test_predictions_outside_the_recorded_test_split_are_refused(tmp_path):
    a, b = _effect()
    tested = split_hash((i, GOLD) for i in _ids(400))  # the split both runs were tested on
    elsewhere = [*_ids(397), "svamp:1", "svamp:2", "svamp:3"]  # 3 of their prediction ids are not in it
    _write(tmp_path, [({"trial": "b0", "variant": "base", "data_test_hash": tested}, _preds(elsewhere, a)),
                      ({"trial": "g0", "variant": "gcn", "data_test_hash": tested}, _preds(elsewhere, b))])
    with pytest.raises(claims.GuardrailError, match=r"x/b0: its 400 prediction rows .* are not the test split it "
                                                    r"recorded"):
        _build(tmp_path)


def test_one_seed_is_never_a_stronger_verdict_than_several(tmp_path):
    runs = []
    for s in range(3):
        a, b = _effect(seed=s)
        runs += [({"trial": f"b{s}", "variant": "base", "seed": s}, _preds(_ids(400), a)),
                 ({"trial": f"g{s}", "variant": "gcn", "seed": s}, _preds(_ids(400), b))]
    _write(tmp_path / "three", runs)
    _write(tmp_path / "one", runs[:2])
    three = _build(tmp_path / "three").rows.row(0, named=True)
    one = _build(tmp_path / "one").rows.row(0, named=True)
    assert three["verdict"] == "inconclusive (3 seeds)"
    assert one["p_adjusted"] < 1e-6 and one["verdict"] == "inconclusive (1 seed)"  # before: "better"
    assert any(f.startswith("1 seed: the test compares these two trained models") for f in one["flags"])


@pytest.mark.parametrize("n, fixed", [(6, 6), (10, 5)])
def test_no_verdict_below_the_minimum_test_size(tmp_path, n, fixed):
    # before: 6 of 6 fixed read "better" (p 0.031); 5 of 10 read "not significant" beside a CI of [+20, +80]
    _write(tmp_path, [({"trial": "b0", "variant": "base", "llm.model": "m"}, _preds(_ids(n), np.zeros(n, bool))),
                      ({"trial": "g0", "variant": "gcn", "llm.model": "m"}, _preds(_ids(n), np.arange(n) < fixed))])
    r = _build(tmp_path).rows.row(0, named=True)
    assert r["verdict"] == f"too few test examples ({n} < 30): no verdict"


def test_compare_by_solver_keeps_each_dataset_apart(tmp_path, capsys):
    runs = []
    for dataset, fold in (("mawps", 0), ("svamp", None)):
        a, b = _effect(seed=3)
        for v, c in (("base", a), ("gcn", b)):
            runs.append(({"trial": f"{dataset}-{v}", "variant": v, "data.dataset": dataset, "data.fold": fold},
                         _preds(_ids(400, dataset), c)))
    _write(tmp_path, runs)
    assert analyze(["analyze", "compare", "--root", str(tmp_path), "--treatment+", "gcn", "--by+", "solver",
                    "--resamples", "200"]) == 0  # before: TypeError (None vs 0 folds), exit 2
    rows = pl.read_parquet(tmp_path / "claims" / "compare_all.parquet")
    assert sorted(rows["dataset"].to_list()) == ["mawps", "svamp"]  # one claim per dataset, none dropped


def test_a_differing_tuning_budget_is_a_flag_naming_both(tmp_path):
    a, b = _effect()
    runs = [({"trial": "b0", "variant": "base"}, _preds(_ids(400), a))]
    runs += [({"trial": f"g{k}", "variant": "gcn", "lr": 0.001 * (k + 1), "valid_value_acc": 0.5 - 0.01 * k},
              _preds(_ids(400), b)) for k in range(5)]
    _write(tmp_path, runs)
    r = _build(tmp_path).rows.row(0, named=True)
    assert "tuning budgets differ: base 1 trial(s) per slot vs gcn 5: the better-tuned arm had more chances to " \
           "win" in r["flags"]


def test_replicates_are_refused_not_cherry_picked(tmp_path):
    a, b = _effect()
    runs = [({"trial": "b0", "variant": "base"}, _preds(_ids(400), a))]
    runs += [({"trial": f"g{k}", "variant": "gcn", "valid_value_acc": 0.4 + 0.1 * k},
              _preds(_ids(400), b if k == 2 else a)) for k in range(3)]
    _write(tmp_path, runs)
    with pytest.raises(claims.GuardrailError, match=r"x/g0 and x/g1 are replicates \(the same config and seed\)"):
        _build(tmp_path)


def test_a_slot_mixing_training_sizes_is_refused(tmp_path):
    a, b = _effect()
    _write(tmp_path, [({"trial": "b0", "variant": "base", "data.train_size": 400}, _preds(_ids(400), a)),
                      ({"trial": "b1", "variant": "base", "data.train_size": 1400, "valid_value_acc": 0.9},
                       _preds(_ids(400), a)),
                      ({"trial": "g0", "variant": "gcn", "data.train_size": 400}, _preds(_ids(400), b))],
           identity=False)
    with pytest.raises(claims.GuardrailError, match=r"trained on different data \(data.train_size \[400, 1400\]\); "
                                                    r"add --by\+ data.train_size"):
        _build(tmp_path)


def test_infill_refuses_rows_short_of_what_the_run_infilled(tmp_path, capsys):
    n = 199
    fill = [[0, 1] if i < 99 else None for i in range(n)]
    _write(tmp_path, [({"trial": "g0", "variant": "gcn", "test_infill_acc": 1.0, "n_test_infilled": n},
                       _preds(_ids(n), np.ones(n, bool), infill=fill))])
    assert analyze(["analyze", "infill", "--root", str(tmp_path), "--resamples", "200"]) == 2  # before: 99 rows read
    assert "x/g0: 99 prediction rows hold infilling" in capsys.readouterr().err
    with pytest.raises(claims.GuardrailError, match=r"x/g0: 99 prediction rows hold infilling but the run infilled "
                                                    r"199"):
        summaries.infill(read.scan(str(tmp_path), "runs").collect(), read.scan(str(tmp_path), "epochs"),
                         read.scan(str(tmp_path), "predictions"), ["data.dataset", "solver", "variant"], 200, 0)


def test_a_ci_and_a_verdict_never_contradict(tmp_path):
    # 30 problems, 5 fixed and none broken: exact McNemar p 0.0625, but fewer than 2.5% of bootstrap
    # resamples miss all 5, so the percentile CI excludes 0 (before: "not significant" beside it)
    n = 30
    _write(tmp_path, [({"trial": "b0", "variant": "base", "llm.model": "m"}, _preds(_ids(n), np.zeros(n, bool))),
                      ({"trial": "g0", "variant": "gcn", "llm.model": "m"}, _preds(_ids(n), np.arange(n) < 5))])
    r = _build(tmp_path).rows.row(0, named=True)
    assert r["ci_low"] > 0 and r["p"] > 0.05
    assert r["verdict"] == "inconclusive (the 95% CI and mcnemar_exact disagree)"


def test_the_curve_plots_what_its_claim_rows_say(tmp_path):
    a, b = _effect()
    _write(tmp_path, [({"trial": "b0", "variant": "base"}, _preds(_ids(400), a)),
                      ({"trial": "g0", "variant": "gcn"}, _preds(_ids(400), b))])
    said = pl.DataFrame([claim_row(cell="", base=100 * a.mean(), treatment=100 * b.mean() + 1, p_adjusted=0.5,
                                   delta=1.0)], schema=CLAIMS_SCHEMA)
    runs = read.scan(str(tmp_path), "runs").collect()
    with pytest.raises(claims.GuardrailError, match=r"gcn's points .* are not its claim rows'"):
        summaries.size_points(runs, read.scan(str(tmp_path), "predictions"), "variant", ["base", "gcn"], [], said)
    points = summaries.size_points(runs, read.scan(str(tmp_path), "predictions"), "variant", ["base", "gcn"], [],
                                   said.with_columns(treatment=pl.lit(100 * b.mean())))
    assert points["acc"].to_list() == pytest.approx([100 * a.mean(), 100 * b.mean()])


def test_a_ci_that_excludes_zero_beside_an_adjusted_not_significant_says_why(tmp_path):
    n = 400
    base = np.arange(n) < 200
    gcn, gru = base.copy(), base.copy()
    gcn[200:214], gcn[:4] = True, False  # 14 fixed, 4 broken: exact McNemar p 0.031
    gru[200:203], gru[:3] = True, False  # 3 and 3: p 1
    _write(tmp_path, [({"trial": "b0", "variant": "base", "llm.model": "m"}, _preds(_ids(n), base)),
                      ({"trial": "g0", "variant": "gcn", "llm.model": "m"}, _preds(_ids(n), gcn)),
                      ({"trial": "r0", "variant": "gru", "llm.model": "m"}, _preds(_ids(n), gru))])
    cmp = claims.Comparison(family="t", treatments=("gru", "gcn"), n_resamples=2000)
    rows = claims.build(read.scan(str(tmp_path), "runs").collect(), read.scan(str(tmp_path), "epochs"),
                        read.scan(str(tmp_path), "predictions"), cmp).rows
    r = rows.filter(pl.col("treatment_arm") == "gcn").row(0, named=True)
    assert r["p"] < 0.05 <= r["p_adjusted"] and r["ci_low"] > 0
    # before: a bare "not significant" beside a CI above 0; then "not significant after holm (...)"
    assert re.fullmatch(r"undecided: about \d+ more test examples would decide \(the difference test, \d+ in all\); "
                        r"1 seed: the seeds needed are not measurable \(the unadjusted 95% CI excludes 0; not after "
                        r"holm\)", r["verdict"]), r["verdict"]


def test_infill_refuses_seeds_that_scored_other_examples(tmp_path, capsys):
    n = 50
    runs = []
    for s in range(2):
        # seed 1's run infilled other problems than seed 0's: a mean over them compares nothing
        fill = [[0, 1] if (i < 40) == (s == 0) or i == 45 else None for i in range(n)]
        runs.append(({"trial": f"g{s}", "variant": "gcn", "seed": s, "test_infill_acc": 1.0,
                      "n_test_infilled": sum(f is not None for f in fill)},
                     _preds(_ids(n), np.ones(n, bool), infill=fill)))
    _write(tmp_path, runs)
    assert analyze(["analyze", "infill", "--root", str(tmp_path), "--resamples", "200"]) == 2
    assert "seeds [0, 1] scored other test examples" in capsys.readouterr().err


def test_a_slot_whose_runs_recorded_other_data_is_refused(tmp_path):
    # the same config twice in one slot (lr searched), but the second trained on another data version
    a, b = _effect()
    _write(tmp_path, [({"trial": "b0", "variant": "base"}, _preds(_ids(400), a)),
                      ({"trial": "g0", "variant": "gcn"}, _preds(_ids(400), b)),
                      ({"trial": "g1", "variant": "gcn", "lr": 0.002, "n_train": 1400}, _preds(_ids(400), b))])
    with pytest.raises(claims.GuardrailError, match=r"its runs \['x/g0', 'x/g1'\] trained on different data "
                                                    r"\(n_train \[1000, 1400\]; data_train_hash"):
        _build(tmp_path)
