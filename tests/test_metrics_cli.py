"""Metrics on known cases, and the `psedual data stats` command."""

from __future__ import annotations

import pytest

from psedual.cli import main
from psedual.data.build import make_problem
from psedual.metrics import (
    UNUSED,
    expression_accuracy,
    expression_accuracy_values,
    infilling_accuracy,
    perfect_match_ratio,
    value_accuracy,
)


def _problem(numbers, equation, answer):
    return make_problem(dataset="jsonl", source_id="t", split="test", fold=-1, language="en",
                        tokens=["[NUM]"] * len(numbers), num_pos=range(len(numbers)), number_texts=numbers,
                        answer=answer, origin="test", equation=equation)


def test_expression_and_value_accuracy():
    p = _problem(["3", "7", "2"], "x=3*7", 21)
    q = _problem(["1", "3"], "x=1/3", "1/3")
    assert p.prefix == ("*", "N0", "N1") and q.prefix == ("/", "N0", "N1")
    preds = [("*", "N1", "N0"), ("/", "N0", "N1")]  # commuted: value right, expression wrong
    assert (expression_accuracy(preds, [p, q]).correct, value_accuracy(preds, [p, q]).correct) == (1, 2)
    wrong = [("/", "N0", "-", "N2", "N2"), ("+", "N0")]  # division by zero; malformed prefix
    assert value_accuracy(wrong, [p, q]).correct == 0 and expression_accuracy(wrong, [p, q]).total == 2
    assert value_accuracy([("+", "N0", "N1")], [q]).correct == 0
    with pytest.raises(ValueError, match="1 predictions for 2 problems"):
        value_accuracy(preds[:1], [p, q])


def test_expression_accuracy_by_values_is_the_published_definition():
    p = _problem(["0.25", "3", "0.25"], "x=0.25+0.25", "0.5")  # a number stated twice
    assert p.prefix == ("+", "N0", "N0")
    preds = [("+", "N2", "N2"), ("+", "N0", "N2"), ("+", "N0", "N1"), ("+", "N0", "N0"), ("+", "N0", "N9")]
    assert [expression_accuracy([q], [p]).correct for q in preds] == [0, 0, 0, 1, 0]
    assert [expression_accuracy_values([q], [p]).correct for q in preds] == [1, 1, 0, 1, 0]
    many = _problem([str(k) for k in range(13)], "x=12+2", 14)  # N12 is slot 12, not N1 then 2
    assert many.prefix == ("+", "N12", "N2")
    assert expression_accuracy_values([("+", "N12", "N2")], [many]).correct == 1
    assert expression_accuracy_values([("+", "N1", "N2")], [many]).correct == 0


def test_infilling_over_the_used_slots_only():
    gold = [[0, UNUSED, 2], [UNUSED, UNUSED], [1, 0]]
    pred = [[0, 1, 2], [UNUSED, 0], [1, 1]]
    assert (infilling_accuracy(pred, gold).correct, infilling_accuracy(pred, gold).total) == (4, 7)
    used = infilling_accuracy(pred, gold, used_only=True)
    assert (used.correct, used.total) == (3, 4)
    pmr = perfect_match_ratio(pred, gold, used_only=True)  # problem 1 uses no number: not counted
    assert (pmr.correct, pmr.total) == (1, 2)
    assert perfect_match_ratio(pred, gold).correct == 0


def test_infilling_accuracy_and_perfect_match():
    gold = [[0, 1, 2], [1, 0], []]
    pred = [[0, 1, 1], [1, 0], []]
    acc = infilling_accuracy(pred, gold)
    assert (acc.correct, acc.total) == (4, 5)
    pmr = perfect_match_ratio(pred, gold)
    assert (pmr.correct, pmr.total) == (1, 2)  # the problem with no slots is not counted
    assert str(pmr) == "50.00% (1/2)"
    with pytest.raises(ValueError, match="problem 1: 1 slot predictions for 2 masked slots"):
        infilling_accuracy([[0, 1, 2], [1], []], gold)


def test_data_stats_command(capsys):
    assert main(["data", "stats", "mawps"]) == 0
    out = capsys.readouterr().out
    assert "== mawps: 1,987 kept, 0 skipped" in out
    assert "fold 0: train 1,409 / valid 159 / test 397; constants (used by >= 5 training problems): 12 3 0.01 7" in out


def test_data_stats_bad_input(capsys, tmp_path):
    assert main(["data", "stats", "gsm8k"]) == 2
    assert "unknown dataset gsm8k; valid: math23k, mawps" in capsys.readouterr().err
    assert main(["data", "stats", "mawps", "--data_root", str(tmp_path)]) == 2
    assert f"{tmp_path}/mawps/five_fold/fold_0.json: file not found" in capsys.readouterr().err
