"""Margins a user could mean (issue 57): `psedual analyze --margin` goes through the same check as a
sweep file's `seeds.margin` (`analysis.stats.margins.check_margin`), refused in one line that names
the option, the value, the unit and the bounds."""

from __future__ import annotations

import pytest

from analysis import cli
from analysis.options import CompareOptions

BOUNDS = "give one from 0.1 to 10 points of accuracy"


@pytest.mark.parametrize("margin, said", [
    (50.0, f"--margin 50 points of accuracy is refused: a band of ±50 points admits almost any accuracy difference; "
           f"{BOUNDS}"),
    (0.01, f"--margin 0.01 points of accuracy is refused: no seed budget could show a difference that small; {BOUNDS} "
           f"(did you mean 1, a percent typed as a fraction?)"),
    (99.9, "--margin 99.9 points of accuracy is refused"),
    (1e-300, "--margin 1e-300 points of accuracy is refused"),
    (0.0, "--margin 0 points of accuracy is refused: it is the half-width of the equivalence band"),
])
def test_the_option_refuses_a_margin_no_user_could_mean(margin, said):
    with pytest.raises(ValueError) as err:
        CompareOptions(treatment=("gcn",), margin=margin)
    assert str(err.value).startswith(said) and "\n" not in str(err.value)


def test_the_bounds_are_accepted():
    assert CompareOptions(treatment=("gcn",), margin=0.1).margin == 0.1
    assert CompareOptions(treatment=("gcn",), margin=10).margin == 10
    assert CompareOptions(treatment=("gcn",)).margin == 1.0


@pytest.mark.parametrize("value, said", [
    ("50", "psedual analyze: error: --margin 50 points of accuracy is refused"),
    ("0.01", "psedual analyze: error: --margin 0.01 points of accuracy is refused"),
    ("abc", "psedual analyze compare: error: --margin abc: expected a number of points of accuracy from 0.1 to 10"),
])
def test_the_command_line_says_it_in_one_line(value, said, tmp_path, capsys):
    code = cli.main(["analyze", "compare", "--root", str(tmp_path), "--treatment+", "gcn", "--margin", value])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(said) and err.count("\n") == 1


SWEEP = """# python tune.py --space s.yaml
name: s
mode: grid
fixed: {solver: gts, data.dataset: mawps, data.fold: 0, epochs: 1}
arms:
  - {variant: base}
  - {variant: gcn}
grid: {seed: [0, 1]}
compare:
  - {arm: variant, base: base, treatments: [gcn], margin: MARGIN}
"""


@pytest.mark.parametrize("margin, said", [("50", "compare[1].margin 50 points of accuracy is refused"),
                                          ("0.01", "compare[1].margin 0.01 points of accuracy is refused")])
def test_a_sweep_files_comparison_margin_is_refused_at_load_not_after_the_sweep(tmp_path, margin, said):
    from psedual.job import TuneJob, run_job

    space = tmp_path / "s.yaml"
    space.write_text(SWEEP.replace("MARGIN", margin))
    with pytest.raises(ValueError) as err:
        run_job(TuneJob(space=str(space), storage=str(tmp_path / "results"), plan=True))
    assert str(err.value).startswith(f"{space}: {said}") and "\n" not in str(err.value)
    assert not (tmp_path / "results").exists()


def test_a_sweep_in_rounds_compares_at_the_margin_its_looks_use():
    """control_rounds' comparison names no margin: its claims read ±0.45 (half the paper's +0.9, the
    rule's default, as its looks do), not ±1; a sweep with fixed seeds keeps its entries' margins."""
    from pathlib import Path

    from psedual.comparisons import compare_options
    from psedual.tune.space import arm_values, load_spec

    root = Path(__file__).resolve().parents[1]
    for name, want in (("control_rounds", [0.45]), ("converged", [1.0, 1.0, 1.0])):
        spec = load_spec(str(root / "search_spaces" / f"{name}.yaml"))
        assert [o.margin for o in compare_options(spec, arm_values(spec, "variant"), "x", name)] == want


def test_a_sweep_in_rounds_that_continues_an_experiment_compares_its_seeds_too():
    """control_rounds continues experiment control (its 16 seeds are the first look): its claims read
    both experiments, as its looks do, not the later seeds alone; a sweep without it reads its own."""
    from pathlib import Path

    from psedual.comparisons import compare_options
    from psedual.tune.space import arm_values, load_spec

    root = Path(__file__).resolve().parents[1]
    for name, want in (("control_rounds", ("control", "control_rounds")), ("converged", ("converged",))):
        spec = load_spec(str(root / "search_spaces" / f"{name}.yaml"))
        assert {o.experiment for o in compare_options(spec, arm_values(spec, "variant"), "x", name)} == {want}
    # and pools across what continuing implies: the earlier code, and the options added since its table
    # (null in its rows, each defaulting to the behaviour before it), as arm_rows matched its runs
    from psedual.comparisons import continued_allowances

    assert continued_allowances(str(root / "docs" / "control" / "results"), "control") == (
        "code_version", "model.problem_vector", "optimizer", "selection")
    assert continued_allowances(str(root / "nowhere"), "control") == ("code_version",)
