"""Each seed pair of a claim checked run against run (issue 52, items 1-3): a per-run column whose
values both arms hold but crossed over the seeds, validation splits that differ between the arms,
and labels that the runs' own configs contradict. Before, each read `better` without a word
(`python tests/crafted_runs.py OUT 52.` prints them under any checkout's analysis/)."""

from __future__ import annotations

import pytest

import crafted_claims as crafted
from analysis.cli import main as analyze

CASES = {c.name: c for c in crafted.CASES}


def _run(name: str, root, capsys, *more: str) -> tuple[int, str, str]:
    case = CASES[name]
    case.build(root)
    words = [w.format(root=root) for w in case.words[1:]]
    code = analyze(["analyze", case.words[0], "--root", str(root), *words, "--resamples", "200", *more])
    said = capsys.readouterr()
    return code, said.out, said.err


def _refused(code: int, err: str, *said: str) -> None:
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("psedual analyze: error: "), err
    for words in said:
        assert words in err, err


@pytest.mark.parametrize("name, said", [
    ("52.1 status and epochs done crossed over seeds",
     ("seed 0, fold 0: x/b0 (base) and x/g0 (gcn) differ in status: 'stopped' vs 'completed'",
      "6 of 6 pairs differ in status, 6 in epochs_done", "--allow_diff+ status")),
    ("52.1 experiment crossed over seeds",
     ("seed 0, fold 0: x/b0 (base) and y/g0 (gcn) differ in experiment: 'x' vs 'y'",
      "6 of 6 pairs differ in experiment")),
    ("52.1 LLM temperature crossed over seeds",
     ("seed 0, fold 0: x/llm0-0 (llm) and x/llm1-0 (llm+reexamine) differ in llm.temperature: 0.0 vs 0.7",
      "6 of 6 pairs differ in llm.temperature")),
])
def test_a_column_crossed_over_the_seeds_is_refused_naming_the_pair(name, said, tmp_path, capsys):
    # before: `better`; the arms held the same set of values, and the pairs were never compared
    code, _, err = _run(name, tmp_path, capsys)
    _refused(code, err, *said, "the same values in both arms, crossed over the seeds")


def test_a_crossed_column_allowed_is_flagged_on_the_claim(tmp_path, capsys):
    name = "52.1 status and epochs done crossed over seeds"
    code, out, err = _run(name, tmp_path, capsys, "--allow_diff+", "status", "--allow_diff+", "epochs_done")
    assert (code, err) == (0, ""), err
    assert "config differs per pair (allowed by --allow_diff): status: 6 of 6 pairs, e.g. seed 0: x/b0 'stopped' " \
           "vs x/g0 'completed'" in out


def test_arms_validated_on_splits_of_other_sizes_are_refused(tmp_path, capsys):
    # before: `better` (n_valid is an outcome column: it was never compared)
    code, _, err = _run("52.2 validation sizes differ between arms", tmp_path, capsys)
    _refused(code, err, "seed 0, fold 0: x/b0 (base) and x/g0 (gcn) differ in n_valid: 100 vs 400",
             "validated on other splits", "--allow_diff+ n_valid")


def test_an_arm_validated_on_its_test_split_is_refused(tmp_path, capsys):
    # before: `better`, no flag: every gcn checkpoint was chosen on its test split
    code, _, err = _run("52.2 gcn validated on its test split", tmp_path, capsys)
    _refused(code, err, "variant=gcn: every one of its 6 runs has its test scores as its validation scores",
             "x/g0: valid_value_acc 0.71 = test_value_acc", "chosen on the test split")


def test_one_run_whose_validation_scores_are_its_test_scores_is_flagged(tmp_path, capsys):
    from crafted_runs import seeds
    from test_analysis_checks import _write

    runs = seeds(6)
    g0 = next(p for r, p in runs if r["trial"] == "g0")
    acc = sum(p["value_correct"] for p in g0) / len(g0)
    runs = [(r | ({"valid_value_acc": acc, "n_valid": len(p)} if r["trial"] == "g0" else {}), p) for r, p in runs]
    _write(tmp_path, runs, epochs={"g0": [acc, 0.1]})
    code = analyze(["analyze", "compare", "--root", str(tmp_path), "--treatment+", "gcn", "--resamples", "200",
                    "--allow_diff+", "n_valid"])
    out = capsys.readouterr().out
    assert code == 0 and "test-selected? x/g0: its validation scores at best_epoch are its test scores " \
                         "(valid_value_acc 0.71, n_valid = n_test = 400): validated on its test split?" in out, out


@pytest.mark.parametrize("name, said", [
    ("52.3 gcn runs without a PseDual setting",
     "x/g0 is labelled variant gcn, but its config holds no PseDual setting (psedual.expression_encoder null)"),
    ("52.3 gcn runs whose config is gru's",
     "x/g0 is labelled variant gcn, but its config's psedual.expression_encoder is 'gru'"),
    ("52.3 base runs whose config is gcn's",
     "x/b0 is labelled variant base, but its config's psedual.expression_encoder is 'gcn'"),
])
def test_a_label_its_config_contradicts_is_refused(name, said, tmp_path, capsys):
    # before: `better`, the label believed
    code, _, err = _run(name, tmp_path, capsys)
    _refused(code, err, said, "(6 run(s))")
