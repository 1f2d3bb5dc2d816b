"""`analyze report`: one Markdown report whose numbers are the result tables', built through the
same checked path as `analyze table1|table3|infill|curve`, from whatever parts have finished."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.cli import main as analyze
from analysis.tables import paper
from psedual.data.expr import UNUSED
from psedual.results import tables
from psedual.solvers import SOLVERS
from test_analysis_checks import _ids, _pairs, _preds, _write

N = 60  # test problems per run: above the verdict's 30


def _differs(recipe: int) -> str:
    """What a report says beside each paper figure of these smoke-scale runs (10 epochs, 60 of fold
    0's 397 test problems): how their protocol differs from the paper's."""
    return (f"(protocol differs: 10 epochs (its published recipe: {recipe}); tested on {N} of the 397 test problems "
            f"of folds [0]; folds [0] of 5)")


def _infill_preds(correct: np.ndarray, rng) -> list[dict]:
    """Prediction rows with infilling: gold [0, 1, UNUSED]; the prediction swaps the used slots on
    some problems (0 of 2 right), repeats one on others (1 of 2) and fills the unused one on others
    (2 of 2: an unused slot is not scored)."""
    rows = _preds(_ids(N), correct)
    for r in rows:
        wrong = rng.random()
        r["infill_gold"] = [0, 1, UNUSED]
        r["infill_predicted"] = ([1, 0, UNUSED] if wrong < 0.2 else [0, 0, UNUSED] if wrong < 0.35
                                 else [0, 1, 0] if wrong < 0.5 else [0, 1, UNUSED])
    return rows


def _table1(root: Path, experiment: str, stopped: str | None = None) -> None:
    """mawps fold 0 × {gts, bert_tree} × {base, gru, gcn} × seeds 0-2; PseDual runs infill."""
    rng = np.random.default_rng(32)
    runs = []
    for solver in ("gts", "bert_tree"):
        for seed in range(3):
            a, b = _pairs(rng, N, 0.05, 0.15)
            for variant, correct in (("base", a), ("gru", b), ("gcn", a | b)):
                trial = f"{solver}-{variant}-s{seed}"
                row = {"trial": trial, "variant": variant, "solver": solver, "seed": seed}
                if variant == "base":
                    preds = _preds(_ids(N), correct)
                else:
                    preds = _infill_preds(correct, rng)
                    used = [(p["infill_predicted"], p["infill_gold"]) for p in preds]
                    hit = sum(x == g for p, gold in used for x, g in zip(p, gold) if g != UNUSED)
                    row |= {"n_test_infilled": N, "test_infill_acc": hit / (2 * N), "psedual.fusion": "scheduled"}
                runs.append((row, preds))
    _write(root, [r for r in runs if r[0]["trial"] != stopped], experiment)
    if stopped:  # killed before its test: a runs row with no result and no predictions
        row = next(r for r, _ in runs if r["trial"] == stopped)
        tables.write(str(root), "runs", experiment, stopped,
                     [{**row, "status": "stopped", "data.dataset": "mawps", "data.fold": 0, "epochs": 10,
                       "lr": 0.001, "code_version": "v1", "n_train": 1000}])


def _table3(root: Path, experiment: str) -> None:
    rng = np.random.default_rng(3)
    runs = [({"trial": f"base-s{s}", "variant": "base", "seed": s}, _preds(_ids(N), _pairs(rng, N, 0.1, 0.1)[0]))
            for s in range(3)]
    for seed in range(3):
        a, b = _pairs(rng, N, 0.1, 0.05)
        runs += [({"trial": f"gcn-{f}-s{seed}", "variant": "gcn", "seed": seed, "psedual.fusion": f}, _preds(_ids(N), c))
                 for f, c in (("teacher_forcing", a), ("scheduled", b))]
    _write(root, runs, experiment)


def _figure1(root: Path, experiment: str, seeds: int = 2) -> None:
    rng = np.random.default_rng(1)
    runs = []
    for size in (100, 200):
        for seed in range(seeds):
            a, b = _pairs(rng, N, 0.05, 0.1)
            runs += [({"trial": f"{v}-{size}-s{seed}", "variant": v, "seed": seed, "data.train_size": size,
                       "n_train": size}, _preds(_ids(N), c)) for v, c in (("base", a), ("gcn", b))]
    _write(root, runs, experiment)


def _report(root: Path, experiment: str, out: Path, capsys) -> str:
    assert analyze(["analyze", "report", "--root", str(root), "--experiment+", experiment, "--out", str(out),
                    "--resamples", "200"]) == 0
    assert f"report: {out / 'report.md'}" in capsys.readouterr().out
    return (out / "report.md").read_text()


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    _table1(root, "X.table1")
    _table3(root, "X.table3")
    _figure1(root, "X.figure1")
    return root


def test_the_report_s_numbers_are_the_result_tables(full, tmp_path, capsys):
    text = _report(full, "X", tmp_path / "out", capsys)
    runs = pl.read_parquet(full / "runs" / "experiment=X.table1" / "*.parquet")
    preds = pl.read_parquet(full / "predictions" / "experiment=X.table1" / "*.parquet")
    # Table 1, gts on mawps: each arm's mean over seeds of the per-run value accuracy (from its
    # prediction rows), its sd, and Δ = mean(GCN) − mean(base); beside the base the paper's rerun
    # (82.7), then the solver's own paper's figure (82.6)
    acc = preds.group_by("trial").agg(acc=100 * pl.col("value_correct").mean()).join(runs, on="trial")
    arm = {v: acc.filter((pl.col("solver") == "gts") & (pl.col("variant") == v))["acc"] for v in ("base", "gcn")}
    table1 = _section(text, "Table 1")
    base = f"| mawps | gts | value | base | 3 | {arm['base'].mean():.2f} ± {arm['base'].std():.2f} | – (the reference) | 82.7; own paper " \
           f"82.6 {_differs(80)} |"
    assert base in table1
    delta = f"{arm['gcn'].mean() - arm['base'].mean():+.2f}".replace("-", "−")
    assert re.search(rf"\| mawps \| gts \| value \| PseDual-GCN \| 3 \| {arm['gcn'].mean():.2f} ± "
                     rf"{arm['gcn'].std():.2f} \| {re.escape(delta)}\**? \| 83\.6 {re.escape(_differs(80))} \|", table1)
    # BERT-Tree's GRU and GCN rows each carry the paper's figure of that encoder
    assert re.search(rf"\| bert_tree \| value \| PseDual-GRU \| 3 \| [^\n]* \| 89\.4 {re.escape(_differs(50))} \|", table1)
    assert re.search(rf"\| bert_tree \| value \| PseDual-GCN \| 3 \| [^\n]* \| 89\.5 {re.escape(_differs(50))} \|", table1)
    # the claim rows: the paper's base → treatment, and how our smoke-scale protocol differs (issue 52)
    assert f"| 88.7 → 89.4 {_differs(50)} |" in table1 and f"| 88.7 → 89.5 {_differs(50)} |" in table1
    # Table 4 as the paper's: per seed, right slots / all masked slots (3 a problem), the mean over
    # seeds, beside the paper's figures; ours over the used slots (2 a problem) apart, without them
    mine = preds.join(runs.select("trial", "solver", "variant", "seed"), on="trial").filter(
        (pl.col("solver") == "gts") & (pl.col("variant") == "gcn"))
    table4 = _section(text, "Table 4")
    assert "| infilling acc, all masked numbers (%) | 95% CI | paper infilling acc (%) |" in table4
    for slots, used_only in ((3, False), (2, True)):
        right = mine.with_columns(right=pl.struct("infill_predicted", "infill_gold").map_elements(
            lambda r: sum(p == g for p, g in zip(r["infill_predicted"], r["infill_gold"])
                          if not (used_only and g == UNUSED)), return_dtype=pl.Int64))
        per_seed = right.group_by("seed").agg(acc=100 * pl.col("right").sum() / (slots * pl.len()))["acc"]
        shown = re.search(rf"\| mawps \| gts \| gcn \| 3 \| {N} \| {per_seed.mean():.2f} ± {per_seed.std():.2f} \|"
                          rf"[^\n]*", table4)
        assert shown and ("80.31 (PseDual)" in shown[0]) != used_only, (used_only, shown)
    assert table4.index("all masked numbers (%)") < table4.index("Ours, over the used slots only") < \
        table4.index("| infilling acc, used slots only (%) |")
    # Table 3 and Figure 1 are there, with the figure drawn beside the report
    assert "| mawps | gts / gcn | value | teacher forcing | 3 |" in _section(text, "Table 3")
    assert (tmp_path / "out" / "figure1.png").read_bytes()[:4] == b"\x89PNG"
    assert "| 200 | PseDual-GCN | 2 |" in _section(text, "Figure 1")
    # each claims part's learning curves: a figure beside the report, and where the arms stand
    for part in ("table1", "table3"):
        assert (tmp_path / "out" / f"learning_{part}.png").read_bytes()[:4] == b"\x89PNG"
    assert "![learning curves of table1](learning_table1.png)" in _section(text, "Table 1")
    assert re.search(r"- data.dataset=mawps, solver=gts: PseDual-GCN vs base: (base|PseDual-GCN) ahead|level",
                     _section(text, "Table 1"))
    # the header, and what the paper has that we did not run
    assert "- experiment: X; parts present: X.table1, X.table3, X.figure1" in text and "- commit: " in text
    missing = _section(text, "Missing or skipped")
    assert "- X.table2 (Table 2): not in the results storage (run only when an LLM endpoint is configured)" in missing
    assert ("- paper table1 math23k / bert_tree: reported expression_values 71.2, reported value 82.4, base "
            "expression_values 71.1, base value 82.3, gru expression_values 71.7, gru value 83.6, gcn "
            "expression_values 71.8, gcn value 84.1; not run here") in missing
    # what we ran is not listed; what we ran but not in the paper's metric is
    assert "- paper table1 mawps / gts: base expression_values 81.9, gru expression_values 82.5, gcn " \
           "expression_values 82.6; not run here" in missing
    assert "- paper table3 math23k / gts: teacher_forcing expression_values 65.3" in missing
    assert "- paper figure1: no published figure: Figure 1 is an image not in the paper's source" in missing
    assert "not found" not in text


def test_the_report_s_claims_are_the_table1_command_s(full, tmp_path, capsys):
    _report(full, "X", tmp_path / "out", capsys)
    assert analyze(["analyze", "table1", "--root", str(full), "--experiment+", "X.table1", "--resamples", "200"]) == 0
    command = pl.read_parquet(full / "claims" / "table1_X.table1.parquet").drop("family")
    reported = pl.read_parquet(full / "claims" / "report_X.table1.parquet").drop("family")
    assert reported.equals(command) and reported.height == 4
    flagged = reported.filter(pl.col("flags").list.len() > 0)["flags"][0].to_list()
    assert any("3 seeds" in f for f in flagged)  # the command's flags, on the report's claims


def test_a_partial_experiment_says_what_is_missing(tmp_path, capsys):
    root = tmp_path / "results"
    _table1(root, "Y.table1", stopped="gts-base-s2")
    _figure1(root, "Y.figure1")
    text = _report(root, "Y", tmp_path / "out", capsys)
    missing = _section(text, "Missing or skipped")
    assert "- Y.table3 (Table 3): not in the results storage" in missing
    assert "- trial Y.table1/gts-base-s2: status stopped; no test result: skipped" in missing
    assert "- trials: 26 (25 completed, 1 stopped)" in text
    # the stopped base run's partners are dropped, and the claim says so
    assert "unpaired seeds dropped: [2]" in _section(text, "Table 1")
    assert "## Table 3" not in text.split("## Missing or skipped")[0]


def test_a_cell_without_runs_and_a_section_that_cannot_be_built_are_listed(tmp_path, capsys):
    root = tmp_path / "results"
    _figure1(root, "Z.figure1")
    for trial in ("gcn-200-s0", "gcn-200-s1"):
        (root / "runs" / "experiment=Z.figure1" / f"{trial}.parquet").unlink()
    _table3(root, "Z.table3")
    for seed in range(3):  # no scheduled-fusion run finished: Table 3 has nothing to compare
        (root / "runs" / "experiment=Z.table3" / f"gcn-scheduled-s{seed}.parquet").unlink()
    text = _report(root, "Z", tmp_path / "out", capsys)
    missing = _section(text, "Missing or skipped")
    assert "- Z.figure1: no finished run for mawps / gts / 200 / gcn" in missing
    assert "- Z.table3: no finished run for mawps / gts / gcn / scheduled" in missing
    assert "- Table 3 (Z.table3): not built: nothing to compare: data.dataset=mawps, solver=gts, variant=gcn: no " \
           "scheduled runs; scheduled vs teacher_forcing skipped" in missing
    assert "Not built: nothing to compare" in _section(text, "Table 3")
    # the figure is drawn from what finished, and says what it skipped
    figure = _section(text, "Figure 1")
    assert "| 100 | PseDual-GCN | 2 |" in figure and "data.train_size=200: no gcn runs; gcn vs base skipped" in figure
    assert (tmp_path / "out" / "figure1.png").exists()


def test_a_bad_experiment_is_one_clear_line(full, tmp_path, capsys):
    assert analyze(["analyze", "report", "--root", str(full), "--experiment", "nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no part of experiment 'nope' (looked for nope.table1, nope.table3" in err
    assert "experiments present: X.figure1, X.table1, X.table3" in err
    assert analyze(["analyze", "report", "--root", str(full), "--out", str(tmp_path)]) == 2
    assert "give one --experiment NAME" in capsys.readouterr().err
    assert not (tmp_path / "report.md").exists()


def test_the_paper_numbers_file():
    numbers = paper.load()
    assert numbers.columns == list(paper.SCHEMA) and numbers.height == 159  # the paper's Tables 1-4, all of them
    assert all(r["source"] and r["via"] for r in numbers.iter_rows(named=True))  # each says where it was read
    assert set(numbers.filter(pl.col("table") != "table2")["solver"]) <= set(SOLVERS)
    # Table 1: the authors' rerun is our base, the solver's own paper beside it; GRU and GCN apart
    assert str(paper.find(numbers, "table1", "mawps", "re_deduction", "base", "value")) == "92.1; own paper 92.0"
    assert str(paper.find(numbers, "table1", "mawps", "bert_tree", "base", "value")) == "88.7"  # none of its own
    assert str(paper.find(numbers, "table1", "mawps", "bert_tree", "gru", "value")) == "89.4"
    assert str(paper.find(numbers, "table1", "mawps", "bert_tree", "gcn", "value")) == "89.5"
    assert str(paper.find(numbers, "table1", "math23k", "gts", "gcn", "expression_values")) == "65.4"
    assert str(paper.find(numbers, "table1", "math23k", "gts", "gcn", "expression")) == "65.4 (by values)"
    # Table 3 is GCN's; Table 4's encoder is not stated; Table 2's LLM is ChatGPT
    assert str(paper.find(numbers, "table3", "math23k", "gts", "scheduled", "value", "gcn")) == "76.7"
    assert str(paper.find(numbers, "table3", "math23k", "gts", "teacher_forcing", "value", "gru")) == "76.3 (GCN)"
    assert str(paper.find(numbers, "table4", "mawps", "gts", "gru", "infill_acc")) == "80.31 (PseDual)"
    assert str(paper.find(numbers, "table4", "mathqa", "dns", "gcn", "perfect_match")) == "42.91 (PseDual)"
    assert str(paper.find(numbers, "table2", "svamp", "llm:qwen", "llm+reexamine", "value")) == "71.8 (ChatGPT)"
    assert str(paper.find(numbers, "table1", "svamp", "re_deduction", "base", "value")) == \
        "45.0 (Table 2, the solver's own paper)"  # the paper's Table 1 has no SVAMP
    assert paper.delta(numbers, "table1", "mawps", "gts", "base", "gcn", "value") == 0.9
    # a base arm never borrows the paper's PseDual row
    only_psedual = numbers.filter(pl.col("arm") == paper.PSEDUAL)
    assert paper.find(only_psedual, "table4", "mawps", "gts", "base", "infill_acc") is None


@pytest.mark.skipif(not paper.SOURCE.exists(), reason=f"the paper's figures.csv is not beside this checkout "
                    f"({paper.SOURCE}): nothing to keep analysis/tables/paper_numbers.csv equal to")
def test_the_paper_numbers_are_made_from_the_paper_s_figures(tmp_path, capsys):
    source = pl.read_csv(paper.SOURCE)
    assert paper.PATH.read_text() == paper.render(paper.from_source())  # `python -m analysis.tables.paper --sync` made it
    assert paper.main(["--check"]) == 0
    # every figure of the paper is found for the cell of ours it belongs beside
    for r in source.iter_rows(named=True):
        arm = paper.NAMES["arm"].get(r["arm"], r["arm"])
        arm = "gcn" if arm == paper.PSEDUAL else arm
        metric = paper.NAMES["metric"].get(r["metric"], r["metric"])
        if arm == paper.REPORTED:  # beside our base: as its second figure, or (SVAMP, Table 2's) its only one
            hit = paper.find(paper.load(), "table1", r["dataset"], r["solver"], "base", metric)
            assert hit is not None and r["value"] in (hit.reported, hit.value), r
        else:
            hit = paper.find(paper.load(), r["table"], r["dataset"], r["solver"], arm, metric, "gcn")
            assert hit is not None and hit.value == r["value"], r
    # a changed figure is told apart, and a bad source is one line naming its row
    changed = paper.SOURCE.read_text().replace("mawps,gts,gcn,value,83.6", "mawps,gts,gcn,value,83.7")
    (tmp_path / "figures.csv").write_text(changed)
    assert paper.main(["--check", "--source", str(tmp_path / "figures.csv")]) == 1
    assert "differs from" in capsys.readouterr().err
    (tmp_path / "figures.csv").write_text(changed.replace(",gcn,value,83.7", ",gnn,value,83.7"))
    assert paper.main(["--check", "--source", str(tmp_path / "figures.csv")]) == 2
    assert re.search(r"figures\.csv:\d+: unknown arm 'gnn'", capsys.readouterr().err)


def test_a_bad_paper_numbers_file_is_one_line_naming_it(tmp_path):
    good = paper.PATH.read_text().splitlines()
    for broken, said in ((good[0].replace("value,", "val,"), "not a paper-numbers table"),
                         (good[1].replace(",58.1,", ",581,"), ":2: value 581.0 is not a percentage"),
                         (good[1].replace("table1,", "table9,", 1), ":2: table 'table9'")):
        path = tmp_path / "p.csv"
        path.write_text("\n".join([broken, *good[1:]] if broken.startswith("table,") else [good[0], broken, *good[2:]]))
        with pytest.raises(ValueError, match=re.escape(said)):
            paper.load(path)
    (tmp_path / "p.csv").write_text("\n".join([*good, good[1]]))
    with pytest.raises(ValueError, match="share a cell"):
        paper.load(tmp_path / "p.csv")


def test_a_delta_never_stands_beside_a_base_it_was_not_computed_from(tmp_path, capsys):
    root = tmp_path / "results"
    _table1(root, "W.table1")
    for table in ("runs", "predictions", "epochs"):  # GTS-GRU lost seed 2; base and GCN have it
        (root / table / "experiment=W.table1" / "gts-gru-s2.parquet").unlink()
    assert analyze(["analyze", "table1", "--root", str(root), "--resamples", "200"]) == 0
    grid = capsys.readouterr().out.split("\n\n")[1]
    claims = pl.read_parquet(root / "claims" / "table1_all.parquet").filter(pl.col("solver") == "gts")
    gru, gcn = (claims.filter(pl.col("treatment_arm") == v).row(0, named=True) for v in ("gru", "gcn"))
    assert (gru["n_seeds"], gcn["n_seeds"]) == (2, 3) and gru["base"] != gcn["base"]
    # the base row holds no figure; each Δ names its own base
    assert "| gts | base | – (bases differ: see each Δ) |" in grid
    for r in (gru, gcn):
        assert f"vs base {r['base']:.2f} ± {r['base_sd']:.2f}, {r['n_seeds']} seeds)" in grid
    # BERT-Tree's arms share their base runs: one base figure, as before
    bert = pl.read_parquet(root / "claims" / "table1_all.parquet").filter(pl.col("solver") == "bert_tree")
    assert f"| bert_tree | base | {bert['base'][0]:.2f} ± {bert['base_sd'][0]:.2f} |" in grid
    # the report prints a base line per set of base runs: 2 seeds for GRU's Δ, 3 for GCN's
    table1 = _section(_report(root, "W", tmp_path / "out", capsys), "Table 1")
    for r in (gru, gcn):
        assert f"| mawps | gts | value | base | {r['n_seeds']} | {r['base']:.2f} ± {r['base_sd']:.2f} | – (the reference) |" in table1


def test_infill_sets_the_paper_s_table4_beside_every_masked_number_only(full, capsys):
    base = ["analyze", "infill", "--root", str(full), "--experiment", "X.table1", "--resamples", "200"]
    assert analyze(base) == 0
    out = capsys.readouterr().out
    assert "| infilling acc, all masked numbers (%) | 95% CI | paper infilling acc (%) |" in out
    differs = re.escape(_differs(80))
    assert re.search(rf"\| mawps \| gts \| gcn \| 3 \| 60 \| [^\n]* \| 80\.31 \(PseDual\) {differs} \| [^\n]* \| "
                     rf"62\.05 \(PseDual\) {differs} \|", out)
    assert analyze([*base, "--slots", "used"]) == 0
    out = capsys.readouterr().out
    assert "infilling acc, used slots only (%)" in out and "paper infilling" not in out and "80.31" not in out


def test_the_report_says_where_its_runs_trained():
    """Issue 42: the header's machine line is made of the runs' `env.*` columns."""
    import polars as pl

    from analysis.paper_report import _environments

    runs = pl.DataFrame({"env.gpu": [None, "NVIDIA A10G", "NVIDIA A10G", None],
                         "env.device": ["cpu", "cuda:0", "cuda:0", None],
                         "env.torch": ["2.13.0+cpu", "2.13.0+cu126", "2.13.0+cu126", None],
                         "env.cuda": ["none", "12.6", "12.6", None]})
    assert _environments(runs) == ("NVIDIA A10G (torch 2.13.0+cu126, CUDA 12.6): 2 run(s); cpu (torch 2.13.0+cpu, "
                                   "CUDA none): 1 run(s); not recorded: 1 run(s)")
    assert _environments(runs.drop("env.gpu")) == "not recorded in the runs table"  # tables from before


def test_the_report_s_claims_decide_and_draw_a_forest(full, tmp_path, capsys):
    """Issue 48: every claim carries its TOST and posterior, no verdict reads a bare 'not
    significant', and each claims part has its forest plot."""
    text = _report(full, "X", tmp_path / "out", capsys)
    assert "not significant" not in text and "TOST p (adj)" in text and "P(|Δ| < m)" in text
    for part in ("table1", "table3"):
        assert f"![forest plot of {part}](forest_{part}.png)" in text
        assert (tmp_path / "out" / f"forest_{part}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    verdicts = pl.read_parquet(full / "claims" / "report_X.table1.parquet")["verdict"].to_list()
    assert verdicts and all(v.startswith(("better", "worse", "equivalent within", "undecided: about", "inconclusive"))
                            for v in verdicts)
