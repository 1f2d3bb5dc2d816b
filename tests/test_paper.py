"""The paper file: both profiles load into ordinary sweeps, bad files name their key, a data set
the user has not brought is skipped, a paper run resumes part by part, and the cost plan's
arithmetic on a known calibration."""

from __future__ import annotations

from pathlib import Path

import pytest

from psedual import paper_job
from psedual.job import TuneJob, run_job
from psedual.train.resources import Resources
from psedual.tune.cost import PART, Figures, PartPlan, Sizes, plan_part, read_costs, shape, write_costs
from psedual.tune.plan_text import render
from psedual.tune.paper import PARTS, load_paper, runnable
from psedual.tune.space import SpecError, make_config

ROOT = Path(__file__).parent.parent
PAPER = ROOT / "search_spaces" / "paper.yaml"


@pytest.mark.parametrize("profile", ["full", "small"])
def test_the_paper_file_loads_every_part_under_each_profile(profile):
    paper = load_paper(PAPER)
    assert PAPER.read_text().startswith("# python tune.py --space search_spaces/paper.yaml")
    assert paper.part_names() == list(PARTS)
    table1 = paper.sweep("table1", profile)
    assert table1.name == "paper.table1"
    configs = [make_config(f) for f in table1.trial_configs()]
    seeds = {c.seed for c in configs}
    assert len(seeds) >= (5 if profile == "full" else 3)
    assert {c.psedual.expression_encoder if c.psedual else "base" for c in configs} == {"base", "gru", "gcn"}
    table3 = [make_config(f) for f in paper.sweep("table3", profile).trial_configs()]
    assert {(c.psedual.fusion if c.psedual else "base") for c in table3} == {"base", "teacher_forcing", "scheduled"}
    figure1 = [make_config(f) for f in paper.sweep("figure1", profile).trial_configs()]
    assert len({c.data.train_size for c in figure1}) >= 3
    if profile == "full":
        assert {c.solver for c in configs} == {"gts", "dns", "graph2tree", "bert_tree", "re_deduction"}
        assert {c.data.dataset for c in configs} == {"math23k", "mathqa", "mawps"}
        assert {c.data.fold for c in configs if c.data.dataset == "mawps"} == {0, 1, 2, 3, 4}
        assert all(paper.sweep(p, profile).resources.use_gpu for p in ("table1", "table3", "figure1"))
        assert paper.profile(profile).storage == "uri"
    else:
        assert {c.data.dataset for c in configs} == {"mawps", "svamp"}
        assert {c.model.hidden_size for c in configs + table3 + figure1} == {128}
        assert all(paper.sweep(p, profile).resources.in_process for p in ("table1", "table3", "figure1"))


def test_the_full_profile_trains_every_trial_at_its_solvers_published_recipe():
    """Issue 49: each solver at its own recipe on its data set (psedual/train/recipes.py), the encoder
    by hub id for the data set's language; Table 3 on Math23K over the five solvers and Figure 1
    over the paper's three; the paper's τ (3e-5 every 100 steps, again each epoch) for PseDual."""
    from psedual.train.recipes import RECIPES

    paper = load_paper(PAPER)
    solvers = {"gts", "dns", "graph2tree", "bert_tree", "re_deduction"}
    seen = {}
    for part in ("table1", "table3", "figure1"):
        configs = [make_config(f) for f in paper.sweep(part, "full").trial_configs()]
        seen[part] = configs
        for config in configs:
            flat = config.flat()
            recipe = RECIPES[config.solver].flat(config.data.dataset)
            assert {k: flat[k] for k in recipe} == recipe, (part, config.solver, config.data.dataset)
            if config.psedual is not None:
                p = config.psedual
                assert (p.tau_schedule, p.tau_reset, p.tau_rate, p.tau_interval, p.tau_min) == ("step", "epoch", 3e-5,
                                                                                                100, 0.5)
    assert {c.solver for c in seen["table3"]} == solvers and {c.data.dataset for c in seen["table3"]} == {"math23k"}
    assert {(c.psedual.fusion if c.psedual else "base") for c in seen["table3"]} == {"base", "teacher_forcing",
                                                                                   "scheduled"}
    assert len(seen["table3"]) == 5 * 3 * 5
    assert {c.solver for c in seen["figure1"]} == {"gts", "bert_tree", "re_deduction"}
    assert {c.data.dataset for c in seen["figure1"]} == {"math23k"}
    plms = {(c.solver, c.data.dataset): c.model.plm for c in seen["table1"] if c.solver in ("bert_tree", "re_deduction")}
    assert plms == {("bert_tree", "math23k"): "google-bert/bert-base-chinese",
                    ("bert_tree", "mathqa"): "google-bert/bert-base-uncased",
                    ("bert_tree", "mawps"): "google-bert/bert-base-uncased",
                    ("re_deduction", "math23k"): "hfl/chinese-roberta-wwm-ext",
                    ("re_deduction", "mathqa"): "FacebookAI/roberta-base",
                    ("re_deduction", "mawps"): "FacebookAI/roberta-base"}
    # the MAWPS folds of one solver and arm are one comparison: the job's cells are data set x solver
    from psedual.comparisons import comparisons

    planned = comparisons(paper.sweep("table1", "full"), ["base", "gru", "gcn"], "x")
    assert [(p.arm, p.base, p.treatments, p.cells) for p in planned] == [
        ("variant", "base", ("gru", "gcn"), ("data.dataset", "solver"))]
    # the small profile trains at its own CPU-scale settings: no recipe there
    small = [make_config(f) for f in paper.sweep("table1", "small").trial_configs()]
    assert {(c.lr, c.epochs, c.model.plm) for c in small} == {(0.003, 5, "minilm")}


RECIPE_PART = """
name: p
parts:
  table3:
    mode: grid
    recipe: published
    fixed: {data.dataset: mawps, data.fold: 0, epochs: 2}
    grid: {solver: [gts, re_deduction], variant: [base, gcn]}
    arms: [{seed: 0}, {seed: 1, lr: 0.5}]
profiles:
  small:
    about: tiny
"""


def test_a_recipe_part_crosses_its_solvers_into_arms_and_the_keys_it_sets_win(tmp_path):
    spec = load_paper(_paper(tmp_path, RECIPE_PART)).sweep("table3", "small")
    assert spec.grid == {"variant": ["base", "gcn"]} and len(spec.arms) == 4
    configs = {(c.solver, c.seed, c.variant): c for c in map(make_config, spec.trial_configs())}
    assert len(configs) == 8
    re_deduction = configs[("re_deduction", 0, "gcn")]
    assert (re_deduction.lr, re_deduction.optimizer, re_deduction.batch_size, re_deduction.model.plm) == (
        2e-5, "adamw", 30, "FacebookAI/roberta-base")
    assert re_deduction.epochs == 2 and configs[("gts", 0, "base")].epochs == 2  # fixed wins over the recipe
    assert configs[("re_deduction", 1, "base")].lr == 0.5 and configs[("gts", 1, "base")].lr == 0.5  # so does an arm
    assert configs[("gts", 0, "base")].min_word_count == 5


@pytest.mark.parametrize("edit, message", [
    (("recipe: published", "recipe: mine"), "recipe: 'mine'; valid: published"),
    (("mode: grid", "mode: optuna"), "recipe: only a grid part trains at recipes"),
])
def test_a_bad_recipe_part_is_one_error_naming_the_file_and_key(tmp_path, edit, message):
    with pytest.raises(SpecError, match=f"parts.table3 \\(profile small\\): {message}"):
        load_paper(_paper(tmp_path, RECIPE_PART.replace(*edit)))


def _paper(tmp_path, text: str) -> Path:
    path = tmp_path / "paper.yaml"
    path.write_text(text)
    return path


GOOD = """
name: p
parts:
  table3:
    mode: grid
    fixed: {solver: gts, data.dataset: mawps, data.fold: 0}
    grid: {variant: [base, gcn]}
profiles:
  small:
    about: tiny
    parts:
      table3: {grid: {seed: [0, 1]}}
"""


def test_a_profile_merges_mappings_and_replaces_lists(tmp_path):
    spec = load_paper(_paper(tmp_path, GOOD)).sweep("table3", "small")
    assert spec.grid == {"variant": ["base", "gcn"], "seed": [0, 1]}
    assert len(spec.trial_configs()) == 4


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("table3: {grid", "table3: {fixed: {lrr: 1}, grid"), r"parts\.table3 \(profile small\).*lrr"),
    (lambda t: t.replace("  table3:\n    mode", "  table9:\n    mode"), r"parts: unknown \['table9'\]"),
    (lambda t: t.replace("about: tiny", "about: tiny\n    storage: ftp"), r"profiles\.small: storage"),
    (lambda t: t + "extra: 1\n", "exactly the top-level keys"),
    (lambda t: t.replace("mode: grid", "mode: [grid"), "not valid YAML"),
])
def test_a_bad_paper_file_is_one_error_naming_the_file_and_key(tmp_path, edit, message):
    path = _paper(tmp_path, edit(GOOD))
    with pytest.raises(SpecError, match=message) as err:
        load_paper(path)
    assert str(path) in str(err.value)


def test_an_unknown_profile_or_part_is_refused_listing_the_valid_ones(tmp_path):
    paper = load_paper(_paper(tmp_path, GOOD))
    with pytest.raises(SpecError, match="no profile 'big'; valid: small"):
        paper.profile("big")
    with pytest.raises(SpecError, match="--only table1: no such part; valid: table3"):
        paper.part_names(("table1",))


def test_a_data_set_the_user_has_not_brought_is_skipped_with_one_line(tmp_path):
    # MathQA's training file is the user's; the shared data holds only its valid and test files
    root = tmp_path / "data"
    (root / "mathqa").mkdir(parents=True)
    text = GOOD.replace("fixed: {solver: gts, data.dataset: mawps, data.fold: 0}", f"fixed: {{solver: gts, data.data_root: {root}}}")
    text = text.replace("grid: {variant: [base, gcn]}", "grid: {variant: [base, gcn]}\n    arms: [{data.dataset: mathqa}, "
                        "{data.dataset: mawps, data.fold: 0}]")
    spec, lines = runnable(load_paper(_paper(tmp_path, text)).sweep("table3", "small"))
    assert spec.arms == [{"data.dataset": "mawps", "data.fold": 0}]
    assert len(lines) == 1 and "mathqa" in lines[0] and "mathqa/train.json" in lines[0]
    (root / "mathqa" / "train.json").write_text("[]")
    spec, lines = runnable(load_paper(_paper(tmp_path, text)).sweep("table3", "small"))
    assert len(spec.arms) == 2 and not lines


def test_a_resumed_paper_run_skips_finished_parts_resumes_the_killed_one_and_starts_the_rest(tmp_path, monkeypatch,
                                                                                              capsys):
    text = GOOD.replace("  table3:\n", "  table1:\n    mode: grid\n    fixed: {solver: gts, data.dataset: mawps, "
                        "data.fold: 0}\n    grid: {variant: [base, gcn]}\n  figure1:\n    mode: grid\n    fixed: "
                        "{solver: gts, data.dataset: mawps, data.fold: 0}\n    grid: {variant: [base, gcn]}\n  table3:\n")
    path = _paper(tmp_path, text)
    state = {"p-small.table1": 2, "p-small.table3": 0}  # table1 finished (2 of 2 trials); table3 killed
    monkeypatch.setattr(paper_job, "finished_trials", lambda storage, name: state.get(name, 0))
    monkeypatch.setattr(paper_job, "taken", lambda storage, name: name in state)
    calls = []
    # rerun: the --resume name a part's lost or failed trial is rerun by, the paper run's own
    monkeypatch.setattr(paper_job, "run_spec", lambda spec, name, resume, storage, address, verbose, dashboard, rerun:
                        calls.append((name, resume, len(spec.trial_configs()), rerun)) or 0)
    job = TuneJob.of(space=str(path), profile="small", resume="p-small", storage=str(tmp_path))
    assert paper_job.run_paper(job) == 0
    assert calls == [("p-small.table3", True, 4, "p-small"), ("p-small.figure1", False, 2, "p-small")]
    out = capsys.readouterr().out
    assert "p-small.table1: finished (2 trials): skipped" in out
    assert "psedual analyze report --experiment p-small --out docs/p-small" in out
    calls.clear()  # a fresh run takes the next free name; --only runs the parts named
    assert paper_job.run_paper(TuneJob.of(space=str(path), profile="small", only="figure1", storage=str(tmp_path))) == 0
    assert calls == [("p-small-2.figure1", False, 2, "p-small-2")]


def test_a_paper_file_needs_a_profile_and_a_sweep_file_takes_none(tmp_path):
    with pytest.raises(ValueError, match="give --profile \\(small\\)"):
        paper_job.run_paper(TuneJob(space=str(_paper(tmp_path, GOOD))))
    with pytest.raises(ValueError, match="is a sweep file"):
        run_job(TuneJob.of(space=str(ROOT / "search_spaces" / "smoke.yaml"), profile="small"))


def test_the_plan_arithmetic_on_a_stored_calibration(tmp_path):
    """Two trials of one shape: 2 epochs of 10 steps (a 640-problem training split, batch 64),
    100 validation and 200 test problems; start 3 s, 0.5 s a step, 0.01 s a problem:
    3 + 2 × (10 × 0.5 + 100 × 0.01) + 200 × 0.01 = 17 s a trial, 34 s both; two at a time and
    a part's 6 s: 6 + 34 / 2 = 23 s wall; 34 CPU-seconds at $360 a CPU-hour = $3.40."""
    flat = {"solver": "gts", "variant": "base", "data.fold": 0, "epochs": 2, "batch_size": 64, "seed": 0}
    configs = [make_config(flat), make_config({**flat, "seed": 1})]
    where = "test machine x2"
    costs = tmp_path / "costs.tsv"
    write_costs([{"machine": where, "commit": "abc", "concurrency": 2, "shape": shape(configs[0]), "start_s": 3,
                  "step_s": 0.5, "eval_s": 0.01},
                 {"machine": where, "commit": "abc", "concurrency": 2, "shape": PART, "start_s": 6, "step_s": 0,
                  "eval_s": 0}], costs)
    stored = read_costs(costs)
    assert stored[(where, 2, PART)] == Figures(6.0, 0.0, 0.0)
    plan = plan_part("table1", configs, Resources(max_concurrent=2), stored, where,
                     size_of=lambda config: Sizes(640, 100, 200))
    assert (plan.trials, plan.epochs, plan.steps) == (2, 4, 40)
    assert plan.seconds == pytest.approx(34.0)
    assert plan.wall_s == pytest.approx(23.0)
    assert plan.hours == pytest.approx(34 / 3600)
    text = render([plan], where, 360.0, 3.0, [])
    assert "0.4 min at 2" in text and text.splitlines()[-1].endswith("3.40")  # 34 CPU-seconds at $360 an hour
    other = plan_part("table1", configs, Resources(max_concurrent=2), stored, "another machine",
                      size_of=lambda config: Sizes(640, 100, 200))
    assert other.uncalibrated == (shape(configs[0]),) and other.part_s is None
    assert "not calibrated" in render([other], "another machine", 0.36, 3.0, [])


def test_a_gpu_trial_is_priced_in_gpu_hours():
    plan = PartPlan("t", seconds=7200, units=0.5, gpu=True, concurrency=4, part_s=60)
    assert plan.hours == pytest.approx(1.0)
    assert plan.wall_s == pytest.approx(60 + 1800)
    assert "1.00 GPU-h" in render([plan], "m", 0.05, 2.5, []) and "2.50" in render([plan], "m", 0.05, 2.5, [])


def test_the_stored_calibration_names_its_machine_and_commit():
    rows = read_costs()
    assert rows, "psedual/tune/costs.tsv holds no calibration"
    header = [line for line in (ROOT / "psedual" / "tune" / "costs.tsv").read_text().splitlines()
              if not line.startswith("#")][0]
    assert header.split("\t")[:2] == ["machine", "commit"]


def test_the_plan_of_the_small_profile_launches_nothing():
    import subprocess
    import sys

    code = ("import sys; from psedual.cli import main; "
            "main(['tune', '--space', 'search_spaces/paper.yaml', '--profile', 'small', '--plan', '--only', 'table3']); "
            "print('ray imported', 'ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "ray imported False" in out
    row = next(line for line in out.splitlines() if line.startswith("table3"))
    assert row.split()[:4] == ["table3", "9", "45", "1035"]
    assert "min at 2" in row or "not calibrated" in row  # a time where costs.tsv has this machine


def test_a_gpu_plan_prices_the_gpu_hours_the_head_and_the_node_setup_at_the_instances_prices():
    """Issue 42: GPU parts from their GPU's calibration (one shape at a time: concurrency 1), priced
    at the worker type's on-demand price per GPU; the head for the wall time; each GPU node's setup
    and idle minutes; and the plan says what is calibrated and what extrapolated."""
    from psedual.tune.instances import INSTANCES, ClusterCost, gpu_machine, instance

    flat = {"solver": "gts", "variant": "base", "data.fold": 0, "epochs": 2, "batch_size": 64, "seed": 0}
    configs = [make_config(flat), make_config({**flat, "seed": 1})]
    a10g = gpu_machine(INSTANCES["g5.xlarge"].gpu)
    stored = {(a10g, 1, shape(configs[0])): Figures(3, 0.5, 0.01, "abc"), (a10g, 2, PART): Figures(6, 0, 0, "abc")}
    gpu = Resources(use_gpu=True, in_process=False, max_concurrent=2)
    plan = plan_part("table1", configs, gpu, stored, a10g, size_of=lambda config: Sizes(640, 100, 200))
    assert plan.seconds == pytest.approx(34.0) and plan.wall_s == pytest.approx(23.0) and plan.gpu
    cluster = ClusterCost(instance("g5.xlarge", gpu=True), instance("m6i.2xlarge"), 0.384, 15, 10)
    text = render([plan] * 1, "laptop", 0.05, 1.006, [], cluster)
    assert "$1.006/GPU-hour = g5.xlarge at $1.006/h for 1 NVIDIA A10G; GPU parts from the calibration of " \
           "NVIDIA A10G x1" in text
    # 2 nodes (2 trials at once, a GPU each) x 25 min = 0.83 node-h x $1.006; the head for 23 s
    trials, head, setup = 34 / 3600 * 1.006, 23 / 3600 * 0.384, 2 * 25 / 60 * 1.006
    assert f"= ${setup:.2f} (setup: an estimate, not measured)" in text
    assert f"total on the cluster: ${trials + head + setup:.2f} (trials ${trials:.2f}, head ${head:.2f}" in text
    assert "table1: calibrated: the start, step and per-problem seconds of 1 of its 1 shape(s) and the part's " \
           "overhead, measured on NVIDIA A10G x1 (commit abc); extrapolated: 2 epochs a trial from the steps timed " \
           "per shape" in text
    assert "extrapolated: 1 of its" not in text and "stand-in" not in text  # nothing borrowed here
    with pytest.raises(ValueError, match="unknown instance type 'p9.huge'; valid: g5.xlarge, "):
        TuneJob.of(gpu_instance="p9.huge")
    with pytest.raises(ValueError, match="m6i.2xlarge holds no GPU"):
        TuneJob.of(gpu_instance="m6i.2xlarge")
    assert TuneJob().prices.gpu_hour == 1.006 and TuneJob.of(price_gpu_hour=2.5).prices.gpu_hour == 2.5


def test_the_plans_default_instances_are_the_gpu_clusters():
    import yaml

    gpu = yaml.safe_load((ROOT / "clusters" / "gpu.yaml").read_text())
    job = TuneJob().prices
    types = gpu["available_node_types"]
    assert types[gpu["head_node_type"]]["node_config"]["InstanceType"] == job.head_instance
    assert types["gpu_worker"]["node_config"]["InstanceType"] == job.gpu_instance
    assert gpu["idle_timeout_minutes"] == job.node_idle_minutes


def test_a_shape_timed_on_one_data_set_prices_its_sibling_on_another_and_the_plan_says_so():
    """A GPU session times the Math23K shapes only (`--calibrate_datasets math23k`): the MAWPS trial
    of the same solver, variant and sizes is priced from them, its steps and problems counted on
    MAWPS; a stand-in encoder's note is printed; a shape with no sibling stays not calibrated."""
    from psedual.tune.cost import sibling

    flat = {"solver": "gts", "variant": "base", "data.fold": 0, "epochs": 2, "batch_size": 64, "seed": 0}
    mawps = make_config(flat)
    math23k = make_config({**flat, "data.dataset": "math23k", "data.fold": None})
    where = "NVIDIA H100 80GB HBM3 x1"
    note = "a stand-in encoder (random); 20 steps timed an epoch"
    costs = {(where, 1, shape(math23k)): Figures(3, 0.5, 0.01, "abc", note), (where, 1, PART): Figures(6, 0, 0, "abc")}
    fig, dataset = sibling(costs, where, 1, shape(mawps))
    assert (fig, dataset) == (Figures(3, 0.5, 0.01), "math23k")
    assert sibling(costs, "another GPU x1", 1, shape(mawps)) == (None, "")
    assert sibling(costs, where, 1, shape(make_config({**flat, "batch_size": 32}))) == (None, "")
    gpu = Resources(use_gpu=True, in_process=False, max_concurrent=1)
    plan = plan_part("table3", [mawps], gpu, costs, where, size_of=lambda config: Sizes(640, 100, 200))
    assert plan.seconds == pytest.approx(17.0) and plan.borrowed == {shape(mawps): "math23k"}
    text = render([plan], "laptop", 0.05, 12.29, [])
    assert f"table3: extrapolated: 1 of its 1 shapes priced from the same solver, variant and sizes timed on another " \
           f"data set (seconds per step and per problem taken as equal; steps and problems counted on their own " \
           f"data), e.g. math23k for {shape(mawps)}" in text
    assert f"table3: extrapolated: 1 shapes timed with {note}" in text
    alone = plan_part("table3", [make_config({**flat, "batch_size": 32})], gpu, costs, where,
                      size_of=lambda config: Sizes(640, 100, 200))
    assert alone.uncalibrated and not alone.borrowed and "not calibrated" in render([alone], "laptop", 0.05, 1.0, [])


def test_the_calibration_options_are_checked_and_read_with_their_notes(tmp_path):
    for bad, message in (({"calibrate_steps": 5}, "calibrate_steps: only with calibrate"),
                         ({"calibrate": True, "calibrate_steps": 0}, "calibrate_steps must be >= 1"),
                         ({"calibrate": True, "calibrate_plm": str(tmp_path)}, "no config.json there")):
        with pytest.raises(ValueError, match=message):
            TuneJob.of(**bad)
    with pytest.raises(ValueError, match="profile, only, calibrate and costs are for a paper file"):
        run_job(TuneJob.of(space=str(ROOT / "search_spaces" / "smoke.yaml"), costs=str(tmp_path / "c.tsv")))
    assert TuneJob.of(costs=str(tmp_path / "c.tsv")).calibration.costs_path == tmp_path / "c.tsv"
    write_costs([{"machine": "m", "commit": "abc", "concurrency": 1, "shape": "s", "start_s": 1, "step_s": 2,
                  "eval_s": 3, "note": "20 steps timed an epoch"}], tmp_path / "c.tsv")
    assert read_costs(tmp_path / "c.tsv")[("m", 1, "s")].note == "20 steps timed an epoch"


def test_a_stand_in_encoder_replaces_only_a_pretrained_encoders_and_says_so(tmp_path):
    from psedual.tune.calibrate import STAND_IN_HIDDEN, STAND_IN_LAYERS, stand_in

    flat = {"solver": "bert_tree", "model.plm": "/home/ubuntu/models/roberta-base", "data.dataset": "mawps"}
    timed, note = stand_in(flat, str(tmp_path / "minilm"))
    assert timed == {**flat, "model.plm": str(tmp_path / "minilm"), "model.plm_layers": STAND_IN_LAYERS,
                     "model.plm_hidden": STAND_IN_HIDDEN}
    assert note == "a stand-in encoder (random, 12 layers x 768, minilm's tokenizer) for roberta-base"
    assert stand_in(flat, None) == (flat, "")  # no stand-in given: the named encoder is timed
    gts = {"solver": "gts", "model.plm": "/home/ubuntu/models/roberta-base"}
    assert stand_in(gts, str(tmp_path)) == (gts, "")
