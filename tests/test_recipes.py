"""Each solver's published recipe (issue 49): every value of docs/solvers.md's table is the value the
recipe trains with, the data set picks the per-data-set values and the encoder, `psedual train
--recipe` starts from it and the options given override it, and the optimiser it names is the one
built."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import yaml

from psedual import readme
from psedual.cli import main, parse
from psedual.data.registry import DATASETS
from psedual.solvers.config import SolverConfig
from psedual.train import setup
from psedual.results.folder import RunFolder
from psedual.train.config import OPTIMIZERS, TrainConfig
from psedual.train.trainer import build
from psedual.train.recipes import ANY, RECIPES, Recipe, Setting, check, get_recipe
from psedual.typed_cli import COMMANDS, _train_config

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs" / "solvers.md"
TRAIN = COMMANDS[("train",)]


def _docs_rows() -> list[dict[str, str]]:
    """docs/solvers.md's recipe table, one dict per row, the backquotes taken off."""
    block = DOCS.read_text().split("<!-- table:recipes -->\n", 1)[1].split("<!-- /table:recipes -->", 1)[0]
    lines = [line for line in block.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split(" | ")]
    rows = []
    for line in lines[2:]:
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split(" | ")]
        rows.append(dict(zip(header, cells)))
    return rows


def _number(text: str) -> object:
    """A cell's value: an int, a float (`1e-05`, which YAML reads as a string) or the text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _datasets_in(scope: str) -> list[str]:
    """The data sets on which a setting of `scope` is the one that applies (a narrower one may win)."""
    return [name for name, spec in DATASETS.items() if scope in (ANY, name, spec.language)]


def test_every_value_of_the_docs_table_is_what_the_recipe_trains_with():
    rows = _docs_rows()
    assert len(rows) == sum(len(r.settings) for r in RECIPES.values()) > 60  # every setting, and only those
    assert {row["solver"] for row in rows} == set(RECIPES) == {"gts", "dns", "graph2tree", "bert_tree", "re_deduction"}
    checked = 0
    for row in rows:
        recipe = RECIPES[row["solver"]]
        value = _number(row["value"])
        applies = [d for d in _datasets_in(row["data sets"]) if recipe.values(d)[row["setting"]].scope == row["data sets"]]
        assert applies, row  # a row that holds on no data set is a dead value
        for dataset in applies:
            # the config the trainer gets: the recipe's flat keys, as `--recipe` and the paper file give them
            flat = TrainConfig.from_flat({**recipe.flat(dataset), "data.dataset": dataset,
                                          "data.fold": 0 if DATASETS[dataset].folds else None,
                                          "data.user_path": "u.jsonl" if DATASETS[dataset].needs_user_path else None})
            got = flat.flat()[row["setting"]]
            assert got == pytest.approx(value, rel=1e-3) if isinstance(got, float) else got == value, (row, dataset, got)
            checked += 1
        # the source names a repository at a commit, a file and a line, linked to that line
        assert re.fullmatch(r"\[[\w.-]+/[\w.-]+ [\w./-]+:\d+\]\(https://github.com/[\w.-]+/[\w.-]+/blob/[0-9a-f]{7}/"
                            r"[\w./-]+#L\d+\)", row["source"]), row["source"]
    assert checked > 100


def test_the_docs_table_is_rendered_from_the_registry():
    text = DOCS.read_text()
    assert readme.render(text, "docs/solvers.md", readme.DOC_TABLES["docs/solvers.md"]) == text, \
        "docs/solvers.md's recipe table is out of date: run `make readme`"


@pytest.mark.parametrize("solver, dataset, key, value", [
    ("re_deduction", "math23k", "epochs", 500), ("re_deduction", "mawps", "epochs", 100),
    ("re_deduction", "mathqa", "epochs", 1000), ("re_deduction", "svamp", "epochs", 1000),
    ("re_deduction", "mawps-single", "epochs", 100),  # no script: MAWPS's, said in the table
    ("re_deduction", "math23k", "model.plm", "hfl/chinese-roberta-wwm-ext"),
    ("re_deduction", "svamp", "model.plm", "FacebookAI/roberta-base"),
    ("bert_tree", "math23k", "model.plm", "google-bert/bert-base-chinese"),
    ("bert_tree", "mawps", "model.plm", "google-bert/bert-base-uncased"),
    ("dns", "math23k", "batch_size", 64), ("dns", "mawps", "batch_size", 32), ("dns", "mathqa", "batch_size", 64),
    ("gts", "mawps", "min_word_count", 5), ("bert_tree", "math23k", "warmup_fraction", 3500 / 66150),
])
def test_the_most_specific_scope_wins(solver, dataset, key, value):
    assert RECIPES[solver].flat(dataset)[key] == value


def test_a_recipe_is_checked_when_it_is_written():
    with pytest.raises(ValueError, match="recipe key 'seed': not a TrainConfig key a recipe sets"):
        Setting("seed", 1, "a/b@0000000 f.py:1")
    with pytest.raises(ValueError, match="recipe key 'data.fold': not a TrainConfig key"):
        Setting("data.fold", 1, "a/b@0000000 f.py:1")
    with pytest.raises(ValueError, match="recipe scope 'fr'; valid: \\*, zh, en, math23k"):
        Setting("lr", 1e-3, "a/b@0000000 f.py:1", scope="fr")
    lr = Setting("lr", 1e-3, "a/b@0000000 f.py:1")
    with pytest.raises(ValueError, match=r"recipe gts: \[\('lr', '\*'\)\] set twice"):
        Recipe("gts", "-", (lr, lr))
    with pytest.raises(ValueError, match=r"recipe bert_tree: \['model.plm'\] hold on no scope that covers mawps"):
        Recipe("bert_tree", "-", (Setting("model.plm", "hfl/chinese-roberta-wwm-ext", "a/b@0000000 f.py:1", scope="zh"),))
    # what only the run's config knows (psedual.train.recipes, which imports it; the table does not)
    with pytest.raises(ValueError, match="lr must be > 0, got -1"):
        check(Recipe("gts", "-", (Setting("lr", -1.0, "a/b@0000000 f.py:1"),)))
    with pytest.raises(ValueError, match="unknown solver 'x'; valid names: gts, "):
        check(Recipe("x", "-", (lr,)))
    with pytest.raises(ValueError, match="recipe gts: key 'lrr': not a TrainConfig key"):
        check(Recipe("gts", "-", (Setting("lrr", 1e-3, "a/b@0000000 f.py:1"),)))
    assert check(RECIPES["gts"]) is RECIPES["gts"]
    with pytest.raises(ValueError, match="no published recipe for solver 'mine'; recipes: gts, dns, graph2tree, "
                                         "bert_tree, re_deduction"):
        get_recipe("mine")


def _train(args: list[str]) -> TrainConfig:
    return _train_config(parse(TRAIN, [*args, "--out", "unused"]))


def test_train_recipe_takes_the_data_sets_values_and_the_options_given_override_them(tmp_path):
    config = _train(["--recipe", "re_deduction", "--data.dataset", "math23k"])
    assert (config.solver, config.optimizer, config.lr, config.plm_lr, config.weight_decay, config.epochs,
            config.batch_size, config.beam_size, config.clip_grad_norm, config.model.hidden_size, config.model.plm) == \
        ("re_deduction", "adamw", 2e-5, 2e-5, 0.01, 500, 30, 1, 1.0, 768, "hfl/chinese-roberta-wwm-ext")
    config = _train(["--recipe", "re_deduction", "--data.dataset", "mawps", "--data.fold", "2", "--epochs", "5"])
    assert (config.epochs, config.model.plm, config.data.fold, config.lr) == (5, "FacebookAI/roberta-base", 2, 2e-5)
    (tmp_path / "run.yaml").write_text("lr: 0.002\nmodel.hidden_size: 64\n")
    config = _train(["--recipe", "gts", "--config", str(tmp_path / "run.yaml"), "--data.dataset", "mawps",
                     "--data.fold", "0"])
    assert (config.lr, config.model.hidden_size, config.min_word_count, config.epochs) == (0.002, 64, 5, 80)
    assert _train(["--data.dataset", "mawps", "--data.fold", "0"]) == TrainConfig()  # no recipe: the defaults
    with pytest.raises(ValueError, match="--recipe gts trains gts; --solver dns contradicts it"):
        _train(["--recipe", "gts", "--solver", "dns", "--data.dataset", "mawps", "--data.fold", "0"])


def test_print_config_shows_the_recipe(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--recipe", "bert_tree", "--data.dataset", "math23k", "--print_config", "--out", "x"])
    printed = yaml.safe_load(capsys.readouterr().out)
    assert (printed["solver"], printed["batch_size"], printed["beam_size"], printed["model"]["plm"]) == \
        ("bert_tree", 16, 3, "google-bert/bert-base-chinese")


def test_the_optimiser_named_is_the_one_built_and_decays_as_it_says(tmp_path, vocab):
    assert set(setup.OPTIMIZERS) == set(OPTIMIZERS) == {"adam", "adamw"}
    with pytest.raises(ValueError, match="unknown optimizer 'sgd'; valid: adam, adamw"):
        TrainConfig(optimizer="sgd")
    tiny = SolverConfig(embedding_size=8, hidden_size=16, layers=1, dropout=0.0)
    built = {name: build(TrainConfig(model=tiny, optimizer=name, weight_decay=0.1), RunFolder(tmp_path), [], [], vocab,
                         torch.device("cpu"), 0, 1).opt for name in ("adam", "adamw")}
    assert type(built["adam"]) is torch.optim.Adam and type(built["adamw"]) is torch.optim.AdamW
    # AdamW decays the weights apart from the gradient's moments; Adam adds the decay to the gradient
    assert built["adamw"].param_groups[0]["decoupled_weight_decay"]
    assert not built["adam"].param_groups[0]["decoupled_weight_decay"]
    assert built["adam"].param_groups[0]["weight_decay"] == built["adamw"].param_groups[0]["weight_decay"] == 0.1


def test_a_sweep_file_trains_at_the_published_recipe_and_its_own_keys_win(tmp_path):
    """`recipe: published` in a plain grid sweep file (search_spaces/gts_mawps_5fold.yaml), as in a
    paper file's part: every trial carries GTS's recipe; a key the file sets itself overrides it."""
    from psedual.tune.space import SpecError, load_spec, make_config

    spec = load_spec(Path(__file__).parent.parent / "search_spaces" / "gts_mawps_5fold.yaml")
    gts = get_recipe("gts").flat("mawps")
    assert len(spec.arms) == 5
    for arm in spec.arms:
        config = make_config({**spec.fixed, **arm, "seed": 0})
        assert (config.lr, config.epochs, config.batch_size, config.beam_size, config.model.hidden_size) == (
            gts["lr"], gts["epochs"], gts["batch_size"], gts["beam_size"], gts["model.hidden_size"]) == (
            1e-3, 80, 64, 5, 512)
        assert config.weight_decay == gts["weight_decay"] == 1e-5 and config.min_word_count == 5
    own = tmp_path / "own.yaml"
    own.write_text("# psedual tune --space own.yaml\nname: own\nmode: grid\nrecipe: published\n"
                   "fixed: {solver: gts, data.dataset: mawps, data.fold: 0, epochs: 3}\ngrid: {seed: [0]}\n")
    spec = load_spec(own)
    assert make_config({**spec.fixed, **spec.arms[0], "seed": 0}).epochs == 3
    own.write_text("# x\nname: own\nmode: grid\nrecipe: mine\nfixed: {solver: gts}\ngrid: {seed: [0]}\n")
    with pytest.raises(SpecError, match="recipe: 'mine'; valid: published"):
        load_spec(own)


H100_REPORT = ROOT / "docs" / "gpu" / "h100_report.md"


def _report_rows() -> dict[tuple[str, str, str], tuple[int, float]]:
    """The H100 report's train_speed rows: (solver, variant, precision) -> (line, training problems/s)."""
    rows = {}
    for number, line in enumerate(H100_REPORT.read_text().splitlines(), 1):
        found = re.match(r"(\w+)\s+(base|gcn)\s+(fp32|bf16) train\s+([\d.]+) problems/s", line)
        if found:
            rows[found.group(1), found.group(2), found.group(3)] = (number, float(found.group(4)))
    return rows


def test_each_recipes_precision_is_the_one_measured_faster_on_its_device():
    """Issue 59: bf16 trained slower than fp32 on the H100 for GTS, DNS, Graph2Tree and BERT-Tree's
    base step, faster for RE-Deduction (691.6 vs 419.6 problems/s): the table's figures are the
    report's, line by line, and its choice is the faster for every variant measured."""
    from psedual.train.recipe_table import PRECISIONS_MEASURED

    report = _report_rows()
    assert len(report) == 20 and set(PRECISIONS_MEASURED) == set(RECIPES)
    for solver, measured in PRECISIONS_MEASURED.items():
        assert measured.device == "cuda" and {s.variant for s in measured.speeds} == {"base", "gcn"}
        for s in measured.speeds:
            line, fp32 = report[solver, s.variant, "fp32"]
            assert s.source == f"docs/gpu/h100_report.md:{line}", (solver, s)
            assert (s.fp32, s.bf16) == (fp32, report[solver, s.variant, "bf16"][1]), (solver, s)
        faster = {"bf16" if report[solver, v, "bf16"][1] > report[solver, v, "fp32"][1] else "fp32"
                  for v in ("base", "gcn")}
        assert measured.precision == (faster.pop() if len(faster) == 1 else "fp32"), solver
    assert {s: m.precision for s, m in PRECISIONS_MEASURED.items()} == {
        "gts": "fp32", "dns": "fp32", "graph2tree": "fp32", "bert_tree": "fp32", "re_deduction": "bf16"}


def test_a_recipe_trains_at_the_measured_precision_a_cpu_at_fp32_and_the_option_overrides_it():
    from psedual.train.recipe_table import precision_for

    assert precision_for("re_deduction", "cuda") == "bf16" and precision_for("gts", "cuda") == "fp32"
    assert precision_for("re_deduction", "cpu") == "fp32"  # a CPU stays fp32
    assert precision_for("re_deduction", "cuda", "fp32") == "fp32" and precision_for("gts", "cpu", "bf16") == "bf16"
    assert precision_for("re_deduction", "mps") == "fp32"  # a device never measured: fp32
    assert _train(["--recipe", "re_deduction", "--data.dataset", "math23k"]).precision == "auto"
    assert _train(["--recipe", "re_deduction", "--data.dataset", "math23k", "--precision", "fp32"]).precision == "fp32"
    assert _train(["--data.dataset", "mawps", "--data.fold", "0"]).precision == "fp32"  # no recipe: fp32, as pinned


def test_the_trainer_resolves_auto_before_a_step(tmp_path, monkeypatch):
    """`auto` reaches no autocast (which refuses it): the trainer steps at the resolved precision."""
    from psedual.train import device, trainer
    from psedual.tune.space import load_spec, make_config

    with pytest.raises(ValueError, match="precision 'auto' at a training step; valid: fp32, bf16"):
        device.autocast(torch.device("cpu"), "auto")
    seen = []

    def spy(*args, **kwargs):
        seen.append((kwargs["device"].type, kwargs["precision"]))
        return real(*args, **kwargs)

    real = trainer.train_step
    monkeypatch.setattr(trainer, "train_step", spy)
    config = make_config({**load_spec(ROOT / "search_spaces" / "ddp_smoke.yaml").fixed, "precision": "auto",
                          "device": "cpu", "epochs": 1})
    trainer.train(config, tmp_path, test=False, progress=False)
    assert seen and set(seen) == {("cpu", "fp32")}
    # the run keeps what it resolved to (env.json, the runs table's env.precision), not the config's auto
    import json

    assert json.loads((tmp_path / "env.json").read_text())["precision"] == "fp32"
