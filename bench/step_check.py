"""One training step of every solver × variant at each precision, on a device: what a GPU
session checks first (bench/gpu_session.py), since CUDA's rules are not CPU's (docs/gpu.md).

Per step: the loss (and the infilling loss), whether every gradient is finite, the step's
seconds (the first step: it includes CUDA's warm-up) and, on CUDA, the peak memory. ε is
midway, so the PseDual variants encode both the gold and a sampled expression. A step that
raises is printed as FAILED with its error, and the script exits 1 after the last one.

Sizes: the published GTS sizes (embedding 128, hidden 512, 2 layers) on CUDA, and the
pretrained-encoder solvers on a randomly initialised encoder of BERT-base's size (12 layers ×
768, as roberta-base and chinese-roberta-wwm-ext) built from `--plm`'s config and tokenizer;
`--toy` takes the test suite's small sizes (a CPU run in seconds).

Usage: python bench/step_check.py [--device cpu|cuda] [--precisions fp32 bf16] [--dataset mawps]
           [--batch-size 64] [--plm minilm|DIR] [--toy]
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

import torch

from psedual.data.cache import load_dataset
from psedual.data.config import DataConfig
from psedual.data.splits import split_dataset
from psedual.reexamine import PseDualConfig, Reexaminer
from psedual.reexamine.config import BASE, VARIANTS
from psedual.reexamine.schedules import Clock
from psedual.solvers import SOLVERS, get_solver
from psedual.solvers.batch import collate
from psedual.solvers.config import SolverConfig
from psedual.solvers.vocab import Vocab
from psedual.train.device import resolve
from psedual.train.trainer import StepLoss, train_step
from psedual.tune.calibrate import STAND_IN_HIDDEN, STAND_IN_LAYERS

MIDWAY = Clock(5, 10, 1)
"""ε between 0 and 1: the gold and a sampled expression are both encoded."""


def sizes(toy: bool, plm: str) -> SolverConfig:
    if toy:
        return SolverConfig(embedding_size=32, hidden_size=64, layers=1, dropout=0.1, plm=plm, plm_layers=2,
                            plm_hidden=32)
    return SolverConfig(plm=plm, plm_layers=STAND_IN_LAYERS, plm_hidden=STAND_IN_HIDDEN)  # the calibration's stand-in


def step(name: str, variant: str, precision: str, config: SolverConfig, problems, vocab, device) -> str:
    torch.manual_seed(0)
    model = get_solver(name)(vocab, config)
    reexaminer = None if variant == BASE else Reexaminer(vocab, config, PseDualConfig(expression_encoder=variant))
    loss = StepLoss(model, reexaminer, 1.0).to(device)
    opt = torch.optim.Adam(loss.parameters(), 1e-3)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        torch.cuda.synchronize(device)
    began = time.perf_counter()
    out = train_step(loss, opt, collate(problems, vocab).to(device), MIDWAY, device=device, precision=precision)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - began
    finite = all(p.grad is None or bool(torch.isfinite(p.grad).all()) for p in loss.parameters())
    infill = getattr(out, "infill_loss", None)
    memory = (f"  peak {torch.cuda.max_memory_allocated(device) / 2**20:,.0f} MiB" if device.type == "cuda" else "")
    return (f"{name:<13}{variant:<5}{precision:<5} loss {float(out.loss.detach()):8.4f}"
            + (f"  infill {float(infill.detach()):7.4f}" if infill is not None else "")
            + f"  grads {'finite' if finite else 'NOT FINITE'}  {seconds:6.3f} s{memory}")


def parser() -> argparse.ArgumentParser:
    """The command line (bench/gpu_session.py's test checks its device calls against it)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda (default auto)")
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=("fp32", "bf16"))
    parser.add_argument("--dataset", default="mawps")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--plm", default="minilm", help="the encoder folder (config and tokenizer) of the "
                        "pretrained-encoder solvers, resized and randomly initialised (default minilm)")
    parser.add_argument("--toy", action="store_true", help="the test suite's small sizes")
    return parser


def main() -> None:
    args = parser().parse_args()
    device = resolve(args.device)
    splits = split_dataset(load_dataset(args.dataset), DataConfig.first_fold(args.dataset))
    vocab = Vocab.build(splits.train, splits.constants)
    problems = list(splits.train)[: args.batch_size]
    config = sizes(args.toy, args.plm)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"torch {torch.__version__}, {name}, {args.dataset}, batch {len(problems)}, "
          f"{'toy' if args.toy else 'published'} sizes; one step each, ε midway", flush=True)
    failed = 0
    for solver in sorted(SOLVERS):
        for variant in VARIANTS:
            for precision in args.precisions:
                try:
                    print(step(solver, variant, precision, config, problems, vocab, device), flush=True)
                except Exception as err:  # every combination is tried: one failure must not hide the rest
                    failed += 1
                    print(f"{solver:<13}{variant:<5}{precision:<5} FAILED {type(err).__name__}: {err}", flush=True)
                    traceback.print_exc(limit=-3, file=sys.stdout)
    print(f"{failed} of {len(SOLVERS) * len(VARIANTS) * len(args.precisions)} steps failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
