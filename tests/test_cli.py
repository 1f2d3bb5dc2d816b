"""The generated command line: every typed-config field is an option (`analyze`'s too), listed in --help
with its docstring and choices, settable, and readable from a YAML file with overrides after it."""

from __future__ import annotations

import re
import subprocess
import sys
import types
import typing
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from analysis.cli import COMMANDS as ANALYZE
from analysis.cli import parse as analyze_parse
from analysis.cli import parser as analyze_parser
from analysis.options import CompareOptions, InfillOptions
from psedual.cli import main
from psedual.data.fetch import FetchConfig
from psedual.data.stats import StatsConfig
from psedual.data.registry import DATASETS
from psedual.comparisons import command_line, compare_options
from psedual.job import OPTIONS, TuneJob
from psedual.llm.run import LLMConfig
from psedual.reexamine.config import PseDualConfig
from psedual.results.collect import AddConfig
from psedual.results.best import SELECT_BY
from psedual.train.config import TrainConfig
from psedual.train.solve import SolveConfig
from psedual.train.test import TestConfig as RunTestConfig  # not a pytest class: pytest collects `Test*` names
from psedual.tune.space import load_spec
from psedual.typed_cli import COMMANDS, _train_config, flags

# Non-default values that every check in the configs accepts; the rest are derived from the type.
SPECIAL = {"data.dataset": "mawps", "data.fold": 3, "model.plm": "/tmp/a-plm-folder", "data.data_root": "/tmp/d",
           "data.user_path": "/tmp/u", "solver": "graph2tree"}
# graph2tree: a solver that reads model.problem_vector's other value (`published`: gts and graph2tree only)


def _other_value(key: str, annotation: object, default: object) -> object:
    if key in SPECIAL:
        return SPECIAL[key]
    if typing.get_origin(annotation) is typing.Literal:
        return next(v for v in typing.get_args(annotation) if v != default)
    kind = next(a for a in typing.get_args(annotation) or (annotation,) if a is not type(None))
    if kind is bool:
        return not default
    if kind is int:
        return 2 if default is None else default + 1
    if kind is float:
        return 0.25 if not default else default / 2
    return "something"


def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def _train_fields() -> dict[str, tuple[object, object]]:
    """Dotted key → (annotation, default) of every TrainConfig field the command line sets."""
    out = {}
    defaults = TrainConfig()
    for name, annotation in _hints(TrainConfig).items():
        if name in ("data", "model"):
            sub = getattr(defaults, name)
            out.update({f"{name}.{k}": (a, getattr(sub, k)) for k, a in _hints(type(sub)).items()})
        elif name == "psedual":
            out.update({f"psedual.{k}": (a, getattr(PseDualConfig(), k)) for k, a in _hints(PseDualConfig).items()
                        if k != "expression_encoder"})  # --variant sets it
        else:
            out[name] = (annotation, getattr(defaults, name))
    return out


def test_every_train_field_is_in_the_help_with_its_docstring_and_choices(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for key, (annotation, _) in _train_fields().items():
        assert f"--{key} " in text, key
        if typing.get_origin(annotation) is typing.Literal:
            assert f"--{key} {{{','.join(typing.get_args(annotation))}}}" in text, key
    from psedual.reexamine.config import VARIANTS
    from psedual.solvers import SOLVERS

    assert f"--variant {{{','.join(VARIANTS)}}}" in text and f"--solver {{{','.join(SOLVERS)}}}" in text
    assert "Passes over the training set." in text  # TrainConfig.epochs' docstring
    assert "Weight of the infilling loss" in text  # PseDualConfig.alpha's


def test_the_readme_registry_tables_are_rendered_from_the_registries():
    from pathlib import Path

    from psedual import readme
    from psedual.solvers import BUILT_IN

    text = (Path(__file__).parents[1] / "README.md").read_text()
    assert readme.render(text) == text, "README's registry tables are out of date: run `make readme`"
    assert readme.TABLES["variants"]()[:5] == [
        "| variant | label in tables | the infiller reads the solver's expression with |", "| --- | --- | --- |",
        "| `base` | base | (no reexamining module) |",
        "| `gru` | PseDual-GRU | a bidirectional GRU over the expression's prefix tokens |",
        "| `gcn` | PseDual-GCN | two GCN layers over the expression tree, left and right operands told apart |"]
    assert [row.split(" | ")[0] for row in readme.TABLES["datasets"]()[2:]] == [f"| `{name}`" for name in DATASETS]
    assert [row.split(" | ")[0] for row in readme.TABLES["solvers"]()[2:]] == [f"| `{name}`" for name in BUILT_IN]
    assert readme.TABLES["solvers"]()[2] == "| `gts` | GTS, the goal-driven tree-structured solver (Xie & Sun, IJCAI 2019). |"


def test_readme_table_markers_are_checked():
    from psedual import readme

    marked = "".join(f"<!-- table:{name} -->\nSTALE\n<!-- /table:{name} -->\n" for name in readme.TABLES)
    rendered = readme.render(marked)
    assert "STALE" not in rendered and "| `gcn` | PseDual-GCN |" in rendered and "| `svamp` |" in rendered
    with pytest.raises(ValueError, match=r"X.md: each of \['datasets'\] must be marked exactly once"):
        readme.render(marked.replace("<!-- table:datasets -->", ""), "X.md")
    with pytest.raises(ValueError, match=r"unknown table marker\(s\) \['nonesuch'\]"):
        readme.render(marked + "<!-- table:nonesuch -->\n<!-- /table:nonesuch -->\n")


def test_every_train_field_is_settable():
    argv, wanted = ["--variant", "gru", "--out", "x"], {"psedual.expression_encoder": "gru"}
    for key, (annotation, default) in _train_fields().items():
        value = _other_value(key, annotation, default)
        argv += [f"--{key}", str(value)]
        wanted[key] = value
    parser = COMMANDS[("train",)].parser()
    config = _train_config(parser.parse_args(flags(argv, parser._option_string_actions)))
    flat = config.flat()
    assert {k: flat[k] for k in wanted} == wanted


def test_a_yaml_config_with_dotted_keys_and_overrides_after_it(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("# psedual train --config run.yaml\nlr: 0.002\nmodel.hidden_size: 64\nvariant: gcn\n"
                    "data:\n  fold: 4\npsedual.fusion: predicted\nepochs: 7\n")
    parser = COMMANDS[("train",)].parser()
    argv = ["--config", str(path), "--epochs", "9", "--out", "x"]
    config = _train_config(parser.parse_args(flags(argv, parser._option_string_actions)))
    assert (config.lr, config.model.hidden_size, config.data.fold, config.epochs) == (0.002, 64, 4, 9)
    assert (config.psedual.expression_encoder, config.psedual.fusion) == ("gcn", "predicted")


def test_a_bool_option_alone_is_a_flag_and_nothing_else_is_rewritten():
    options = COMMANDS[("train",)].parser()._option_string_actions
    assert flags(["--data.drop_inconsistent", "--data.fold", "1"], options) == ["--data.drop_inconsistent", "true",
                                                                              "--data.fold", "1"]
    assert flags(["--data.drop_inconsistent", "False"], options) == ["--data.drop_inconsistent", "False"]
    # the older spellings are no longer mapped: they reach the parser as they are, and it refuses them
    assert flags(["--batch-size", "8", "--fold=2", "--psedual", "gcn"], options) == ["--batch-size", "8", "--fold=2",
                                                                                     "--psedual", "gcn"]
    fetch = COMMANDS[("data", "fetch")].parser()._option_string_actions
    assert flags(["--if_missing", "mawps"], fetch) == ["--if_missing", "true", "mawps"]


@pytest.mark.parametrize("words, cls", [(("tune",), TuneJob), (("llm",), LLMConfig), (("data", "fetch"), FetchConfig),
                                        (("data", "stats"), StatsConfig), (("results", "add"), AddConfig),
                                        (("test",), RunTestConfig), (("solve",), SolveConfig)])
def test_the_other_generated_commands_have_every_field(words, cls):
    parser = COMMANDS[words].parser()
    positional = {a.dest for a in parser._actions if not a.option_strings}
    names = OPTIONS if cls is TuneJob else [f.name for f in fields(cls)]  # the job's groups' options are flat
    for name in names:
        assert f"--{name}" in parser._option_string_actions or name in positional, name


def test_bad_options_are_one_clear_error(tmp_path, capsys):
    assert main(["train", "--data.fold", "0", "--solver", "gpt", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0] == ("psedual train: error: --solver gpt: expected one of gts, dns, graph2tree, "
                                   "bert_tree, re_deduction")
    # what, where, the valid values: never a Python type's name
    assert main(["train", "--lr", "abc", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines()[0] == "psedual train: error: --lr abc: expected a number"
    assert main(["train", "--data.fold", "x", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines()[0] == "psedual train: error: --data.fold x: expected an integer or null"
    assert main(["train", "--lr", "-1", "--out", str(tmp_path)]) == 2  # which value is wrong
    assert capsys.readouterr().err == "psedual: error: lr must be > 0, got -1\n"
    assert main(["train", "--data.dataset", "svamp", "--data.fold", "1", "--out", str(tmp_path)]) == 2
    assert "svamp has fixed splits; fold must be None, got 1" in capsys.readouterr().err
    assert main(["train", "--no-such-option", "1", "--out", str(tmp_path)]) == 2
    assert "unrecognized arguments: --no-such-option 1" in capsys.readouterr().err
    # an earlier version's spelling is refused as any unknown option is (nothing rewrites it)
    assert main(["solve", "text", "--checkpoint", "x.pt", "--beam-size", "3"]) == 2
    assert "psedual solve: error: unrecognized arguments: --beam-size 3" in capsys.readouterr().err


@pytest.mark.parametrize("command", sorted(ANALYZE))
def test_every_analyze_option_is_its_configs_field_and_nothing_else(command):
    options, _ = ANALYZE[command]
    sub = analyze_parser()._subcommands_action.choices[command]
    named = {s.removeprefix("--") for s in sub._option_string_actions if s.startswith("--") and not s.endswith("+")}
    assert named - {"help", "config", "print_config"} == {f.name for f in fields(options)}
    assert not [name for name in named if "-" in name]  # one convention: the fields' names, never dashes


def _analyze_options(argv: list[str]):
    return analyze_parse(argv)[1]


def test_a_list_option_adds_one_value_per_plus_or_takes_a_list():
    one_by_one = _analyze_options(["compare", "--treatment+", "gru", "--treatment+", "gcn", "--by+", "solver",
                                   "--by+", "data.dataset", "--allow_diff+", "epochs", "--where+", "fold=0"])
    at_once = _analyze_options(["compare", "--treatment", "[gru, gcn]", "--by", "[solver, data.dataset]",
                                "--allow_diff", "[epochs]", "--where", "[fold=0]"])
    assert one_by_one == at_once
    assert (one_by_one.treatment, one_by_one.by, one_by_one.where) == (("gru", "gcn"), ("solver", "data.dataset"),
                                                                       ("fold=0",))
    assert _analyze_options(["table1"]).experiment == () and _analyze_options(["table1"]).select_by == SELECT_BY


def test_the_main_jobs_comparison_parses_as_it_is_printed():
    spec = types.SimpleNamespace(grid={"variant": ["base", "gru", "gcn"], "seed": [0, 1], "lr": [0.001]}, compare=[], seeds=None)
    options, = compare_options(spec, ["gcn", "base", "gru"], "results", "smoke")
    got = _analyze_options(command_line(options).split()[2:])
    assert got == options  # the job runs the comparison it prints
    assert (got.experiment, got.arm, got.base, got.treatment) == (("smoke",), "variant", "base", ("gru", "gcn"))
    assert got.by == ("data.dataset", "solver", "lr") and got.name is None
    assert compare_options(spec, ["base"], "results", "smoke") == []


def test_a_sweeps_own_comparisons_parse_as_printed():
    """converged.yaml's three comparisons: the arms' own keys are no cells, a base trial matches any
    psedual.* value (null), and each comparison writes its own claims file."""
    spec = load_spec("search_spaces/converged.yaml")
    run = compare_options(spec, ["base", "gru", "gcn"], "results", "converged")
    got = [_analyze_options(command_line(options).split()[2:]) for options in run]
    assert got == run  # the job runs the comparisons it prints
    assert [(g.arm, g.base, g.treatment) for g in got] == [
        ("variant", "base", ("gru", "gcn")), ("psedual.fusion", "teacher_forcing", ("scheduled",)),
        ("psedual.epsilon_schedule", "epoch", ("horizon",))]
    assert got[0].where == ("psedual.fusion=null|scheduled", "psedual.epsilon_schedule=null|horizon")
    assert got[1].where == ("variant=gcn", "psedual.epsilon_schedule=horizon")
    assert [g.name for g in got] == ["compare_converged_variant", "compare_converged_psedual.fusion",
                                     "compare_converged_psedual.epsilon_schedule"]
    assert all(g.by == ("data.dataset", "solver") for g in got)


def test_analyze_refuses_a_dashed_name_a_list_option_given_twice_and_a_bad_choice(tmp_path, capsys):
    assert main(["analyze", "compare", "--root", str(tmp_path), "--treatment+", "gcn", "--allow-diff", "epochs"]) == 2
    assert "psedual analyze compare: error: unrecognized arguments: --allow-diff epochs" in capsys.readouterr().err
    # one plain value is a list of one; two plain values would leave the last only, so they are refused
    assert analyze_parse(["compare", "--treatment", "gcn", "--experiment", "a"])[1].experiment == ("a",)
    assert main(["analyze", "compare", "--root", str(tmp_path), "--treatment", "gru", "--treatment", "gcn"]) == 2
    assert capsys.readouterr().err == ("psedual analyze: error: --treatment given twice: add more with --treatment+ "
                                       "VALUE, or give --treatment '[A, B]'\n")
    assert main(["analyze", "table1", "--correction", "bonferroni"]) == 2
    assert "holm" in capsys.readouterr().err
    assert main(["analyze", "table1", "--root", str(tmp_path), "--metric+", "bleu"]) == 2
    assert capsys.readouterr().err == ("psedual analyze: error: unknown metric 'bleu'; valid: value, expression, "
                                       "expression_values\n")
    with pytest.raises(ValueError, match=r"treatment \[\] must be non-empty"):
        CompareOptions(treatment=())
    with pytest.raises(ValueError, match="unknown format 'html'"):
        InfillOptions(format="html")


def test_a_refused_value_is_one_line_naming_the_option_the_value_and_what_it_takes(tmp_path, capsys):
    """`--margin 1%` printed three lines: jsonargparse's `Parser key "margin":`, `Expected a <class
    'float'>`, and a hint about list options."""
    assert main(["analyze", "compare", "--root", str(tmp_path), "--margin", "1%"]) == 2
    assert capsys.readouterr().err == ("psedual analyze compare: error: --margin 1%: expected a number of points of "
                                       "accuracy from 0.1 to 10, e.g. 0.45\n")
    assert main(["analyze", "compare", "--root", str(tmp_path), "--resamples", "many"]) == 2
    assert capsys.readouterr().err == "psedual analyze compare: error: --resamples many: expected an integer\n"
    assert main(["train", "--lr", "abc", "--out", "x"]) == 2
    assert capsys.readouterr().err == "psedual train: error: --lr abc: expected a number\n"
    assert main(["analyze", "compare", "--nope", "1"]) == 2  # an option it lacks: where the options are listed
    assert capsys.readouterr().err == ("psedual analyze compare: error: unrecognized arguments: --nope 1 "
                                       "(psedual analyze compare --help lists the options)\n")


def test_a_printed_config_loads_back_and_the_default_data_needs_no_fold(tmp_path, capsys):
    parser = COMMANDS[("train",)].parser()
    with pytest.raises(SystemExit):
        parser.parse_args(flags(["--print_config", "--variant", "gcn"], parser._option_string_actions))
    (tmp_path / "run.yaml").write_text(capsys.readouterr().out)
    assert "fold: null" in (tmp_path / "run.yaml").read_text()
    argv = ["--config", str(tmp_path / "run.yaml"), "--lr", "0.002", "--out", str(tmp_path / "mine")]
    config = _train_config(parser.parse_args(flags(argv, parser._option_string_actions)))
    assert (config.data.dataset, config.data.fold, config.lr, config.variant) == ("mawps", 0, 0.002, "gcn")
    config = _train_config(parser.parse_args(["--out", "x"]))  # the defaults alone: MAWPS fold 0
    assert (config.data.dataset, config.data.fold) == ("mawps", 0)
    config = _train_config(parser.parse_args(["--data.dataset", "svamp", "--out", "x"]))
    assert config.data.fold is None


def _psedual(*args: str, cwd: Path, stdout=None) -> subprocess.CompletedProcess:
    """The installed `psedual` (the one beside this interpreter), run as a user runs it."""
    return subprocess.run([str(Path(sys.executable).parent / "psedual"), *args], cwd=cwd, text=True,
                          stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)


def test_the_readmes_config_round_trip_runs_through_the_command(tmp_path):
    """`psedual train --print_config --variant gcn > run.yaml`, then `--config run.yaml` with overrides:
    the first exited 2 ("required: out", the recipe's first pass asked for it) and left run.yaml empty."""
    with (tmp_path / "run.yaml").open("w") as out:
        printed = _psedual("train", "--print_config", "--variant", "gcn", cwd=tmp_path, stdout=out)
    assert printed.returncode == 0 and printed.stderr == "", printed.stderr
    text = (tmp_path / "run.yaml").read_text()
    assert "variant: gcn" in text and "fold: null" in text and "hidden_size: 512" in text
    again = _psedual("train", "--config", "run.yaml", "--lr", "0.002", "--epochs", "5", "--out", "runs/mine",
                     "--print_config", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    loaded = yaml.safe_load(again.stdout)
    assert (loaded["lr"], loaded["epochs"], loaded["out"], loaded["variant"]) == (0.002, 5, "runs/mine", "gcn")
    assert {k: v for k, v in loaded.items() if k not in ("lr", "epochs", "out")} == \
        {k: v for k, v in yaml.safe_load(text).items() if k not in ("lr", "epochs", "out")}



def test_a_recipe_prints_its_config_without_an_out(capsys):
    with pytest.raises(SystemExit) as done:
        main(["train", "--recipe", "dns", "--solver", "dns", "--print_config"])
    assert done.value.code == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert (printed["solver"], printed["recipe"], printed["out"]) == ("dns", "dns", None)


@pytest.mark.parametrize("text, says", [
    ("", "the file is empty (`psedual train --print_config > run.yaml` writes one with every option)"),
    ("# nothing\n", "holds only comments, no options (`psedual train --print_config > run.yaml` writes one with "
                    "every option)"),
    ("lr: [0.1\n", "not YAML at line 2: expected ',' or ']', but got '<stream end>'"),
    ("- lr\n- 0.1\n", "holds a list, not `option: value` lines (`psedual train --print_config > run.yaml` writes "
                      "one with every option)"),
    ("lr: 0.1\ndata:\n  fodl: 2\n", "psedual train has no option data.fodl (nearest: data.fold) (psedual train "
                                    "--help lists the options)"),
    (None, "no such file (`psedual train --print_config > run.yaml` writes one with every option)"),
])
def test_a_config_file_that_gives_no_options_is_named_with_what_is_wrong(tmp_path, monkeypatch, capsys, text, says):
    """An empty run.yaml read `Unexpected config:` and nothing more."""
    if text is not None:
        (tmp_path / "run.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--config", "run.yaml", "--out", "x"]) == 2
    assert capsys.readouterr().err == f"psedual train: error: --config run.yaml: {says}\n"
    assert main(["solve", "--config", "run.yaml", "Tom has 5 apples."]) == 2  # every command checks its file
    assert capsys.readouterr().err.startswith("psedual solve: error: --config run.yaml: ")


def test_the_sweep_files_ship_with_the_package_and_copy_out(tmp_path, monkeypatch, capsys):
    from psedual.sweeps import SHIPPED, find, shipped

    root = Path(__file__).parent.parent
    assert sorted(p.name for p in shipped().values()) == sorted(p.name for p in (root / "search_spaces").glob("*.yaml"))
    assert SHIPPED.is_relative_to(root / "psedual")  # inside the package: a wheel carries it (package-data)
    assert main(["sweeps"]) == 0
    listed = capsys.readouterr().out.splitlines()
    from psedual.sweeps import programs

    psedual, python = programs()["psedual"], programs()["python"]
    assert any(re.match(rf"optuna +{re.escape(psedual)} tune --space search_spaces/optuna.yaml", line)
               for line in listed), listed
    # each command as it runs here: never a bare `python` (another interpreter unless the venv is active)
    assert not [line for line in listed if re.search(r"(?<![\w/.`-])(?<!-m )(python|pytest|psedual) ", line)], listed
    assert any(line.startswith("smoke ") and f"RAY_AUTH_MODE=disabled {python} -m pytest tests/test_tune.py" in line
               for line in listed), listed
    assert main(["sweeps", "optuna", "--out", str(tmp_path / "mine")]) == 0
    assert (tmp_path / "mine" / "optuna.yaml").read_text() == (root / "search_spaces" / "optuna.yaml").read_text()
    assert main(["sweeps", "optuna", "--out", str(tmp_path / "mine")]) == 2  # never overwritten
    assert "exists already" in capsys.readouterr().err
    # outside the checkout the printed `--space search_spaces/NAME.yaml` finds the shipped file
    monkeypatch.chdir(tmp_path)
    assert find("search_spaces/table1_mawps_seeds.yaml") == shipped()["table1_mawps_seeds"]
    assert find("smoke") == find("smoke.yaml") == shipped()["smoke"]
    assert find("mine/optuna.yaml") == Path("mine/optuna.yaml")  # a file of your own comes first
    with pytest.raises(FileNotFoundError, match=r"^sweep file elsewhere/smoke.yaml not found; the shipped ones: "):
        find("elsewhere/smoke.yaml")
