"""A corpus of hostile sweep files (issue 52), by class, and what `psedual tune --space FILE --plan
true` must say of each.

Classes (each case changes one thing in a small valid sweep file):
- `twice`: a key given twice in one mapping, at any depth (YAML keeps the last: a second `grid:`
  dropped an arm);
- `idle`: a top-level key that does nothing in the sweep's mode (the sampler's `seed` in a grid);
- `type`: a value the field it sets cannot take (a string learning rate, lists as seeds, a
  fractional draw for a whole number of epochs, a sweep setting of the wrong kind);
- `bytes`: a file that is not UTF-8 text;
- `valid`: what must still load (a merge key's override, an int for a float field, null where a
  field takes null, an exponent written so that YAML reads a number).

An `error` case exits 2 with one line `psedual: error: FILE...` holding every fragment, and no
Python type's name; a `valid` one exits 0. `test_hostile_sweeps.py` asserts these. Run as a
script, it prints each case's outcome under whatever `psedual` is first on the path, so old and
new code can be compared:

    cd CHECKOUT && .venv/bin/python TESTS/hostile_sweeps.py OUT
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path

GRID = "name: s\nmode: grid\nfixed: {data.fold: 0, epochs: 2}\n"
"""The head of a small valid grid sweep; each case adds or changes a few lines."""
OPTUNA = "name: s\nmode: optuna\nfixed: {data.fold: 0, epochs: 2}\n"
"""The head of a small valid Optuna sweep."""
PAPER = """name: p
parts:
  table3:
    mode: grid
    fixed: &common {solver: gts, data.fold: 0, epochs: 2}
    arms: [{variant: base}, {variant: gcn}]
profiles:
  small:
    about: small
    parts:
      table3:
        fixed:
          <<: *common
          epochs: 3{extra}
        grid: {seed: [0, 1]}
"""
"""A paper file whose profile overrides a merged mapping's key (valid YAML: not a key twice)."""
PYTHON_WORDS = ("<class", "typing.", "not supported between", "unhashable", "Traceback", "NoneType")
"""What no error line may hold: Python's names for types, or its words for a failed comparison."""


@dataclass(frozen=True)
class Case:
    kind: str
    """`twice`, `idle`, `type`, `bytes` or `valid`."""
    name: str
    text: str | bytes
    """The file's contents (bytes: written as they are)."""
    fragments: tuple[str, ...] = ()
    """An error case: what its line must hold besides the file's name."""

    @property
    def expect(self) -> str:
        return "load" if self.kind == "valid" else "error"


BIG_SEEDS = "[[" + ", ".join(map(str, range(30_000))) + "]]"
CASES = [
    # a key twice: top level, in a grid, in an arm, in a distribution, in a paper profile
    Case("twice", "grid twice", GRID + "grid:\n  variant: [base, gcn]\ngrid:\n  seed: [0, 1]\n",
         (":6: grid given twice (lines 4 and 6)",)),
    Case("twice", "grid.seed twice", GRID + "grid:\n  seed: [0, 1]\n  variant: [base, gcn]\n  seed: [2, 3]\n",
         (":7: grid.seed given twice (lines 5 and 7)",)),
    Case("twice", "an arm's key twice", GRID + "arms:\n  - {variant: base}\n  - {variant: gcn, variant: gru}\n"
         "grid:\n  seed: [0]\n", ("arms[1].variant given twice (twice on line 6)",)),
    Case("twice", "a distribution twice", OPTUNA + "search:\n  lr: {uniform: [0.1, 0.2], uniform: [0.3, 0.4]}\n",
         ("search.lr.uniform given twice (twice on line 5)",)),
    Case("twice", "a paper profile's key twice", PAPER.replace("{extra}", "\n          epochs: 4"),
         ("profiles.small.parts.table3.fixed.epochs given twice (lines 14 and 15)",)),
    # a key that does nothing in a grid sweep
    Case("idle", "sampler seed in a grid", GRID + "seed: 3\ngrid:\n  variant: [base, gcn]\n",
         ("seed: the Optuna sampler's seed", "no effect in a grid sweep")),
    Case("idle", "grace_period in a grid", GRID + "grace_period: 2\ngrid:\n  variant: [base, gcn]\n",
         ("grace_period: ASHA's", "no effect in a grid sweep")),
    Case("idle", "reduction_factor in a grid", GRID + "reduction_factor: 3\ngrid:\n  variant: [base, gcn]\n",
         ("reduction_factor: ASHA's",)),
    Case("idle", "asha_by in a grid", GRID + "asha_by: solver\ngrid:\n  variant: [base, gcn]\n",
         ("asha_by: ASHA's",)),
    Case("idle", "points in a grid", GRID + "points:\n  - {variant: base}\ngrid:\n  variant: [base, gcn]\n",
         ("points: the trials Optuna's sampler runs first",)),
    # a value its field cannot take
    Case("type", "a string learning rate in a grid", GRID + "grid:\n  lr: [0.001, abc]\n",
         ("grid.lr: lr must be a number, got 'abc'",)),
    Case("type", "lists as seeds", GRID + "grid:\n  seed: [[0, 1], [2, 3]]\n",
         ("grid.seed: seed must be a whole number, got [0, 1]",)),
    Case("type", "30,000 seeds in one list", GRID + f"grid:\n  seed: {BIG_SEEDS}\n",
         ("grid.seed: seed must be a whole number, got [0, 1, 2", "characters)")),
    Case("type", "fractional epochs", GRID.replace("epochs: 2", "epochs: 2.5") + "grid:\n  seed: [0]\n",
         ("fixed: epochs must be a whole number, got 2.5",)),
    Case("type", "true as epochs", GRID.replace("epochs: 2", "epochs: true") + "grid:\n  seed: [0]\n",
         ("fixed: epochs must be a whole number, got true",)),
    Case("type", "a quoted fold", GRID.replace("data.fold: 0", "data.fold: '0'") + "grid:\n  seed: [0]\n",
         ("fixed: data.fold must be a whole number, or null, got '0'",)),
    Case("type", "NaN learning rate", GRID.replace("epochs: 2", "epochs: 2, lr: .nan") + "grid:\n  seed: [0]\n",
         ("fixed: lr must be a finite number, got nan",)),
    Case("type", "a word in an arm", GRID + "arms:\n  - {variant: base}\n  - {variant: gcn, psedual.alpha: high}\n"
         "grid:\n  seed: [0]\n", ("arms[1]: psedual.alpha must be a number, got 'high'",)),
    Case("type", "a list among solvers", GRID + "grid:\n  solver: [gts, [dns]]\n",
         ("grid.solver: solver must be one of gts, dns", "got ['dns']")),
    Case("type", "bounds YAML reads as strings", OPTUNA + "search:\n  lr: {loguniform: [1e-4, 1e-2]}\n",
         ("search.lr: lr must be a number, got '1e-4' (YAML reads 1e-4 as a string: write 1.0e-4)",)),
    Case("type", "a fractional draw of epochs", OPTUNA.replace(", epochs: 2", "") +
         "search:\n  epochs: {uniform: [2, 5]}\n",
         ("search.epochs: uniform draws fractional numbers, and epochs must be a whole number: use int",)),
    Case("type", "a word as a point's value", OPTUNA + "search:\n  lr: {uniform: [0.001, 0.01]}\npoints:\n"
         "  - {lr: fast}\n", ("points[0]: lr must be a number, got 'fast'",)),
    Case("type", "num_samples in words", OPTUNA + "num_samples: eight\nsearch:\n  lr: {uniform: [0.001, 0.01]}\n",
         ("num_samples must be a whole number, got 'eight'",)),
    Case("type", "a quoted resource", GRID + "resources: {max_concurrent: '2'}\ngrid:\n  seed: [0]\n",
         ("resources.max_concurrent must be a whole number, got '2'",)),
    Case("type", "a number for the resources", GRID + "resources: 2\ngrid:\n  seed: [0]\n",
         ("resources must be a mapping of num_workers, use_gpu", "got 2")),
    Case("type", "seeds_for in words", GRID + "seeds_for: {delta: one}\ngrid:\n  variant: [base, gcn]\n",
         ("seeds_for.delta must be a number, got 'one'",)),
    # bytes that are not UTF-8
    Case("bytes", "a Latin-1 comment", (GRID + "# caf\xe9\ngrid:\n  seed: [0]\n").encode("latin-1"),
         (":4: not UTF-8 text (byte 0xe9 at offset",)),
    Case("bytes", "UTF-16", (GRID + "grid:\n  seed: [0]\n").encode("utf-16"),
         (":1: not UTF-8 text (byte 0xff at offset 0)",)),
    Case("bytes", "a Latin-1 paper file", PAPER.replace("{extra}", "  # caf\xe9").encode("latin-1"),
         (":14: not UTF-8 text (byte 0xe9",)),
    # what must still load
    Case("valid", "a merged mapping's key overridden", PAPER.replace("{extra}", "")),
    Case("valid", "an int for a float, null for a fold",
         "name: s\nmode: grid\nfixed: {data.dataset: svamp, data.fold: null, lr: 1, lr_gamma: 1, epochs: 2}\n"
         "grid:\n  seed: [0, 1]\n"),
    Case("valid", "exponents YAML reads as numbers", OPTUNA + "search:\n  lr: {loguniform: [1.0e-4, 1.0e-2]}\n"),
    Case("valid", "empty sections", OPTUNA + "grid: {}\npoints: []\nseed: 1\nsearch:\n  lr: {uniform: [0.1, 0.2]}\n"),
]


def write(case: Case, folder: Path) -> Path:
    """The case's file under `folder`, named after it."""
    path = folder / (case.name.replace(" ", "_").replace("'", "").replace(",", "") + ".yaml")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(case.text if isinstance(case.text, bytes) else case.text.encode("utf-8"))
    return path


def outcome(path: Path, storage: Path) -> tuple[int | str, str]:
    """(exit status, or `traceback`; stderr's last line, or the exception) of `psedual tune --space
    PATH --plan true` (a paper file: `--profile small`): the file is loaded and planned, no trial
    starts."""
    from psedual.cli import main

    profile = ["--profile", "small"] if b"\nparts:" in path.read_bytes() else []
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["tune", "--space", str(path), "--plan", "true", "--storage", str(storage), *profile])
        except Exception as exc:  # noqa: BLE001 - the outcome to report is the crash itself
            return "traceback", f"{type(exc).__name__}: {exc}"
    lines = err.getvalue().strip().splitlines()
    return code, lines[-1] if lines else out.getvalue().strip().splitlines()[0]


def main(out: str) -> None:
    for case in CASES:
        path = write(case, Path(out) / case.kind)
        code, line = outcome(path, Path(out) / "storage")
        print(f"{case.kind}: {case.name}\n  -> exit {code}: {line[:300]}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
