"""Accuracy at bf16 beside fp32, the same short run at each (issue 59: a recipe trains at the
precision that measured faster *with the same accuracy*; bench/gpu_session.py's `precision` stage).

Per solver: its published recipe on MAWPS fold 0 (optimiser, schedule, sizes, batch, decoding;
`psedual.train.recipe_table`), shortened to `--epochs` (and `--train-size` problems), seed 0, trained
by psedual's own trainer once in fp32 and once under bf16 autocast, the same data in the same order;
each run's best-validation checkpoint is tested once on the fold's test problems. Printed per run:
seconds an epoch, the kept epoch, its validation and test value accuracy, and the dtypes that the
training steps' Linear layers returned and held (bf16 outputs show that autocast ran; the weights
stay fp32; an fp32 run has no bf16 at all); then bf16 − fp32 on the same test problems, paired
(analysis/stats: Δ in points, its paired bootstrap 95% CI and the exact McNemar p). The verdict
"same accuracy" means no difference at p < 0.05, said only where fp32 learned at least
`--min-learned` (two runs that learned nothing agree without saying anything about bf16).

The pretrained-encoder solvers (RE-Deduction, BERT-Tree) train a stand-in encoder (random weights,
`--plm-layers` × `--plm-hidden`, `--plm`'s config and tokenizer: a device carries no pretrained
weights) at `--plm-lr` for every parameter (a random encoder is expected to learn little in a few
epochs at the recipe's 2e-5; docs/gpu.md says how 2e-4 was chosen): this measures the same code's
numerics under bf16, not the recipe's pretrained accuracy.

`--concurrent` (the default on a cuda device) trains the fp32 and the bf16 run at the same time, each
in its own process (this script with `--one`), on the one device: a run of this size leaves a GPU
mostly idle (the H200 ran 8 small trials at once at 8.22x one alone), so the stage takes about one
run's time, not two. The processes share nothing but the device, and each starts from the same seed,
so each run's figures and predictions are the sequential run's (tests/test_gpu_session.py shows
it on a CPU); only the seconds an epoch are then each run's beside the other, not a speed figure.

`--cuda-rules` (a CPU only) trains the bf16 run under CUDA's autocast rules, emulated
(tests/cuda_autocast.py): CPU autocast forgives mixed-dtype writes that CUDA's raises on
(docs/gpu.md), so the toy run here fails where a GPU would, before a GPU minute is spent.

Exits 1 if a run's dtypes are not what its precision says, a loss is not finite, or (emulated) an
RNN would run in fp16.

Usage: python bench/precision_accuracy.py [--device cuda|cpu] [--solvers re_deduction gts]
           [--epochs 10] [--train-size N] [--beam-size N] [--plm minilm|DIR] [--plm-layers 12] [--plm-hidden 768]
           [--plm-lr 2e-4] [--toy] [--cuda-rules] [--concurrent | --no-concurrent]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # analysis/ (a sibling of the package, not installed)

from analysis.stats.equivalence import MAX_N, equivalence, to_decide  # noqa: E402
from analysis.stats.power import example_sd  # noqa: E402
from analysis.stats.stats import paired  # noqa: E402
from psedual.train.config import TrainConfig  # noqa: E402
from psedual.train.recipe_table import RECIPES  # noqa: E402
from psedual.train.test import evaluate_run  # noqa: E402
from psedual.train.trainer import train  # noqa: E402
from psedual.tune.calibrate import PLM_SOLVERS, STAND_IN_HIDDEN, STAND_IN_LAYERS  # noqa: E402

PRECISIONS = ("fp32", "bf16")
MIN_LEARNED = 0.25
"""fp32's test value accuracy below which the comparison says nothing: RE-Deduction's recipe with the
12 x 768 stand-in scored 17.6% on MAWPS fold 0's test after one step (the commonest expressions), so
runs below this have learned little beyond that, and two such runs agree without saying anything of bf16."""
SAME = 0.05
"""Two-sided exact McNemar p at or above which the two precisions' accuracies are called the same."""
MARGIN = 3.0
"""Points: the TOST beside it asks whether |Δ| < MARGIN is shown (one seed's test problems rarely show less)."""
TOY = {"model.embedding_size": 32, "model.hidden_size": 64, "model.layers": 1, "model.plm_layers": 2,
       "model.plm_hidden": 64}
"""`--toy`: the test suite's small sizes (a CPU run in seconds)."""


def to_settle(p) -> str:
    """What an undecided comparison (`paired`'s result `p`) lacks: the paired test problems at which the
    quicker of the difference test and the TOST would reach 80% power, were Δ and the per-problem spread
    the ones observed (`analysis.stats.equivalence.to_decide`, the problem as the unit: one seed)."""
    decision = to_decide(p.delta, example_sd(p.only_a, p.only_b, p.n), MARGIN, SAME)
    if decision.n is None:
        return f"at this Δ and spread no count of test problems up to {MAX_N:,} would decide it"
    test = "the difference test" if decision.by == "difference" else f"the TOST at ±{MARGIN:g}"
    said = f"at this Δ and spread {decision.n:,} paired test problems would decide it by {test} at 80% power"
    if decision.n <= p.n:  # power enough here, and still undecided: the chance a test at 80% power leaves
        return f"{said}, no more than the {p.n} here: another seed would tell"
    return f"{said}, {decision.n / p.n:.1f}x the {p.n} here: more folds or seeds"


class DtypeCount:
    """The dtypes every Linear layer returned and held during training steps (a global forward hook)."""

    def __init__(self) -> None:
        self.outputs: Counter[str] = Counter()
        self.weights: Counter[str] = Counter()

    def __call__(self, module: nn.Module, inputs, output) -> None:
        if module.training and isinstance(module, nn.Linear) and isinstance(output, torch.Tensor):
            self.outputs[str(output.dtype).removeprefix("torch.")] += 1
            self.weights[str(module.weight.dtype).removeprefix("torch.")] += 1

    def wrong(self, precision: str) -> str | None:
        """Why the counts contradict `precision`, or None: bf16 must show bf16 outputs, fp32 none;
        the weights are fp32 at either (autocast casts copies)."""
        if not self.outputs:
            return "no Linear layer ran in training"
        if set(self.weights) != {"float32"}:
            return f"weights {dict(self.weights)}, not float32"
        if precision == "bf16" and "bfloat16" not in self.outputs:
            return f"a bf16 run whose Linear outputs are {dict(self.outputs)}: autocast did not run"
        if precision == "fp32" and set(self.outputs) != {"float32"}:
            return f"an fp32 run whose Linear outputs are {dict(self.outputs)}"
        return None

    def __str__(self) -> str:
        return ", ".join(f"{k} {v:,}" for k, v in sorted(self.outputs.items()))


def config(solver: str, precision: str, args) -> TrainConfig:
    """The solver's recipe on MAWPS fold 0, shortened, at `precision`."""
    flat = {**RECIPES[solver].flat("mawps"), "data.dataset": "mawps", "data.fold": 0, "epochs": args.epochs,
            "seed": 0, "device": args.device, "precision": precision, "threads": args.threads}
    if args.train_size:
        flat["data.train_size"] = args.train_size
    if args.beam_size:
        flat["beam_size"] = args.beam_size
    if solver in PLM_SOLVERS:
        flat |= {"model.plm": args.plm, "model.plm_layers": args.plm_layers, "model.plm_hidden": args.plm_hidden,
                 "lr": args.plm_lr, "plm_lr": args.plm_lr}
    if args.toy:
        flat |= TOY
    return TrainConfig.from_flat(flat)


def run(solver: str, precision: str, args, rules) -> dict:
    """Train and test one run; its figures, per-problem test correctness and predictions, epoch losses,
    dtype counts and (under `rules`) the calls that the emulated CUDA rules cast or ran in fp16."""
    counts = DtypeCount()
    casts, fp16 = (rules.casts, rules.fp16) if rules is not None else (0, 0)
    hook = nn.modules.module.register_module_forward_hook(counts)
    try:
        with tempfile.TemporaryDirectory() as folder:
            with rules if precision == "bf16" and rules is not None else nullcontext():
                train(config(solver, precision, args), folder, progress=False, test=False)
            tested = evaluate_run(folder)
    finally:
        hook.remove()
    epochs = tested.epochs
    return {"epoch_s": sum(e.seconds for e in epochs) / len(epochs),
            "epochs": len(epochs), "best": tested.result.best_epoch, "valid": tested.result.valid_value_acc,
            "test": tested.result.test_value_acc, "correct": [p.value_correct for p in tested.predictions],
            "finite": all(math.isfinite(e.train_loss) for e in epochs), "counts": counts,
            "losses": [e.train_loss for e in epochs], "predicted": [p.predicted for p in tested.predictions],
            "casts": rules.casts - casts if rules is not None else 0, "fp16": rules.fp16 - fp16 if rules is not None else 0}


def dump(r: dict) -> str:
    """`run`'s figures as JSON (a `--one` process hands them back so); floats round-trip exactly."""
    return json.dumps({**r, "counts": {"outputs": r["counts"].outputs, "weights": r["counts"].weights}})


def load(text: str) -> dict:
    """`dump`'s JSON back as `run`'s figures."""
    r = json.loads(text)
    counts = DtypeCount()
    counts.outputs.update(r["counts"]["outputs"])
    counts.weights.update(r["counts"]["weights"])
    return {**r, "counts": counts}


def at_once(args) -> bool:
    """Whether the two precisions' runs go at the same time: `--concurrent`, else on a cuda device only
    (a CPU run's processes would share its cores, and CI's toy run has 2)."""
    return args.device == "cuda" if args.concurrent is None else args.concurrent


def in_turn(solver: str, args, rules):
    """(precision, figures) for fp32 then bf16, trained one after the other in this process."""
    for precision in PRECISIONS:
        yield precision, run(solver, precision, args, rules)


def together(solver: str, argv: list[str]):
    """(precision, figures, or why there are none) for fp32 then bf16, trained at the same time: each a
    process of this script (`--one`, the command line `argv` passed on), its output printed when it ends."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        procs = {}
        try:
            for precision in PRECISIONS:
                with (folder / f"{precision}.log").open("w") as log:
                    procs[precision] = subprocess.Popen(
                        [sys.executable, str(Path(__file__).resolve()), *argv, "--solvers", solver, "--one", precision,
                         "--result", str(folder / f"{precision}.json")], stdout=log, stderr=subprocess.STDOUT)
            for precision, proc in procs.items():
                rc = proc.wait()
                print((folder / f"{precision}.log").read_text(), end="", flush=True)
                result = folder / f"{precision}.json"
                yield precision, (load(result.read_text()) if rc == 0 and result.is_file() else
                                  f"its process (--one {precision}) exited with {rc}, no figures")
        finally:  # stopped early (an error, Ctrl-C): no run outlives this one
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()


def parser() -> argparse.ArgumentParser:
    """The command line (bench/gpu_session.py's test checks its device calls against it)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--solvers", nargs="+", default=["re_deduction"], choices=sorted(RECIPES))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--train-size", type=int, default=None, help="default: the fold's whole training set")
    parser.add_argument("--beam-size", type=int, default=None, help="decoding's beam (default: the recipe's)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--plm", default="minilm", help="the stand-in encoder's config and tokenizer")
    parser.add_argument("--plm-layers", type=int, default=STAND_IN_LAYERS)
    parser.add_argument("--plm-hidden", type=int, default=STAND_IN_HIDDEN)
    # on a CPU a 12 x 128 stand-in reached 36% on test in 8 epochs at 3e-4 and 20% at 1e-4; 12 x 768 was too
    # slow to try there, and a wider model moves further per Adam step at one rate: 2e-4 between them
    parser.add_argument("--plm-lr", type=float, default=2e-4, help="the stand-in solvers' learning rate")
    parser.add_argument("--min-learned", type=float, default=MIN_LEARNED,
                        help=f"fp32's test value accuracy below which nothing is compared (default {MIN_LEARNED:g}; "
                        "the toy run compares at any: it proves the path)")
    parser.add_argument("--toy", action="store_true", help="the test suite's small sizes")
    parser.add_argument("--cuda-rules", action="store_true", help="(CPU) the bf16 run under CUDA's autocast rules")
    parser.add_argument("--concurrent", action=argparse.BooleanOptionalAction, default=None,
                        help="the fp32 and bf16 runs at the same time, each its own process (default: on a cuda "
                        "device, which one run leaves mostly idle; not on a cpu)")
    parser.add_argument("--one", choices=PRECISIONS,
                        help="(what --concurrent starts) only this precision's run of the one solver, its figures "
                        "written to --result as JSON")
    parser.add_argument("--result", help="with --one: the JSON file for its figures")
    return parser


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    if args.one and (args.result is None or len(args.solvers) != 1):
        sys.exit("--one trains one solver's run: give one --solvers and a --result file")
    rules = None
    if args.cuda_rules:
        if args.device != "cpu":
            sys.exit("--cuda-rules emulates CUDA's autocast on a CPU: on a GPU the rules are CUDA's own")
        sys.path.insert(0, str(ROOT / "tests"))
        from cuda_autocast import CudaAutocastRules

        rules = CudaAutocastRules()
    if args.one:
        Path(args.result).write_text(dump(run(args.solvers[0], args.one, args, rules)))
        return
    sizes = "toy sizes" if args.toy else "the recipe's sizes"
    stand_in = (TOY["model.plm_layers"], TOY["model.plm_hidden"]) if args.toy else (args.plm_layers, args.plm_hidden)
    print(f"accuracy at fp32 and bf16 (issue 59): each solver's recipe at {sizes} on MAWPS fold 0 "
          f"({args.train_size or 'all'} training problems), {args.epochs} epochs, seed 0, on {args.device}"
          + (f"; stand-in encoder {stand_in[0]} x {stand_in[1]} at lr {args.plm_lr:g}" if
             set(args.solvers) & set(PLM_SOLVERS) else ""))
    if at_once(args):
        print(f"fp32 and bf16 trained at the same time (--concurrent), each its own process on the one {args.device} "
              "device: each run's figures are its own (the same seed, nothing shared), its seconds an epoch timed "
              "beside the other run's (not a speed figure)")
    print(f"{'solver':<13} {'precision':<9} {'epochs':>6} {'s/epoch':>8} {'kept':>5} {'valid value':>12} "
          f"{'test value':>11}   Linear outputs in training steps")
    failed, done = [], []
    for solver in args.solvers:
        runs = {}
        for precision, r in together(solver, argv) if at_once(args) else in_turn(solver, args, rules):
            if isinstance(r, str):
                failed.append(f"{solver} {precision}: {r}")
                continue
            runs[precision] = r
            done.append(r)
            print(f"{solver:<13} {precision:<9} {r['epochs']:>6} {r['epoch_s']:>8.2f} {r['best']:>5} "
                  f"{100 * r['valid']:>11.1f}% {100 * r['test']:>10.1f}%   {r['counts']} (weights float32)",
                  flush=True)
            wrong = r["counts"].wrong(precision)
            if wrong or not r["finite"]:
                failed.append(f"{solver} {precision}: {wrong or 'a training loss is not finite'}")
        if len(runs) < len(PRECISIONS):
            continue
        fp32, bf16 = runs["fp32"], runs["bf16"]
        if fp32["test"] < args.min_learned:
            print(f"bf16 - fp32, {solver}: not compared: fp32 learned {100 * fp32['test']:.1f}% "
                  f"(< {100 * args.min_learned:g}%), too little to say anything of bf16")
            continue
        p = paired(fp32["correct"], bf16["correct"])
        alike = equivalence([100.0 * c for c in bf16["correct"]], [100.0 * c for c in fp32["correct"]], MARGIN)
        # no difference found is not the same accuracy: that needs equivalence shown within the margin
        if p.p_mcnemar < SAME:
            verdict = f"NOT the same accuracy: bf16 {'better' if p.delta > 0 else 'worse'} (McNemar p < {SAME:g})"
        elif p.only_a == p.only_b == 0:  # no spread: TOST has no variance to test, and needs none
            verdict = f"the same accuracy: every one of the {p.n} test problems answered alike"
        elif alike.p_tost is not None and alike.p_tost < SAME:
            verdict = f"the same accuracy: equivalent within ±{MARGIN:g} points (TOST p < {SAME:g})"
        else:
            verdict = f"undecided: no difference shown, nor equivalence within ±{MARGIN:g} points ({to_settle(p)})"
        ci = "" if p.ci_low is None else f", 95% CI [{p.ci_low:+.1f}, {p.ci_high:+.1f}]"
        tost = "no spread" if alike.p_tost is None else f"p {alike.p_tost:.3f}"
        print(f"bf16 - fp32, {solver}: {p.delta:+.1f} points on {p.n} test problems ({p.only_a} right in fp32 only, "
              f"{p.only_b} in bf16 only){ci}, exact McNemar p {p.p_mcnemar:.3f}; within ±{MARGIN:g} points (TOST) "
              f"{tost}: {verdict}; validation {100 * (bf16['valid'] - fp32['valid']):+.1f} points at the kept "
              f"epochs; an epoch {fp32['epoch_s'] / bf16['epoch_s']:.2f}x as fast in bf16")
    if rules is not None:
        casts, fp16 = sum(r["casts"] for r in done), sum(r["fp16"] for r in done)
        print(f"CUDA's autocast rules emulated in the bf16 runs: {casts:,} calls cast to bf16, {fp16} RNN calls in fp16")
        if fp16:
            failed.append(f"{fp16} RNN calls would run in fp16 on CUDA (cuDNN under autocast)")
    for why in failed:
        print(f"FAILED {why}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
