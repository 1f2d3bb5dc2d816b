"""Hostile input, round six (issue 60, classes 1-6; issue 61, item 5): crafted result tables as a careless
or unlucky user makes them, each read with the `psedual analyze` command that misread it before.

1. a control read as the method (its claim's name, table1's grid, the report's paper column, the forest plot);
2. a flag that does not fit its arm (near teacher forcing on an arm that reads no expression);
3. a sampled LLM run (temperature > 0) standing for the method;
4. dropped seeds whose scores nobody saw;
5. "N more" advice the rules could not follow (beyond the benchmark, or examples for one trained seed);
6. a "–" in a table with no reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.checks import arms, registry
from analysis.cli import main as analyze
from analysis.report import forest
from analysis.tables import paper
from test_analysis_checks import _effect, _ids, _preds, _write

N = 400
DOCS = Path(__file__).resolve().parents[1] / "docs"


def _run(root: Path, capsys, *words: str) -> tuple[int, str, pl.DataFrame | None]:
    code = analyze(["analyze", *words, "--root", str(root), "--resamples", "200"])
    captured = capsys.readouterr()
    out = captured.out + captured.err
    files = list((root / "claims").glob("*.parquet"))
    return code, out, pl.concat([pl.read_parquet(p) for p in files], how="diagonal_relaxed") if files else None


def _cells(out: str) -> list[str]:
    """Every cell of every Markdown table row in `out`."""
    return [c.strip() for line in out.splitlines() if line.startswith("| ") for c in line.strip("|").split(" | ")]


# 1. a control never reads as the method
def _controls(root: Path, experiment: str = "x") -> None:
    """Six seeds of base against GCN runs that are all `other_problem` controls (a real effect)."""
    runs = []
    for s in range(6):
        a, b = _effect(seed=s)
        runs += [({"trial": f"b{s}", "variant": "base", "seed": s}, _preds(_ids(N), a)),
                 ({"trial": f"g{s}", "variant": "gcn", "seed": s, "psedual.control": "other_problem"},
                  _preds(_ids(N), b))]
    _write(root, runs, experiment=experiment)


def test_a_control_is_named_as_a_control_in_compare_and_table1(tmp_path, capsys):
    # before: "| PseDual-GCN vs base |" and the grid's "PseDual-GCN" row, `better`, no word of the control
    _controls(tmp_path)
    code, out, claims = _run(tmp_path, capsys, "compare", "--treatment+", "gcn")
    assert code == 0 and claims["control_arms"].to_list() == [["gcn"]]
    assert "PseDual-GCN [control: another problem's expression] vs base" in out, out
    assert "gts: PseDual-GCN [control: another problem's expression] vs base: level at" in out  # where the arms stand
    code, out, _ = _run(tmp_path, capsys, "table1")
    assert code == 0
    grid = [line for line in out.splitlines() if line.startswith("|  | PseDual-GCN")]
    assert grid and all("[control: another problem's expression]" in line for line in grid), out
    assert "control: variant=gcn's runs are psedual.control=other_problem" in out


def test_the_report_sets_no_paper_figure_beside_a_control(tmp_path, capsys):
    # before: the control's "+x.xx**" beside the paper's "82.7 → 83.6" and "83.6" beside the control's row
    _controls(tmp_path, "e.table1")
    gcn = paper.find(paper.load(), "table1", "mawps", "gts", "gcn", "value")
    assert gcn is not None
    code, out, _ = _run(tmp_path, capsys, "report", "--experiment", "e", "--out", str(tmp_path / "rep"))
    assert code == 0, out
    text = (tmp_path / "rep" / "report.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "[control: another problem's expression]" in line]
    assert rows, text
    assert all(str(gcn) not in line for line in rows), rows
    assert all("→" not in line.split(" | ")[-4] or "control" in line for line in rows)
    assert any("– (a control: the paper ran no such arm)" in line for line in rows), rows


def test_the_forest_plot_names_a_control(tmp_path, capsys):
    _controls(tmp_path)
    assert _run(tmp_path, capsys, "compare", "--treatment+", "gcn")[0] == 0
    claims = pl.read_parquet(next((tmp_path / "claims").glob("*.parquet")))
    rows = forest.planned_rows(claims, paper.load())
    assert "control" in rows[0].label and rows[0].paper is None  # before: 'PseDual-GCN vs base'
    named = forest.planned_rows(claims, paper.load(), ["PseDual-GCN"])
    assert "control" in named[0].label


def test_short_names_say_control():
    base = pl.DataFrame({"variant": ["base"], "seed": [0], "psedual.control": [None]})
    gcn = pl.DataFrame({"variant": ["gcn"], "seed": [0], "psedual.control": ["none"]})
    ctl = pl.DataFrame({"variant": ["gcn"], "seed": [0], "psedual.control": ["other_problem"]})
    names = arms.short_names({"b": base, "g": gcn, "c": ctl, "c2": ctl})
    assert names["c"] == "PseDual-GCN, control: another problem's expression" and names["g"] == "PseDual-GCN"


# 2. each arm flag fits its arm
def test_no_teacher_forcing_flag_on_an_arm_that_reads_no_expression(tmp_path, capsys):
    # before: "near teacher forcing: variant=gcn is scheduled fusion but its ε ends at 0.950 ... weighs at most 0.050"
    runs = []
    for s in range(6):
        a, b = _effect(seed=s)
        runs += [({"trial": f"b{s}", "variant": "base", "seed": s}, _preds(_ids(N), a)),
                 ({"trial": f"g{s}", "variant": "gcn", "seed": s, "psedual.fusion": "scheduled", "final_epsilon": 0.95,
                   "psedual.control": "no_expression"}, _preds(_ids(N), b))]
    _write(tmp_path, runs)
    code, out, claims = _run(tmp_path, capsys, "compare", "--treatment+", "gcn")
    assert code == 0
    assert not any("near teacher forcing" in f for f in claims["flags"][0]), claims["flags"][0]
    # the same ε on an arm that reads an expression is flagged as before
    _write(tmp_path, [(r | {"psedual.control": "none"}, p) for r, p in runs if r["variant"] == "gcn"])
    code, out, claims = _run(tmp_path, capsys, "compare", "--treatment+", "gcn")
    assert code == 0 and any("near teacher forcing" in f for f in claims["flags"][0])


def test_every_guardrail_says_the_arms_it_applies_to_and_the_docs_list_them():
    for name, g in registry.GUARDRAILS.items():
        assert g.applies.strip(), name
    doc = (DOCS / "analysis.md").read_text()
    table = registry.applies_table()
    assert table in doc, "docs/analysis.md's guardrail table differs from registry.applies_table()"
    for name in registry.GUARDRAILS:
        assert f"`{name}`" in table


# 3. a sampled run is a sample
def _llm(root: Path, temperature: float, n_seeds: int = 1, samples: int = 1) -> None:
    """An LLM arm and its reexamining arm, nearly alike over 2,000 problems, `n_seeds` runs each."""
    runs = []
    for s in range(n_seeds):
        rng = np.random.default_rng(s)
        a = rng.random(2000) < 0.7
        b = a.copy()
        b[rng.choice(2000, 4 + s % 3, replace=False)] ^= True
        for arm, c, variant in ((0, a, "llm"), (1, b, "llm+reexamine")):
            runs.append(({"trial": f"{variant[:3]}{arm}-{s}", "variant": variant, "seed": s, "llm.model": "m",
                          "llm.temperature": temperature, "llm.samples": samples, "llm.reexamine": bool(arm),
                          "n_valid": None, "best_epoch": None, "valid_value_acc": None, "n_train": None},
                         _preds(_ids(2000, "svamp"), c)))
    _write(root, runs, epochs={r["trial"]: [] for r, _ in runs})


LLM = ("compare", "--base", "llm", "--treatment+", "llm+reexamine")


def test_one_sampled_llm_run_per_arm_is_no_method_claim(tmp_path, capsys):
    # before: "equivalent within ±1" at temperature 0.7 as at 0, one run each
    _llm(tmp_path / "greedy", 0.0)
    code, _, claims = _run(tmp_path / "greedy", capsys, *LLM)
    assert code == 0 and claims["verdict"][0] == "equivalent within ±1"
    _llm(tmp_path / "sampled", 0.7)
    code, out, claims = _run(tmp_path / "sampled", capsys, *LLM)
    assert code == 0 and claims["verdict"][0] == "inconclusive (1 seed)", claims["verdict"][0]
    assert any(f.startswith("sampled: ") and "temperature 0.7" in f for f in claims["flags"][0]), claims["flags"][0]
    _llm(tmp_path / "samples", 0.0, samples=3)
    code, out, claims = _run(tmp_path / "samples", capsys, *LLM)
    assert claims["verdict"][0] == "inconclusive (1 seed)" and "3 samples" in " ".join(claims["flags"][0])


def test_repeated_samples_pair_as_seeds(tmp_path, capsys):
    _llm(tmp_path, 0.7, n_seeds=6)
    code, out, claims = _run(tmp_path, capsys, *LLM)
    r = claims.row(0, named=True)
    assert code == 0 and r["n_seeds"] == 6 and r["test"] == "paired_t_seeds"
    assert not any(f.startswith("sampled: ") for f in r["flags"])  # six samples per arm are what the claim needs


# 4. dropped seeds are shown with their scores
def _shifted_seeds(root: Path, drop_points: float) -> None:
    """base on seeds 0-9, gcn on 4-13; gcn's seeds 10-13 (dropped) score `drop_points` lower."""
    runs = []
    for s in range(14):
        a, b = _effect(seed=s)
        if s >= 10:
            k = int(round(drop_points * N / 100))
            b = b.copy()
            b[np.flatnonzero(b)[:k]] = False
        if s < 10:
            runs.append(({"trial": f"b{s}", "variant": "base", "seed": s}, _preds(_ids(N), a)))
        if s >= 4:
            runs.append(({"trial": f"g{s}", "variant": "gcn", "seed": s}, _preds(_ids(N), b)))
    _write(root, runs)


def test_dropped_seeds_that_score_apart_refuse_the_claim(tmp_path, capsys):
    # before: `better`, flagged "unpaired seeds dropped: [0, 1, 2, 3, 10, 11, 12, 13]" only
    _shifted_seeds(tmp_path, 6.0)
    code, out, _ = _run(tmp_path, capsys, "compare", "--treatment+", "gcn")
    assert code == 2, out
    assert "gcn's 4 dropped run(s) (seeds [10, 11, 12, 13]) score" in out and "--allow_diff+ seed" in out
    code, out, claims = _run(tmp_path, capsys, "compare", "--treatment+", "gcn", "--allow_diff+", "seed")
    assert code == 0
    flag = next(f for f in claims["flags"][0] if f.startswith("unpaired seeds dropped"))
    assert re.search(r"gcn: 4 dropped run\(s\) score \d+\.\d\d vs \d+\.\d\d kept", flag), flag
    assert "base: 4 dropped run(s) score" in flag and "allowed by --allow_diff" in flag


def test_dropped_seeds_within_noise_are_shown_and_the_claim_stands(tmp_path, capsys):
    _shifted_seeds(tmp_path, 0.0)
    code, out, claims = _run(tmp_path, capsys, "compare", "--treatment+", "gcn")
    assert code == 0, out
    flag = next(f for f in claims["flags"][0] if f.startswith("unpaired seeds dropped"))
    assert "gcn: 4 dropped run(s) score" in flag and "base: 4 dropped run(s) score" in flag


# 5. advice the rules could follow
def _one_seed(root: Path, llm: bool = False) -> None:
    """One seed, 397 problems of fold 0: base 240 right, gcn 244 (Δ +1.01; 10 and 14 discordant)."""
    a = np.zeros(397, bool)
    a[:240] = True
    b = a.copy()
    b[230:240] = False
    b[240:254] = True
    extra = {"llm.model": "m", "llm.temperature": 0.0, "n_valid": None, "best_epoch": None, "valid_value_acc": None,
             "n_train": None} if llm else {}
    arms_ = ("llm", "llm+reexamine") if llm else ("base", "gcn")
    _write(root, [({"trial": "b0", "variant": arms_[0], **extra}, _preds(_ids(397), a)),
                  ({"trial": "g0", "variant": arms_[1], **extra}, _preds(_ids(397), b))],
           epochs={"b0": [], "g0": []} if llm else None)


def test_one_trained_seed_is_told_the_seeds_not_the_examples(tmp_path, capsys):
    # before: "undecided: about 8,188 more test examples would decide (8,585 in all); 1 seed: ..."
    _one_seed(tmp_path)
    code, out, claims = _run(tmp_path, capsys, "compare", "--treatment+", "gcn")
    verdict = claims["verdict"][0]
    assert code == 0 and "more test examples" not in verdict, verdict
    assert "6 seeds" in verdict and "5 more" in verdict, verdict
    assert claims["n_needed"][0] is None or claims["needed_unit"][0] != "examples" or claims["n_needed"][0] <= 1987


def test_examples_advice_stays_within_the_benchmark(tmp_path, capsys):
    # a zero-shot LLM run: one run is the method, more examples could decide, but not beyond the benchmark's 1,987
    _one_seed(tmp_path, llm=True)
    code, out, claims = _run(tmp_path, capsys, "compare", "--base", "llm", "--treatment+", "llm+reexamine")
    verdict = claims["verdict"][0]
    assert code == 0 and "8,188" not in verdict and "8188" not in out, verdict
    assert "more test examples than the benchmark's 1,987" in verdict, verdict
    power = [c for c in _cells(out) if " ex " in c]
    assert power and all("> the benchmark's 1,987" in c for c in power), power


def test_the_power_column_and_the_verdict_say_which_test_and_delta():
    from analysis.stats import power

    row = {"mde": 4.1, "n_needed": 588, "needed_unit": "seeds", "target_delta": 0.8, "target_from": "paper"}
    said = power.line(row)
    assert said == "4.10; 588 seeds to detect the paper's +0.8 (t-test, 80% power)", said
    assert power.line(row | {"needed_unit": "examples", "n_needed": 8188, "dataset": "mawps"}) == (
        "4.10; > the benchmark's 1,987 ex to detect the paper's +0.8 (examples paired, 80% power)")


# 6. every "–" says why
def _no_spread(root: Path) -> None:
    """Six seeds: gcn 4 examples over base on each, gru 4 over gcn: each pair's Δ the same on every seed."""
    rng = np.random.default_rng(3)
    runs = []
    for s in range(6):
        base = rng.permutation(np.arange(N) < 200 + 7 * s)
        gcn = base.copy()
        gcn[np.flatnonzero(~base)[:4]] = True
        gru = gcn.copy()
        gru[np.flatnonzero(~gcn)[:4]] = True
        runs += [({"trial": f"{v}{s}", "variant": v, "seed": s}, _preds(_ids(N), c))
                 for v, c in (("base", base), ("gcn", gcn), ("gru", gru))]
    _write(root, runs)


def test_every_dash_in_the_tables_says_why(tmp_path, capsys):
    # before: the exploratory pair's p "–" beside a Wilcoxon p, and bare "–" in CI, p, TOST, power and discordant
    _no_spread(tmp_path)
    code, out, _ = _run(tmp_path, capsys, "compare", "--treatment+", "gcn", "--treatment+", "gru")
    assert code == 0, out
    assert "Exploratory" in out
    bare = [c for c in _cells(out) if c == "–"]
    assert not bare, out
    explore = [line for line in out.splitlines() if line.startswith("| ") and "gts: PseDual-GRU vs PseDual-GCN |" in line]
    assert explore and "– (no spread)" in explore[0], explore
    # several seeds: no discordant problems (a one-seed McNemar's count), and the cell says so
    claim = [line for line in out.splitlines() if line.startswith("| ") and "PseDual-GCN vs base |" in line]
    assert claim and "– (several seeds: runs paired, not problems)" in claim[0], claim
    code, out, _ = _run(tmp_path, capsys, "table1")
    assert code == 0 and not [c for c in _cells(out) if c == "–"], out


def test_one_seed_dashes_say_why(tmp_path, capsys):
    _one_seed(tmp_path)
    code, out, _ = _run(tmp_path, capsys, "compare", "--treatment+", "gcn")
    assert code == 0 and not [c for c in _cells(out) if c == "–"], out


def test_plan_reads_the_sweeps_own_last_experiment(tmp_path, capsys):
    # issue 61, item 5: `--plan` right after a sweep said "no spread to plan from" unless --plan_from named it
    from psedual.cli import main
    from test_power_plan import BASE, GCN, _sweep
    from test_analysis import _preds as preds, _write_tables

    sweep = _sweep(tmp_path)
    words = ["tune", "--space", str(sweep), "--plan", "true", "--storage", str(tmp_path)]
    assert main(words) == 0 and "no spread to plan from" in capsys.readouterr().out  # never ran: nothing to read
    for name, shift in (("planned", 5), ("planned-2", 0)):  # the sweep ran twice: its last is planned-2
        runs, tables = [], {}
        for variant, values in (("base", BASE), ("gcn", GCN)):
            for seed, acc in enumerate(values):
                trial = f"{variant}-s{seed}"
                right = int(round(acc)) + (shift * seed if variant == "gcn" else 0)
                runs.append({"trial": trial, "variant": variant, "solver": "gts", "seed": seed})
                tables[trial] = preds([f"mawps:{i}" for i in range(100)], [i < right for i in range(100)])
        _write_tables(tmp_path, name, runs, tables)
    assert main(words) == 0
    out = capsys.readouterr().out
    sd = np.std([1, -1, 3, 1, 3], ddof=1)
    assert f"sd of the per-seed Δ {sd:.2f} (experiment planned-2, 5 paired seeds: this sweep's last experiment" in out, out


CASES = {"control": (_controls, ["compare", "--treatment+", "gcn"]),
         "control_t1": (_controls, ["table1"]),
         "sampled": (lambda r: _llm(r, 0.7), ["compare", "--base", "llm", "--treatment+", "llm+reexamine"]),
         "dropped": (lambda r: _shifted_seeds(r, 6.0), ["compare", "--treatment+", "gcn"]),
         "one_seed": (_one_seed, ["compare", "--treatment+", "gcn"]),
         "one_llm": (lambda r: _one_seed(r, llm=True), ["compare", "--base", "llm", "--treatment+", "llm+reexamine"]),
         "no_spread": (_no_spread, ["compare", "--treatment+", "gcn", "--treatment+", "gru"])}
"""Each crafted case and the `psedual analyze` words it is read with, for running as a script:

    .venv/bin/python tests/test_hostile6.py CASE                           # this checkout's analysis/
    PYTHONPATH=OLD_CHECKOUT .venv/bin/python tests/test_hostile6.py CASE   # another's, side by side
"""


if __name__ == "__main__":
    import sys
    import tempfile

    build, words = CASES[sys.argv[1]]
    where = Path(tempfile.mkdtemp())
    build(where)
    print(f"analysis from {Path(__import__('analysis').__file__).parent}; tables in {where}")
    print("exit", analyze(["analyze", *words, "--root", str(where), "--resamples", "200"]))
