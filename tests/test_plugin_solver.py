"""A solver from another package (issue 49): registered through the `psedual.solvers` entry-point
group, it is trained, swept with PseDual and compared like a built-in one, with no file of this
repository changed. The package here is written into a folder with its `dist-info` (which is what
`pip install` leaves: the entry point) and reaches the processes through PYTHONPATH, as Ray's
workers see it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from psedual.solvers import BUILT_IN, registered

ROOT = Path(__file__).parent.parent
PACKAGE = '''"""A researcher's solver, in a package of its own."""

from psedual.solvers.gts import GTS


class TinySolver(GTS):
    """GTS under another name: any class meeting psedual.solvers.interface.Solver will do."""

    name = "tiny_gts"
'''


def write_package(root: Path, entry_points: str, source: str = PACKAGE, module: str = "tiny_solver") -> Path:
    """A folder holding package `module` and the dist-info `pip install` would leave (its entry points)."""
    (root / module).mkdir(parents=True)
    (root / module / "__init__.py").write_text(source)
    info = root / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return root


def test_an_installed_entry_point_registers_its_solver(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(write_package(tmp_path, "[psedual.solvers]\ntiny_gts = tiny_solver:TinySolver\n")))
    found = registered()
    assert list(found) == ["tiny_gts"] and found["tiny_gts"].__module__ == "tiny_solver"
    assert found["tiny_gts"].name == "tiny_gts" and "tiny_gts" not in BUILT_IN


@pytest.mark.parametrize("entry, source, message", [
    ("gts = tiny_solver:TinySolver", PACKAGE, r"solver 'gts' \(entry point `tiny_solver:TinySolver` of tiny_solver\): "
                                              r"the name 'gts' is taken; registered: gts, dns"),
    ("mine = tiny_solver:Absent", PACKAGE, r"solver 'mine' .*: cannot be loaded: .*Absent"),
    ("mine = tiny_solver:TinySolver", "import no_such_module\n", r"solver 'mine' .*: cannot be loaded: No module named "
                                                                 r"'no_such_module'"),
    ("mine = tiny_solver:TinySolver", "class TinySolver:\n    name = 'mine'\n",
     r"solver 'mine' .*: not a solver class \(interface.Solver\); missing: reads_subwords, may_leave_parameters_unused, "
     r"pretrained_parameters"),
    ("mine = tiny_solver:TinySolver", PACKAGE, r"solver 'mine' .*: its class says name = 'tiny_gts'; checkpoints "
                                               r"store the name: make them agree"),
])
def test_a_bad_entry_point_is_one_error_naming_it(tmp_path, monkeypatch, entry, source, message):
    monkeypatch.syspath_prepend(str(write_package(tmp_path, f"[psedual.solvers]\n{entry}\n", source)))
    monkeypatch.delitem(sys.modules, "tiny_solver", raising=False)
    with pytest.raises(ImportError, match=message):
        registered()


SWEEP = """# psedual tune --space {path}   (tests/test_plugin_solver.py: a solver of another package, swept with PseDual)
name: plugin
mode: grid
fixed:
  solver: tiny_gts
  data.dataset: mawps-single
  data.train_size: 64
  epochs: 1
  batch_size: 32
  beam_size: 1
  model.embedding_size: 16
  model.hidden_size: 16
  model.layers: 1
  threads: 1
grid:
  variant: [base, gcn]
resources:
  max_concurrent: 2
"""


@pytest.mark.slow  # ~50-90 s (a sweep in a process of its own); the entry point's quick checks above stay
def test_a_solver_of_another_package_sweeps_with_pseDual_and_is_compared(tmp_path):
    """The main job, in a process of its own as a user starts it, with the package on PYTHONPATH:
    the driver lists the solver, Ray's trial workers (which see PYTHONPATH, not a sys.path edited at
    run time) build it, and the job's comparison of its two arms runs on the runs it wrote."""
    packages = write_package(tmp_path / "packages", "[psedual.solvers]\ntiny_gts = tiny_solver:TinySolver\n")
    space = tmp_path / "plugin.yaml"
    space.write_text(SWEEP.format(path=space))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(packages), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    done = subprocess.run([sys.executable, "-m", "psedual.cli", "tune", "--space", str(space), "--storage",
                           str(tmp_path / "results")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    runs = pl.read_parquet(tmp_path / "results" / "runs" / "experiment=plugin")
    assert sorted(zip(runs["solver"], runs["variant"], runs["status"])) == [("tiny_gts", "base", "completed"),
                                                                           ("tiny_gts", "gcn", "completed")]
    assert runs["test_value_acc"].is_not_null().all() and runs["test_infill_acc"].drop_nulls().len() == 1
    claims = pl.read_parquet(tmp_path / "results" / "claims" / "compare_plugin.parquet")
    assert claims.height == 1 and "tiny_gts" in claims["cell"][0] and claims["treatment_arm"][0] == "gcn", claims
    assert "PseDual-GCN vs base" in done.stdout
