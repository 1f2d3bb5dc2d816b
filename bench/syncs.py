"""Host-device synchronisations per training step (base and each PseDual variant) and per decoded
problem: each one stalls the GPU's queue until everything before it has run.

On CPU (the default) syncs are counted by call, by the package's line that made them: reading a
device tensor on the host (`.item()`, `.tolist()`, `int()`, `float()`, `bool()`, `.cpu()`), ops
whose output size depends on values (`nonzero`, indexing or assigning by a boolean mask,
`repeat_interleave` by a tensor) and blocking host-to-device copies (`torch.tensor(..., device=)`,
`.to(device)` of a host tensor). Calls inside other libraries (torch-geometric's) are counted too,
by their own line (`torch_geometric/utils/loop.py:650`), as the driver counts them on CUDA;
torch.optim's are shown apart and left out of the count: Adam makes its step counts with
`device="cpu"`, host tensors on every machine, which a CPU cannot tell from device ones (CUDA
counts none). A CPU has no device, so "device tensor" is tracked: the model's parameters and
buffers, the batch after `Batch.to` (but `lengths`, which stays on the host), and whatever a torch
call makes from one of them or with an explicit `device=`; a tensor made on the host (collate's,
`Layout`'s before its copy) is left out until it is copied. On CUDA, `torch.cuda.set_sync_debug_mode`
counts what the driver really synchronises (the same step, warnings counted).

The tree solvers' sampled rollout runs masked on a GPU and by rows on a CPU
(`psedual.solvers.tree_rollout`); on a CPU this counts the GPU's (masked) rollout unless
`--rollout rows` asks for the CPU's own.

Usage: python bench/syncs.py [--device cpu|cuda] [--dataset math23k] [--solver gts]
           [--variants base gru gcn] [--batch-size 64] [--steps 3] [--beam 5] [--decode 64] [--sites 8]
           [--rollout masked|rows]
"""

from __future__ import annotations

import argparse
import collections
import sys
import warnings
import weakref
from dataclasses import fields
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

import psedual
from psedual.data.cache import load_dataset
from psedual.data.config import DataConfig
from psedual.data.splits import split_dataset
from psedual.reexamine import PseDualConfig, Reexaminer
from psedual.reexamine.config import VARIANTS
from psedual.reexamine.schedules import Clock
from psedual.solvers import SOLVERS
from psedual.solvers.batch import Batch, TreeIndex, collate
from psedual.solvers.config import SolverConfig
from psedual.solvers.rollout import MASKED_DEVICES
from psedual.solvers.vocab import Vocab
from psedual.train.device import resolve
from psedual.train.trainer import StepLoss, train_step

PACKAGE = str(Path(psedual.__file__).parent) + "/"
TORCH = str(Path(torch.__file__).parent) + "/"  # not torch_geometric's folder beside it
LIBRARIES = str(Path(torch.__file__).parent.parent) + "/"
"""Where torch and the libraries beside it (torch_geometric) are installed."""
OPTIM = str(Path(torch.__file__).parent / "optim") + "/"
READS = {"item", "tolist", "__int__", "__float__", "__bool__", "__index__", "cpu", "numpy", "nonzero",
         "masked_select", "unique", "repeat_interleave"}
"""Calls that read a device tensor's values (or its value-dependent size) on the host."""


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


class SyncCounter(TorchFunctionMode):
    """Counts the syncs a GPU would make, by the package's line that made them (see above)."""

    def __init__(self) -> None:
        super().__init__()
        self.on_device: dict[int, weakref.ref] = {}  # by id, checked alive (tensors' == is elementwise)
        self.sites: collections.Counter = collections.Counter()
        self.apart: collections.Counter = collections.Counter()  # torch.optim's, not counted (see above)

    def mark(self, *values) -> None:
        for t in _tensors(values):
            self.on_device[id(t)] = weakref.ref(t)

    def held(self, t: torch.Tensor) -> bool:
        ref = self.on_device.get(id(t))
        return ref is not None and ref() is t

    def _is_sync(self, name: str, args, kwargs) -> bool:
        inputs = list(_tensors((args, kwargs)))
        device_in = any(self.held(t) for t in inputs)
        if name in READS:
            if name == "repeat_interleave":  # by a tensor of repeats: the output size is on the device
                return len(inputs) > 1 and device_in
            return device_in
        if name in ("__getitem__", "__setitem__"):
            index = args[1] if len(args) > 1 else None
            masks = [t for t in _tensors(index) if t.dtype == torch.bool]
            return device_in and bool(masks)
        if name == "tensor":
            return kwargs.get("device") is not None
        if name == "to":  # a host tensor copied to the device, blocking
            host = inputs and not self.held(inputs[0])
            return bool(host) and _names_device(args[1:], kwargs) and not kwargs.get("non_blocking", False)
        return False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if self._is_sync(name, args, kwargs):
            counted, site = _site()
            (self.sites if counted else self.apart)[site] += 1
        out = func(*args, **kwargs)
        if name in ("cpu", "numpy", "tolist"):
            return out
        if name == "to" and not _names_device(args[1:], kwargs) and not self.held(args[0]):
            return out
        if any(self.held(t) for t in _tensors((args, kwargs))) or kwargs.get("device") is not None \
                or name == "to":
            # packing's (data, batch_sizes): the batch sizes are a host tensor on every device
            self.mark(out[0] if name == "_pack_padded_sequence" else out)
        return out

    def take(self) -> tuple[int, collections.Counter, collections.Counter]:
        """(syncs, the calls shown apart by library, syncs by site) since the last take: the
        package's and other libraries' syncs, torch.optim's apart (see above)."""
        sites, apart = self.sites, self.apart
        self.sites, self.apart = collections.Counter(), collections.Counter()
        return sum(sites.values()), apart, sites


def _names_device(args, kwargs) -> bool:
    values = list(args) + [kwargs.get("device")]
    return any(isinstance(v, (torch.device, str)) for v in values if v is not None)


def _site() -> tuple[bool, str]:
    """(True, `file:line` of the innermost frame outside torch: the package's, or another library's
    such as torch_geometric's), or (False, "torch.optim") where the optimiser made the call."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(OPTIM):  # the optimiser's own bookkeeping (its step counts live on the host)
            return False, "torch.optim"
        if name.startswith(TORCH) or name == __file__:
            frame = frame.f_back
            continue
        if name.startswith(PACKAGE):
            return True, f"{Path(name).relative_to(Path(PACKAGE).parent)}:{frame.f_lineno}"
        return True, f"{name.removeprefix(LIBRARIES)}:{frame.f_lineno}"
    return False, "?"


class CudaSyncs:
    """On CUDA: the syncs `torch.cuda.set_sync_debug_mode` warns of."""

    def __init__(self) -> None:
        self.caught: list = []

    def __enter__(self):
        self._catch = warnings.catch_warnings(record=True)
        self.caught = self._catch.__enter__()
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        return self

    def __exit__(self, *exc) -> None:
        torch.cuda.set_sync_debug_mode("default")
        self._catch.__exit__(*exc)

    def take(self) -> tuple[int, collections.Counter, collections.Counter]:
        syncs = [w for w in self.caught if "synchroniz" in str(w.message)]
        self.caught.clear()
        return len(syncs), collections.Counter(), collections.Counter(f"{w.filename}:{w.lineno}" for w in syncs)


def _on_device(counter, batch: Batch, device: torch.device) -> Batch:
    batch = batch.to(device)
    if isinstance(counter, SyncCounter):  # on CPU `to` is the batch itself: mark what a GPU would hold
        counter.mark(batch.words, batch.num_pos, batch.num_mask, batch.targets,
                     *([] if batch.tree is None else [getattr(batch.tree, f.name) for f in fields(TreeIndex)]))
    return batch


def _show(label: str, counts: list[tuple[int, collections.Counter, collections.Counter]], per: int,
          sites: int) -> None:
    totals = [c[0] / per for c in counts]
    apart = sum((c[1] for c in counts), collections.Counter())
    by_site = sum((c[2] for c in counts), collections.Counter())
    rng = f"{min(totals):.0f}–{max(totals):.0f}" if per == 1 else f"{sum(totals) / len(totals):.2f}"
    shown = ", ".join(f"{n / per / len(counts):.1f} in {lib}" for lib, n in apart.most_common())
    print(f"{label:<34} {rng:>9} syncs" + (f"  (apart, not counted: {shown})" if shown else ""))
    for site, n in by_site.most_common(sites):
        print(f"    {n / per / len(counts):8.2f}  {site}")


def parser() -> argparse.ArgumentParser:
    """The command line (bench/gpu_session.py's test checks its device calls against it)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu (syncs counted by call) or cuda (by the driver)")
    parser.add_argument("--dataset", default="math23k")
    parser.add_argument("--solver", default="gts", choices=list(SOLVERS))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3, help="training steps counted per variant")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--decode", type=int, default=64, help="validation problems decoded (one batch)")
    parser.add_argument("--sites", type=int, default=8, help="lines shown per count (most syncs first)")
    parser.add_argument("--rollout", default="masked", choices=("masked", "rows"),
                        help="on a CPU, the tree rollout counted: a GPU's (masked, the default) or a CPU's (rows)")
    return parser


def main() -> None:
    args = parser().parse_args()
    torch.set_num_threads(2)
    device = resolve(args.device)
    if device.type == "cpu" and args.rollout == "masked":
        MASKED_DEVICES.add("cpu")
    splits = split_dataset(load_dataset(args.dataset), DataConfig.first_fold(args.dataset))
    vocab = Vocab.build(splits.train, splits.constants, min_word_count=5 if args.dataset == "math23k" else 1)
    train = list(splits.train)
    batches = [train[i * args.batch_size:(i + 1) * args.batch_size] for i in range(args.steps)]
    print(f"torch {torch.__version__}, {device}, {args.dataset}, {args.solver}, batch {args.batch_size}, "
          f"{args.steps} steps, beam {args.beam}, {'masked' if device.type in MASKED_DEVICES else 'rows'} rollout; "
          "syncs per step (min–max) and per decoded problem")
    for variant in args.variants:
        torch.manual_seed(0)
        model = SOLVERS[args.solver](vocab, SolverConfig())
        reexaminer = None if variant == "base" else Reexaminer(vocab, SolverConfig(),
                                                               PseDualConfig(expression_encoder=variant))
        step = StepLoss(model, reexaminer, 1.0).to(device)
        opt = torch.optim.Adam(step.parameters(), 1e-3)
        counter = SyncCounter() if device.type == "cpu" else CudaSyncs()
        counts = []
        with counter:
            if isinstance(counter, SyncCounter):
                counter.mark(*step.parameters(), *step.buffers())
            for problems in batches:
                batch = _on_device(counter, collate(problems, vocab), device)
                counter.take()  # the step alone: the copy of the batch is `Batch.to`'s
                train_step(step, opt, batch, Clock(1, 2, 1), device=device)  # ε halfway: an expression sampled
                counts.append(counter.take())
        _show(f"train step, {args.solver} {variant}", counts, 1, args.sites)
        if variant != "base":
            continue
        valid = list(splits.valid)[:args.decode]
        counter = SyncCounter() if device.type == "cpu" else CudaSyncs()
        with counter:
            if isinstance(counter, SyncCounter):
                counter.mark(*model.parameters(), *model.buffers())
            batch = _on_device(counter, collate(valid, vocab, with_targets=False), device)
            counter.take()
            model.decode(batch, beam_size=args.beam)
            decoded = counter.take()
        _show(f"decoding, beam {args.beam}, per problem", [decoded], len(valid), args.sites)


if __name__ == "__main__":
    main()
