"""What a report says beside its numbers, and what it must not crash on (issue 52, items 6, 7 and 9):
a smoke-scale result set beside the paper's full-protocol figure, `--where` leaving seeds of the
compared arms out in silence, an experiment name whose claims file's temporary name is over 255
bytes, and the training-size curve on tables written before the data identity was recorded.
`python tests/crafted_runs.py OUT 52.` prints the crafted cases' outcomes under any checkout's analysis/."""

from __future__ import annotations

import polars as pl

import crafted_claims as crafted
from analysis.cli import main as analyze

CASES = {c.name: c for c in crafted.CASES}


def _run(name: str, root, capsys) -> tuple[int, str, str]:
    case = CASES[name]
    case.build(root)
    words = [w.format(root=root) for w in case.words[1:]]
    code = analyze(["analyze", case.words[0], "--root", str(root), *words, "--resamples", "200"])
    said = capsys.readouterr()
    return code, said.out, said.err


def test_a_smoke_scale_result_beside_the_paper_says_how_its_protocol_differs(tmp_path, capsys):
    # before: `+12.56**` beside the paper's 83.6, and not a word of 5 epochs, 350 training problems
    # and 150 of fold 0's 397 test problems
    code, _, err = _run("52.6 smoke scale beside the paper", tmp_path, capsys)
    assert (code, err) == (0, ""), err
    report = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    differs = ("protocol differs: 5 epochs (its published recipe: 80); trained on 350 problems (data.train_size); "
               "tested on 150 of the 397 test problems of folds [0]; folds [0] of 5")
    beside = [line for line in report.splitlines() if line.startswith("| mawps | gts | value |")]
    assert len(beside) == 2 and all(f"({differs})" in line for line in beside), beside
    claim = next(line for line in report.splitlines() if line.startswith("| data.dataset=mawps, solver=gts |"))
    assert f"82.7; own paper 82.6 → 83.6 ({differs})" in claim, claim


def test_where_names_the_runs_it_left_out_of_the_compared_arms(tmp_path, capsys):
    # before: seeds 6 and 7 (the effect the other way round) left out without a word
    code, out, _ = _run("52.7 --where keeps six of eight seeds", tmp_path, capsys)
    assert code == 0
    assert ("--where left out 4 run(s) of the arms this claim compares: base x/b6, x/b7; gcn x/g6, x/g7 (seeds "
            "[6, 7]): the claim is over the runs kept only") in out, out
    # a where that keeps one configuration of an arm (scheduled fusion, not teacher forcing) leaves
    # out no run of the arms compared: nothing to say
    from crafted_runs import seeds
    from test_analysis_checks import _write

    root = tmp_path / "config"
    runs = seeds(6)
    _write(root, runs + [(r | {"trial": f"t{r['seed']}", "psedual.fusion": "teacher_forcing"}, p)
                         for r, p in runs if r["variant"] == "gcn"])
    code = analyze(["analyze", "compare", "--root", str(root), "--treatment+", "gcn", "--resamples", "200",
                    "--where+", "fusion=null"])
    out = capsys.readouterr().out
    assert code == 0 and "left out" not in out and "| better; " in out, out


def test_an_experiment_name_whose_claims_file_name_is_too_long_is_written(tmp_path, capsys):
    # before: OSError [Errno 36] File name too long, for the claims writer's temporary file
    code, out, err = _run("52.9 an experiment name of 228 bytes", tmp_path, capsys)
    assert (code, err) == (0, ""), err
    (path,) = (tmp_path / "claims").glob("*.parquet")
    assert len(path.name.encode()) <= 255 and path.name.startswith("table1_実験") and str(path) in out
    assert pl.read_parquet(path)["family"].to_list() == [f"table1_{crafted.LONG_NAME}"]
    assert not list((tmp_path / "claims").glob(".*"))  # no temporary file left


def test_the_atomic_writer_takes_a_name_of_255_bytes(tmp_path):
    import pyarrow as pa

    from psedual.atomic import write_parquet

    name = "é" * 123 + ".parquet"  # 254 bytes
    path = write_parquet(pa.table({"a": [1]}), tmp_path / name)
    assert path.endswith(name) and [p.name for p in tmp_path.iterdir()] == [name]


def test_the_curve_reads_tables_written_before_the_data_identity(tmp_path, capsys):
    # before: TypeError: float() argument must be ... not 'NoneType' (a null n_train)
    code, out, err = _run("52.9 curve on tables before the data identity", tmp_path, capsys)
    assert (code, err) == (0, ""), err
    sizes = [line.split("|")[1].strip() for line in out.splitlines() if "| PseDual-GCN |" in line]
    assert sizes == ["350", "700"], out
    assert "training size not recorded (n_train null) in 12 run(s) (x/b350-0, x/b350-1, ...): " \
           "each point is placed at its data.train_size" in out, out
