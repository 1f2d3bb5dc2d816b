"""Training and evaluation speed of the solvers on the published GTS sizes.

For each solver and dataset: training problems/s over N batches after warm-up
(batch 64, embedding 128, hidden 512, 2 threads unless --threads), split into
the encoder's forward+backward and the decoder plus loss (the rest of a step),
peak RSS, and evaluation problems/s at beam 5.

Usage: python bench/train_speed.py [--batches N] [--solvers gts] [--datasets math23k mawps]
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from psedual.data.cache import load_dataset
from psedual.data.config import DataConfig
from psedual.data.splits import split_dataset
from psedual.solvers import SOLVERS
from psedual.solvers.batch import collate
from psedual.solvers.vocab import Vocab


def bench(solver: str, dataset: str, batches: int, warmup: int, batch_size: int, eval_problems: int) -> str:
    splits = split_dataset(load_dataset(dataset), DataConfig(dataset, fold=0 if dataset == "mawps" else None))
    vocab = Vocab.build(splits.train, splits.constants, min_word_count=5 if dataset == "math23k" else 1)
    torch.manual_seed(0)
    model_cls, config_cls = SOLVERS[solver]
    model = model_cls(vocab, config_cls())  # the published sizes: embedding 128, hidden 512
    opt = torch.optim.Adam(model.parameters(), 1e-3, weight_decay=1e-5)
    train = list(splits.train)
    chunks = [collate(train[i:i + batch_size], vocab) for i in range(0, (warmup + batches) * batch_size, batch_size)]
    step_time = enc_time = 0.0
    for i, b in enumerate(chunks):
        start = time.perf_counter()
        loss = model.loss(b)
        opt.zero_grad()
        loss.backward()
        opt.step()
        mid = time.perf_counter()
        _encoder_only(model, b).backward()  # the encoder alone, forward and backward, for the split
        opt.zero_grad()
        end = time.perf_counter()
        if i >= warmup:
            step_time += mid - start
            enc_time += end - mid
    n = batches * batch_size
    evaluation = [collate(list(splits.test[i:i + batch_size]), vocab)
                  for i in range(0, min(eval_problems, len(splits.test)), batch_size)]
    start = time.perf_counter()
    for b in evaluation:
        model.decode(b, beam_size=5)
    eval_rate = sum(len(b.problems) for b in evaluation) / (time.perf_counter() - start)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return (f"{solver:<10} {dataset:<8} train {n / step_time:7.1f} problems/s ({step_time / batches:5.2f} s/batch; "
            f"encoder fwd+bwd {enc_time / batches:5.2f} s, decoder+loss {(step_time - enc_time) / batches:5.2f} s)  "
            f"eval beam 5 {eval_rate:6.1f} problems/s  peak RSS {rss:,.0f} MiB")


def _encoder_only(model, batch) -> torch.Tensor:
    """A scalar that depends on every encoder output, so backward runs the whole encoder."""
    enc = model.encode(batch)
    parts = [enc.outputs, *([enc.problem, enc.candidates] if hasattr(enc, "problem") else [enc.state[0]])]
    return sum(p.sum() for p in parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=10, help="timed batches after warm-up")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--eval-problems", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=list(SOLVERS))
    parser.add_argument("--datasets", nargs="+", default=["math23k", "mawps"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, batch {args.batch_size}, {args.batches} timed batches")
    for solver in args.solvers:
        for dataset in args.datasets:
            print(bench(solver, dataset, args.batches, args.warmup, args.batch_size, args.eval_problems), flush=True)


if __name__ == "__main__":
    main()
