"""Crafted result tables for each way a claim still read `better`, or crashed, in round five of the
hostile inputs (issue 52, items 1-9): confounds crossed over the seeds, arms validated on other
splits, labels their configs contradict, a family that lost a member, stars and paper figures beside
results the verdicts or the protocol do not support, `--where` leaving seeds out in silence, float
noise read as a spread, and names or tables the writers and the curve could not take.

Each builder makes one class of case; `CASES` names the command each is read with (`crafted_runs.Case`,
`{root}` in a word is the case's root). `python tests/crafted_runs.py OUT 52.` prints their outcomes
under whichever `analysis/` is first on the path; `test_hostile_pairs.py`, `test_hostile_verdicts.py` and
`test_hostile_reports.py` assert them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from crafted_runs import COMPARE, Case, N, seeds
from test_analysis_checks import _effect, _ids, _preds, _write

SEEDS = 6
"""Seeds of each crafted claim: enough for a `better` (analysis.stats.stats.MIN_SEEDS)."""


def crossed(values: dict[str, tuple[list, list]], experiments: tuple[list[str], list[str]] | None = None
            ) -> Callable[[Path], None]:
    """Six seeds with a real effect; each column of `values` set per seed, (base's, gcn's): the same
    set of values in both arms, crossed over the seeds (base stopped where gcn completed). With
    `experiments`, each seed's runs are written to the experiment named per arm and seed."""
    def build(root: Path) -> None:
        for r, p in seeds(SEEDS):
            arm = 0 if r["variant"] == "base" else 1
            row = r | {c: v[arm][r["seed"]] for c, v in values.items()}
            _write(root, [(row, p)], experiment=experiments[arm][r["seed"]] if experiments else "x")
    return build


def llm_crossed(root: Path) -> None:
    """Zero-shot LLM runs over six seeds, the reexamining arm better; the sampling temperature is
    0.0 on four base seeds and 0.7 on two, and the other way round for the reexamining arm."""
    temps = ([0.0] * 4 + [0.7] * 2, [0.7] * 4 + [0.0] * 2)
    runs = []
    for s in range(SEEDS):
        a, b = _effect(seed=s)
        for arm, c, variant in ((0, a, "llm"), (1, b, "llm+reexamine")):
            runs.append(({"trial": f"{variant[:3]}{arm}-{s}", "variant": variant, "seed": s, "llm.model": "m",
                          "llm.temperature": temps[arm][s], "llm.reexamine": bool(arm), "n_valid": None,
                          "best_epoch": None, "valid_value_acc": None, "n_train": None}, _preds(_ids(N), c)))
    _write(root, runs, epochs={trial: [] for trial in (r["trial"] for r, _ in runs)})  # a zero-shot run trains no epoch


def validated(gcn: Callable[[dict, list[dict]], dict]) -> Callable[[Path], None]:
    """Six seeds with a real effect; each gcn run's row changed by `gcn(row, predictions)`."""
    def build(root: Path) -> None:
        runs = [(r | (gcn(r, p) if r["variant"] == "gcn" else {}), p) for r, p in seeds(SEEDS)]
        # the epochs table holds what the runs row says at its best epoch (run_checks checks it)
        _write(root, runs, epochs={r["trial"]: [r["valid_value_acc"], 0.1] for r, _ in runs
                                   if "valid_value_acc" in r})
    return build


def _on_test(row: dict, preds: list[dict]) -> dict:
    """A run whose validation split was its test split: its validation scores are its test scores."""
    acc = float(np.mean([p["value_correct"] for p in preds]))
    expr = float(np.mean([p["expression_correct"] for p in preds]))
    return {"valid_value_acc": acc, "valid_expr_acc": expr, "test_expr_acc": expr}


def labelled(arm: str, encoder: str | None) -> Callable[[Path], None]:
    """Six seeds with a real effect; the runs of `arm` carry `psedual.expression_encoder` =
    `encoder` whatever their label says."""
    def build(root: Path) -> None:
        config = {"psedual.expression_encoder": encoder}
        _write(root, [(r | (config if r["variant"] == arm else {}), p) for r, p in seeds(SEEDS)])
    return build


def _shifted(base: np.ndarray, k: int, rng) -> np.ndarray:
    """`base` with k wrong answers made right (k < 0: -k right answers made wrong)."""
    out = base.copy()
    pool = np.flatnonzero(~base if k > 0 else base)
    out[rng.choice(pool, abs(k), replace=False)] = k > 0
    return out


def family_with_untestable(root: Path) -> None:
    """One family of two claims over six seeds: gcn's per-seed Δ of 4, 8, 2, 6, -1, 10 examples (t-test
    p ≈ 0.03), and gru's 4 more examples right on every seed (the same Δ, +1.00, from the same base
    score on every seed: no spread, untestable)."""
    rng = np.random.default_rng(11)
    runs = []
    for s, k in enumerate((4, 8, 2, 6, -1, 10)):
        base = rng.permutation(np.arange(N) < 240)  # 60.00 on every seed, other problems right
        for variant, c in (("base", base), ("gcn", _shifted(base, k, rng)), ("gru", _shifted(base, 4, rng))):
            runs.append(({"trial": f"{variant}{s}", "variant": variant, "seed": s}, _preds(_ids(N), c)))
    _write(root, runs)


def noisy_constant(root: Path) -> None:
    """Six seeds, each base score another; gcn gets 4 more examples right on every seed: Δ +1.00 on
    each, apart from float noise (100·k/400 rounds differently per k)."""
    rng = np.random.default_rng(12)
    runs = []
    for s in range(SEEDS):
        base = rng.random(N) < 0.55 + 0.02 * s
        runs += [({"trial": f"b{s}", "variant": "base", "seed": s}, _preds(_ids(N), base)),
                 ({"trial": f"g{s}", "variant": "gcn", "seed": s}, _preds(_ids(N), _shifted(base, 4, rng)))]
    _write(root, runs)


def few_examples_by_size(root: Path) -> None:
    """One seed per training size (350, 700), 20 test examples each: gcn right on 10 the base got
    wrong (exact McNemar p 0.002), a verdict refused for too few examples."""
    runs = []
    for size in (350, 700):
        base = np.arange(20) < 8
        runs += [({"trial": f"b{size}", "variant": "base", "data.train_size": size, "n_train": size},
                  _preds(_ids(20), base)),
                 ({"trial": f"g{size}", "variant": "gcn", "data.train_size": size, "n_train": size},
                  _preds(_ids(20), np.arange(20) < 18))]
    _write(root, runs)


def smoke_paper_part(root: Path) -> None:
    """A paper report's Table 1 part at smoke scale: GTS on MAWPS fold 0, 5 epochs, trained on 350
    problems, tested on 150 of the fold's 397, six seeds with a real effect."""
    runs = []
    for s in range(SEEDS):
        a, b = _effect(n=150, seed=s)
        smoke = {"seed": s, "epochs": 5, "epochs_done": 5, "data.train_size": 350, "n_train": 350}
        runs += [({"trial": f"b{s}", "variant": "base", **smoke}, _preds(_ids(150), a)),
                 ({"trial": f"g{s}", "variant": "gcn", **smoke}, _preds(_ids(150), b))]
    _write(root, runs, experiment="smoke.table1")


def where_drops_seeds(root: Path) -> None:
    """Eight seeds: the first six with a real effect, the last two the other way round."""
    runs = seeds(SEEDS)
    for s in (6, 7):
        a, b = _effect(seed=s)
        runs += [({"trial": f"b{s}", "variant": "base", "seed": s}, _preds(_ids(N), b)),
                 ({"trial": f"g{s}", "variant": "gcn", "seed": s}, _preds(_ids(N), a))]
    _write(root, runs)


LONG_NAME = "実験" * 38
"""An experiment name of 228 bytes of UTF-8: its folder's name fits in 255 bytes, the claims file's
temporary name does not."""


def long_name(root: Path) -> None:
    _write(root, seeds(3), experiment=LONG_NAME)


def before_identity(root: Path) -> None:
    """Training-size runs (350, 700; three seeds) from tables written before the data identity was
    recorded: no n_train, no hashes."""
    runs = []
    for size in (350, 700):
        for s in range(3):
            a, b = _effect(seed=s + size)
            runs += [({"trial": f"b{size}-{s}", "variant": "base", "seed": s, "data.train_size": size,
                       "n_train": None}, _preds(_ids(N), a)),
                     ({"trial": f"g{size}-{s}", "variant": "gcn", "seed": s, "data.train_size": size,
                       "n_train": None}, _preds(_ids(N), b))]
    _write(root, runs, identity=False)


STOPPED = (["stopped"] * 4 + ["completed"] * 2, ["completed"] * 4 + ["stopped"] * 2)
CASES = [
    Case("52.1 status and epochs done crossed over seeds",
         crossed({"status": STOPPED, "epochs_done": ([3] * 4 + [10] * 2, [10] * 4 + [3] * 2)}), COMPARE),
    Case("52.1 experiment crossed over seeds", crossed({}, (["x"] * 3 + ["y"] * 3, ["y"] * 3 + ["x"] * 3)), COMPARE),
    Case("52.1 LLM temperature crossed over seeds", llm_crossed,
         ("compare", "--base", "llm", "--treatment+", "llm+reexamine")),
    Case("52.2 validation sizes differ between arms", validated(lambda r, p: {"n_valid": 400}), COMPARE),
    Case("52.2 gcn validated on its test split", validated(_on_test), COMPARE),
    Case("52.3 gcn runs without a PseDual setting", labelled("gcn", None), COMPARE),
    Case("52.3 gcn runs whose config is gru's", labelled("gcn", "gru"), COMPARE),
    Case("52.3 base runs whose config is gcn's", labelled("base", "gcn"), COMPARE),
    Case("52.4 a family with an untestable member", family_with_untestable,
         ("compare", "--treatment+", "gcn", "--treatment+", "gru")),
    Case("52.5 a star on too few test examples", few_examples_by_size, ("curve", "--png", "{root}/size.png"),
         look=r"\*"),
    Case("52.6 smoke scale beside the paper", smoke_paper_part,
         ("report", "--experiment", "smoke", "--out", "{root}/report"), look=r"^\| mawps \| gts \| value \|"),
    Case("52.7 --where keeps six of eight seeds", where_drops_seeds,
         (*COMPARE, "--where+", "seed=0|1|2|3|4|5"), look="left out"),
    Case("52.8 Δ +1 on every seed but for float noise", noisy_constant, COMPARE),
    Case("52.9 an experiment name of 228 bytes", long_name, ("table1", "--experiment", LONG_NAME)),
    Case("52.9 curve on tables before the data identity", before_identity, ("curve", "--png", "{root}/size.png")),
]
