"""Crafted result tables for each way a claim read `better` (or crashed) on runs that were not what
they said they were (issue 39), and the `psedual analyze` command each is read with.

`test_analysis_runs.py` asserts the refusal, flag or line each gives. Run as a script, it writes
every case under a folder and prints each command's outcome (its verdicts, or its error line and
exit status) under whatever `analysis` is first on the path, so old and new code can be compared:

    python tests/crafted_runs.py OUT [NAME]                         # this checkout's analysis/
    PYTHONPATH=OLD_CHECKOUT python tests/crafted_runs.py OUT [NAME]   # another checkout's analysis/

(NAME: only the cases whose name holds it. The old code's 100,000-example case asks for ~23 GiB:
run it only where that is free.)
"""

from __future__ import annotations

import contextlib
import io
import re
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from test_analysis_checks import _effect, _ids, _preds, _write

N = 400
RESAMPLES = "1000"


def seeds(n_seeds: int, **kw) -> list[tuple[dict, list[dict]]]:
    """Base and gcn runs of `n_seeds` seeds with a real effect (gcn fixes far more than it breaks)."""
    runs = []
    for s in range(n_seeds):
        a, b = _effect(seed=s)
        runs += [({"trial": f"b{s}", "variant": "base", "seed": s, **kw}, _preds(_ids(N), a)),
                 ({"trial": f"g{s}", "variant": "gcn", "seed": s, **kw}, _preds(_ids(N), b))]
    return runs


def selected_on_test(root: Path) -> None:
    """Six tuned trials per slot, no effect; gcn's runs rows hold their test accuracy as
    valid_value_acc, their epochs tables 0.5 at the kept epoch: the runs column picks on test."""
    rng = np.random.default_rng(5)
    runs, curves = [], {}
    for s in range(8):
        for arm in ("b", "g"):
            for k in range(6):
                c = rng.random(N) < 0.6
                trial = f"{arm}{s}-{k}"
                valid = float(c.mean()) if arm == "g" else float(rng.random())
                runs.append(({"trial": trial, "variant": "base" if arm == "b" else "gcn", "seed": s,
                              "lr": 0.001 * (k + 1), "valid_value_acc": valid}, _preds(_ids(N), c)))
                if arm == "g":
                    curves[trial] = [0.5, 0.4]
    _write(root, runs, epochs=curves)


def seed_copies(root: Path) -> None:
    """3 real seeds, copied under seeds 3-5 (both arms)."""
    runs = seeds(3)
    _write(root, runs + [({**r, "trial": f"{r['trial'][0]}{r['seed'] + 3}", "seed": r["seed"] + 3}, p)
                         for r, p in runs])


def config_missing(root: Path) -> None:
    """The base runs' files lack epochs, hidden size, beam and code version."""
    _write(root, [(r | ({"epochs": None, "model.hidden_size": None, "beam_size": None, "code_version": None}
                        if r["variant"] == "base" else {"epochs": 80, "model.hidden_size": 512, "beam_size": 5,
                                                         "code_version": "v2"}), p) for r, p in seeds(6)])


def failing(failure: dict, who: tuple[str, ...]) -> Callable[[Path], None]:
    """Six seeds whose runs of the arms `who` failed as `failure` says."""
    def build(root: Path) -> None:
        _write(root, [(r | (failure if r["variant"] in who else {}), p) for r, p in seeds(6)])
    return build


def expression_marked(root: Path) -> None:
    """Equal value accuracy; gcn's rows mark wrong expressions (predicted is not gold) as right."""
    runs = []
    for s in range(6):
        a = np.random.default_rng(s).random(N) < 0.6
        lie = a | (np.arange(N) % 12 == 1)
        marked = [{**p, "expression_correct": bool(x), "expression_correct_values": bool(x)}
                  for p, x in zip(_preds(_ids(N), a), lie)]
        runs += [({"trial": f"b{s}", "variant": "base", "seed": s}, _preds(_ids(N), a)),
                 ({"trial": f"g{s}", "variant": "gcn", "seed": s}, marked)]
    _write(root, runs)


def empty_llm_model(root: Path) -> None:
    """One seed of trained runs without a validation split, posing as zero-shot LLM runs."""
    a, b = _effect()
    _write(root, [({"trial": "b0", "variant": "base", "llm.model": "", "n_valid": 0}, _preds(_ids(N), a)),
                  ({"trial": "g0", "variant": "gcn", "llm.model": "", "n_valid": 0}, _preds(_ids(N), b))])


def two_solvers(root: Path) -> None:
    """Each arm and seed ran two solvers; validation picks gts for base and g2t (better) for gcn."""
    runs = []
    for s in range(6):
        a, b = _effect(seed=s)
        for arm in ("base", "gcn"):
            for solver, c, valid in (("gts", a, 0.6 if arm == "base" else 0.5),
                                     ("g2t", b, 0.5 if arm == "base" else 0.6)):
                runs.append(({"trial": f"{arm}-{solver}-{s}", "variant": arm, "seed": s, "solver": solver,
                              "valid_value_acc": valid}, _preds(_ids(N), c)))
    _write(root, runs)


def with_null(column: str) -> Callable[[Path], None]:
    """Two seeds, one gcn run's `column` null."""
    def build(root: Path) -> None:
        _write(root, [(r | ({column: None} if r["trial"] == "g1" else {}), p) for r, p in seeds(2)])
    return build


def two_seeds(root: Path) -> None:
    _write(root, seeds(2))


def partition_name(root: Path) -> None:
    _write(root, seeds(1), experiment="solver=gts")
    _write(root, seeds(1), experiment="plain")


def two_lrs(root: Path) -> None:
    a, b = _effect()
    _write(root, [({"trial": "b0", "variant": "gcn"}, _preds(_ids(N), a)),
                  ({"trial": "g0", "variant": "gcn", "lr": 0.002}, _preds(_ids(N), b))])


def large(root: Path) -> None:
    """1 seed × 100,000 test examples (zero-shot rows: one run is all there is)."""
    rng = np.random.default_rng(0)
    a = rng.random(100_000) < 0.6
    b = a ^ (rng.random(100_000) < 0.05)
    ids = _ids(100_000)
    _write(root, [({"trial": "b0", "variant": "base", "llm.model": "m"}, _preds(ids, a)),
                  ({"trial": "g0", "variant": "gcn", "llm.model": "m"}, _preds(ids, b))])


def infilling_base(root: Path) -> None:
    """A base run whose row holds infilling results, beside a gcn run."""
    fill = [[0, 1]] * N
    _write(root, [({"trial": "b0", "variant": "base", "test_infill_acc": 0.9, "n_test_infilled": N},
                   _preds(_ids(N), np.ones(N, bool), infill=fill)),
                  ({"trial": "g0", "variant": "gcn", "test_infill_acc": 1.0, "n_test_infilled": N},
                   _preds(_ids(N), np.arange(N) % 7 > 0, infill=fill))])


def cut_short(table: str, keep: int) -> Callable[[Path], None]:
    """Three seeds; one file of `table` cut to its first `keep` bytes (negative: all but the last
    -keep), as a copy or a disk that filled up leaves it: its footer, which names its columns, gone."""
    def build(root: Path) -> None:
        _write(root, seeds(3))
        path = root / table / "experiment=x" / "g1.parquet"
        data = path.read_bytes()
        path.write_bytes(data[:keep])
    return build


def link_loop(where: str) -> Callable[[Path], None]:
    """Three seeds, and a symbolic link to itself at `where` under the root (`""`: the root itself,
    in place of the tables)."""
    def build(root: Path) -> None:
        if where:
            _write(root, seeds(3))
        loop = root / where if where else root
        loop.parent.mkdir(parents=True, exist_ok=True)
        loop.symlink_to(loop)
    return build


def retyped(column: str, kind: str) -> Callable[[Path], None]:
    """Three seeds; one runs file rewritten by another writer with `column` as `kind` (`string`):
    the other files hold it as the runs record's type."""
    def build(root: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        _write(root, seeds(3))
        path = root / "runs" / "experiment=x" / "g1.parquet"
        table = pq.read_table(path)
        i = table.schema.get_field_index(column)
        values = pa.array([None if v is None else str(v) for v in table.column(column).to_pylist()]).cast(kind)
        pq.write_table(table.set_column(i, pa.field(column, values.type), values), path)
    return build


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Path], None]
    words: tuple[str, ...]
    """`psedual analyze` words after the command's `--root ROOT` (`{root}` in a word: the case's root)."""
    look: str = ""
    """A regular expression: the lines of the output (and of a report it writes) that match it are
    shown beside the verdicts."""


COMPARE = ("compare", "--treatment+", "gcn")
CASES = [
    Case("1 selection on test", selected_on_test, COMPARE),
    Case("2 the same seed twice", seed_copies, ("table1",)),
    Case("3 config absent from one arm", config_missing, ("table1",)),
    Case("4 status failed", failing({"status": "failed"}, ("base", "gcn")), ("table1",)),
    Case("4 error column filled", failing({"error": "RuntimeError: CUDA out of memory"}, ("gcn",)), ("table1",)),
    Case("5 expression unchecked", expression_marked, (*COMPARE, "--metric+", "value", "--metric+", "expression")),
    Case("6 llm.model ''", empty_llm_model, ("table1",)),
    Case("7 pooling two solvers", two_solvers, (*COMPARE, "--by+", "data.dataset")),
    Case("8 null seed", with_null("seed"), ("table1",)),
    Case("8 null fold", with_null("data.fold"), ("table1",)),
    Case("8 experiment solver=gts", partition_name, ("table1", "--experiment", "solver=gts")),
    Case("8 --by seed", two_seeds, (*COMPARE, "--by+", "seed")),
    Case("8 --by variant", two_seeds, (*COMPARE, "--by+", "variant")),
    Case("8 numeric --arm lr", two_lrs, ("compare", "--arm", "lr", "--base", "0.001", "--treatment+", "0.002")),
    Case("8 1 seed x 100,000 examples", large, ("table1", "--resamples", "10000")),
    Case("9 infill on base runs", infilling_base, ("infill",)),
    # issue 52, item 13: a results root whose files or folders cannot be read
    Case("13 a runs file cut in half", cut_short("runs", 2000), ("table1",)),
    Case("13 an epochs file without its last 8 bytes", cut_short("epochs", -8), (*COMPARE, "--metric+", "value")),
    Case("13 an empty predictions file", cut_short("predictions", 0), ("table1",)),
    Case("13 the root a symbolic link loop", link_loop(""), ("table1",)),
    Case("13 an experiment folder a symbolic link loop", link_loop("runs/experiment=y"), ("table1",)),
    Case("13 seed int64 in one file, string in another", retyped("seed", "string"), ("table1",)),
    Case("13 lr double in one file, string in another", retyped("lr", "string"), ("table1",)),
]


def _p(value: float | None) -> str:
    return "none" if value is None else f"{value:.2g}"


def outcome(case: Case, root: Path) -> str:
    """What `psedual analyze` says of the case's tables: its verdicts, or its exit and error line."""
    import polars as pl

    from analysis.cli import main

    words = ["analyze", case.words[0], "--root", str(root), *(w.format(root=root) for w in case.words[1:])]
    if "--resamples" not in words:
        words += ["--resamples", RESAMPLES]
    out, err = io.StringIO(), io.StringIO()
    began = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(words)
        except Exception as exc:  # noqa: BLE001 - the outcome to report is the crash itself
            code, said = "traceback", f"{type(exc).__name__}: {exc}"
            return f"exit {code}: {said[:300]}"
    seconds = time.perf_counter() - began
    if code:
        return f"exit {code}: {err.getvalue().strip()[:300]}"
    claims = sorted((root / "claims").glob("*.parquet")) if (root / "claims").exists() else []
    verdicts = [f"{r['treatment_arm']}/{r['metric']} Δ {r['delta']:+.2f} p {_p(r['p'])} (adjusted "
                f"{_p(r['p_adjusted'])} of {r['n_family']}): {r['verdict']}"
                for c in claims for r in pl.read_parquet(c).iter_rows(named=True)]
    shown = "; ".join(verdicts) or out.getvalue().strip().splitlines()[2][:200]
    if case.look:
        text = out.getvalue() + "".join(p.read_text(encoding="utf-8") for p in root.glob("*/report.md"))
        shown += "".join(f"\n     | {line[:240]}" for line in text.splitlines() if re.search(case.look, line))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # the process's peak so far
    return f"exit 0 ({seconds:.1f} s, max RSS {rss:.2f} GiB): {shown}"


def every_case() -> list[Case]:
    """These cases and round five's (`crafted_claims`, issue 52)."""
    from crafted_claims import CASES as ROUND_FIVE

    return [*CASES, *ROUND_FIVE]


def main(out: str, only: str = "") -> None:
    for i, case in enumerate(every_case()):
        if only not in case.name:
            continue
        root = Path(out) / f"case{i:02d}"
        case.build(root)
        words = (case.words[0], "--root", str(root), *(w.format(root=root) for w in case.words[1:]))
        print(f"{case.name}\n  psedual analyze {' '.join(words)}\n"
              f"  -> {outcome(case, root)}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
