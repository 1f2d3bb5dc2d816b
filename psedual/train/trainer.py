"""Train one solver on one dataset view, validate every epoch, test the best checkpoint once.

Reads top to bottom: data and vocabulary, model and optimiser, (resume), epochs,
test, outputs. Determinism: the model is initialised from `seed`; epoch e
shuffles with its own generator seeded by (seed, e); dropout uses torch's global
RNG, whose state (and CUDA's) is saved in `last.pt` every epoch. So a run killed after any epoch
and resumed from `last.pt` ends with the same numbers as one never stopped:
bit for bit with `threads=1`; with more threads, torch's CPU kernels may sum in
another order, which moves losses in the 8th digit (two uninterrupted runs differ
the same way).
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pyarrow.parquet as pq
import torch
from torch import nn

from psedual.data.cache import load_dataset
from psedual.data.splits import Splits, split_dataset
from psedual.data.stats import summary, summary_text
from psedual.metrics import (expression_accuracy, expression_correct, expression_correct_values, infilling_accuracy,
                             perfect_match_ratio, value_accuracy, value_correct)
from psedual.reexamine import Reexaminer, schedules
from psedual.reexamine.schedules import Clock
from psedual.solvers import get_solver
from psedual.solvers.batch import collate
from psedual.solvers.plm import PLMEncoder
from psedual.solvers.config import inference
from psedual.solvers.vocab import Vocab
from psedual.train import checkpoint, tables
from psedual.train.best import best_epoch
from psedual.train.config import TrainConfig
from psedual.train.device import resolve
from psedual.train.distributed import all_sum, decode_split, share, shard
from psedual.train.step import StepLoss, train_step


CPU = torch.device("cpu")


@dataclass(frozen=True)
class RunResult:
    best_epoch: int
    valid_value_acc: float
    valid_expr_acc: float
    test_value_acc: float
    test_expr_acc: float
    """Strict: token for token over slot names."""
    test_expr_acc_values: float
    """The published definition: equal after each slot is replaced by its number's value."""
    test_infill_acc: float | None
    """PseDual runs: share of all test slots filled right from the gold expression."""
    test_perfect_match: float | None
    """PseDual runs: share of test problems with every slot filled right."""
    test_infill_acc_used: float | None
    """PseDual runs: the same over the slots the gold expression uses (the paper's Table 4)."""
    test_perfect_match_used: float | None
    """PseDual runs: share of test problems whose used slots are all filled right."""
    final_epsilon: float | None
    """PseDual runs: ε at the run's last step."""
    final_tau: float | None
    """PseDual runs that sample expressions: τ at the run's last step."""
    train_seconds: float
    out_dir: str


def evaluate(model, problems, vocab: Vocab, beam_size: int, batch_size: int, device: torch.device = CPU,
             rank: int = 0, world_size: int = 1) -> list[tuple[str, ...]]:
    """Predicted expressions of `problems`, decoded in chunks of `batch_size` (split over the
    ranks, and gathered, when `world_size` > 1: the same predictions as one process)."""
    def decode(chunk):
        return model.decode(collate(chunk, vocab, with_targets=False).to(device), beam_size=beam_size)

    return decode_split(decode, problems, batch_size, rank, world_size)


def _accuracies(predicted, problems) -> tuple[float, float]:
    return value_accuracy(predicted, problems).value, expression_accuracy(predicted, problems).value


def infill(model, reexaminer: Reexaminer, problems, vocab: Vocab, batch_size: int,
           device: torch.device = CPU) -> tuple[list, list]:
    """Predicted and right slot fillings of each problem, from its gold expression; None for
    a problem whose gold expression uses a constant outside the vocabulary (not scored)."""
    tokens = set(vocab.output_tokens)
    writable = [p for p in problems if set(p.prefix) <= tokens]
    fill: dict[str, tuple[list[int], list[int]]] = {}
    with inference(model), inference(reexaminer):
        for i in range(0, len(writable), batch_size):
            chunk = writable[i:i + batch_size]
            fill.update(zip((p.id for p in chunk),
                            zip(*reexaminer.infill_gold(model, collate(chunk, vocab).to(device)))))
    return [fill[p.id][0] if p.id in fill else None for p in problems], \
        [fill[p.id][1] if p.id in fill else None for p in problems]


def train(config: TrainConfig, out_dir: str | Path, resume: bool = False, stop_after_epoch: int | None = None,
          progress: bool | None = None, on_epoch: EpochHook | None = None, test: bool = True,
          rank: int = 0, world_size: int = 1, device: torch.device | str | None = None) -> RunResult | None:
    """Run (or resume) training, then (with `test`) evaluate `best.pt` on test once.

    `stop_after_epoch` ends the call early, as a kill would, and returns None; the run
    can then be resumed. `on_epoch(row, out_dir)` is called after each epoch's
    checkpoint is written (Ray reports through it). With `world_size` > 1 (inside an
    initialised torch.distributed group, as Ray Train sets up) each rank trains on its
    share of every batch under DistributedDataParallel (see `distributed`); only rank 0
    writes files. `device` (a Ray Train worker passes the one Ray assigned) overrides
    `config.device`.
    """
    threads = torch.get_num_threads()
    if config.threads:
        torch.set_num_threads(config.threads)
    where = torch.device(device) if device is not None else resolve(config.device)
    try:
        done = _train(config, Path(out_dir), resume, stop_after_epoch,
                      sys.stderr.isatty() if progress is None else progress, on_epoch, rank, world_size, where)
        return test_run(out_dir, where) if done and test and rank == 0 else None
    finally:
        torch.set_num_threads(threads)


EpochHook = Callable[[dict, Path], None]


def _view(config: TrainConfig) -> tuple[Splits, dict]:
    """The run's splits, and what was read and left out (`data.stats.summary`) for its outputs."""
    dataset = load_dataset(config.data.dataset, config.data.data_root, config.data.user_path)
    splits = split_dataset(dataset, config.data)
    return splits, summary(dataset, splits)


def _sets(config: TrainConfig, splits: Splits):
    if not splits.train:
        raise ValueError(f"{config.data.dataset}: no training problems")
    train_set, valid_set, test_set = list(splits.train), list(splits.valid), list(splits.test)
    return train_set, valid_set, test_set, Vocab.build(train_set, splits.constants, config.min_word_count)


def _data(config: TrainConfig):
    return _sets(config, _view(config)[0])


def _data_columns(info: dict) -> dict:
    """The data summary as scalar metrics columns (the full summary is the run's data.json)."""
    return {"data_root": info["user_path"] or info["data_root"], "data_key": info["cache_key"],
            "data_kept": info["kept"], "data_skipped": info["skipped"], "data_left_out": info["left_out"],
            "data_skipped_by_reason": json.dumps(info["skipped_by_reason"]),
            "data_left_out_by_reason": json.dumps(info["left_out_by_reason"])}


def _parameter_groups(step_fn: nn.Module, config: TrainConfig) -> list[dict]:
    """One group, or two where a pretrained encoder is trained: its parameters at plm_lr and
    plm_weight_decay, the rest at lr and weight_decay (the optimiser's defaults)."""
    pretrained = {id(p) for m in step_fn.modules() if isinstance(m, PLMEncoder) for p in m.plm.parameters()}
    rest = [p for p in step_fn.parameters() if id(p) not in pretrained]
    if not pretrained:
        return [{"params": rest}]
    return [{"params": rest},
            {"params": [p for p in step_fn.parameters() if id(p) in pretrained], "lr": config.plm_lr,
             "weight_decay": config.plm_weight_decay}]


def _lr_schedule(opt, config: TrainConfig, per_epoch: int):
    if config.lr_schedule == "step":  # stepped once per epoch
        return torch.optim.lr_scheduler.StepLR(opt, step_size=config.lr_step, gamma=config.lr_gamma)
    from transformers import get_linear_schedule_with_warmup  # stepped once per optimiser step

    total = per_epoch * config.epochs
    return get_linear_schedule_with_warmup(opt, round(config.warmup_fraction * total), total)


def steps_per_epoch(config: TrainConfig, n_train: int) -> int:
    """Optimiser steps per epoch: the schedules' horizon is this times the epochs."""
    return math.ceil(n_train / config.batch_size)


def _train(config: TrainConfig, out: Path, resume: bool, stop_after_epoch: int | None, show_bar: bool,
           on_epoch: EpochHook | None, rank: int, world_size: int, device: torch.device) -> bool:
    """Train to the last epoch (True) or to `stop_after_epoch` (False)."""
    main = rank == 0
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)  # NCCL's object gathers run on the current device
    # data and vocabulary (from the training split only)
    splits, data_info = _view(config)
    train_set, valid_set, _, vocab = _sets(config, splits)
    if main:  # what was read, skipped and left out, before any time is spent on it
        print(summary_text(data_info), file=sys.stderr, flush=True)

    # model and optimiser
    torch.manual_seed(config.seed)
    model_cls, _ = get_solver(config.solver)
    model = model_cls(vocab, config.model)
    if config.model.plm == "minilm" and any(isinstance(m, PLMEncoder) for m in model.modules()) \
            and any(p.language != "en" for p in train_set[:100]):
        raise ValueError(f"{config.data.dataset} is not English, and the default pretrained encoder (minilm) is: give "
                         "--plm a local Chinese BERT/RoBERTa directory (nothing is downloaded)")
    reexaminer = Reexaminer(vocab, config.model, config.psedual) if config.psedual is not None else None
    # on the device before the optimiser is built, which keeps references to the parameters
    step_fn = StepLoss(model, reexaminer, config.psedual.alpha if config.psedual is not None else 0.0).to(device)
    opt = torch.optim.Adam(_parameter_groups(step_fn, config), config.lr, weight_decay=config.weight_decay)
    per_epoch = steps_per_epoch(config, len(train_set))  # len(batches) of every epoch: the schedules' clock
    sched = _lr_schedule(opt, config, per_epoch)
    history: list[dict] = []
    best = {"epoch": -1, "valid_value_acc": -1.0, "valid_expr_acc": -1.0}
    start_epoch, train_seconds = 0, 0.0

    last, best_path = out / "last.pt", out / "best.pt"
    if resume and last.exists():
        state = checkpoint.load(last)
        # compared as configs, so a checkpoint saved before a field existed (at its default) still fits;
        # the device is not the run's identity (a run may resume on another machine)
        if replace(TrainConfig.from_dict(state["config"]), device=config.device) != config:
            raise checkpoint.CheckpointError(f"{last}: saved for a different config; start a new output folder")
        checkpoint.check(state, last, config.solver, vocab)
        model.load_state_dict(state["model"])  # into these modules: the optimiser holds their parameters
        if reexaminer is not None:
            reexaminer.load_state_dict(state["reexaminer"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["rng"])
        if device.type == "cuda" and state.get("cuda_rng") is not None:  # dropout on CUDA draws from it
            torch.cuda.set_rng_state(state["cuda_rng"], device)
        history, best, start_epoch, train_seconds = state["history"], state["best"], state["epoch"], state["seconds"]
    elif last.exists() and main:
        raise checkpoint.CheckpointError(f"{last} exists: pass resume=True (--resume) or use a new output folder")
    if main:
        if config.psedual is not None:  # say the regime out loud: where ε and τ go, over how many steps
            print(f"PseDual: {schedules.regime(config.psedual, per_epoch, config.epochs)}", file=sys.stderr, flush=True)
            warning = schedules.warning(config.psedual, per_epoch, config.epochs)
            if warning is not None:
                warnings.warn(warning, UserWarning, stacklevel=3)
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(json.dumps(asdict(config), indent=2))
        (out / "data.json").write_text(json.dumps(data_info, indent=2))
        if history:  # a resumed folder may predate per-epoch tables; test_run reads this one
            tables.write(history, out / "epochs.parquet", tables.EPOCHS_SCHEMA)
    forward = step_fn
    if world_size > 1:
        from torch.nn.parallel import DistributedDataParallel

        # some parameters sit out a step (the sampled expression is skipped while ε = 1)
        forward = DistributedDataParallel(step_fn, device_ids=[device] if device.type == "cuda" else None,
                                          find_unused_parameters=True)

    # epochs
    for epoch in range(start_epoch, config.epochs):
        began = time.perf_counter()
        step_fn.train()
        order = torch.randperm(len(train_set), generator=torch.Generator().manual_seed(config.seed * 1_000_003 + epoch))
        batches = [[train_set[i] for i in order[j:j + config.batch_size].tolist()]
                   for j in range(0, len(train_set), config.batch_size)]
        bar = _bar(len(batches), f"epoch {epoch + 1}/{config.epochs}") if show_bar and main else None
        total = total_infill = 0.0
        schedule: dict[str, float | None] = {"epsilon": None, "tau": None}
        for i, problems in enumerate(batches):
            # the step count is a function of (epoch, i), so a resumed run continues ε and τ
            clock = Clock(epoch * per_epoch + i, per_epoch, config.epochs)
            mine, weight = shard(problems, rank, world_size)
            shares = None
            if world_size > 1:  # this rank's share of the global batch's mean losses (see `distributed`)
                shares = (share(model.loss_terms(mine), model.loss_terms(problems), weight, world_size),
                          share(reexaminer.loss_terms(mine), reexaminer.loss_terms(problems), weight, world_size)
                          if reexaminer is not None else 0.0)
            stepped = train_step(step_fn, opt, collate(mine, vocab).to(device), clock,
                                 clip_grad_norm=config.clip_grad_norm, device=device, precision=config.precision,
                                 forward=forward, shares=shares)
            loss, infill_loss, reexamined = stepped.loss, stepped.infill_loss, stepped.reexamined
            if config.lr_schedule == "linear":
                sched.step()
            # the global batch's mean loss is the ranks' average (their sum at the epoch's end)
            total += loss.item() / world_size * len(problems)
            if reexamined is not None:
                total_infill += infill_loss.item() / world_size * len(problems)
                schedule = {"epsilon": reexamined.epsilon, "tau": reexamined.tau}
            if bar is not None:
                bar.set_postfix(loss=f"{loss.item():.3f}")
                bar.update()
        if world_size > 1:
            total, total_infill = all_sum([total, total_infill], device)
        lr = opt.param_groups[0]["lr"]
        if config.lr_schedule == "step":
            sched.step()
        valid_value, valid_expr = _accuracies(evaluate(model, valid_set, vocab, config.beam_size, config.batch_size,
                                                       device, rank, world_size), valid_set)
        seconds = time.perf_counter() - began
        train_seconds += seconds
        history.append({"epoch": epoch + 1, "train_loss": total / len(train_set), "lr": lr,
                        "valid_value_acc": valid_value, "valid_expr_acc": valid_expr, "seconds": seconds,
                        "infill_loss": total_infill / len(train_set) if reexaminer is not None else None,
                        **schedule})
        weights = {**checkpoint.model_state(model), "config": asdict(config),
                   "reexaminer": reexaminer.state_dict() if reexaminer is not None else None}
        kept = best_epoch(history)
        if kept["epoch"] == epoch + 1:
            best = {k: kept[k] for k in ("epoch", "valid_value_acc", "valid_expr_acc")}
            if main:
                checkpoint.save(best_path, weights)
        if bar is not None:
            bar.close()
        if main:
            print(f"epoch {epoch + 1}/{config.epochs} loss {total / len(train_set):.4f} valid value "
                  f"{100 * valid_value:.1f}% expr {100 * valid_expr:.1f}% ({seconds:.1f} s)", file=sys.stderr, flush=True)
            checkpoint.save(last, {**weights, "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                                   "rng": torch.get_rng_state(), "history": history, "best": best,
                                   "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
                                   "epoch": epoch + 1, "seconds": train_seconds})
            tables.write(history, out / "epochs.parquet", tables.EPOCHS_SCHEMA)
        if on_epoch is not None:
            on_epoch({**history[-1], "best_epoch": best["epoch"], "best_valid_value_acc": best["valid_value_acc"]}, out)
        if stop_after_epoch is not None and epoch + 1 >= stop_after_epoch and epoch + 1 < config.epochs:
            return False
    return True


def test_run(out_dir: str | Path, device: torch.device | str | None = None) -> RunResult:
    """Evaluate a run folder's `best.pt` on test, once; write `predictions.parquet` and
    `metrics.parquet` there. Needs `config.json`, `best.pt` and `epochs.parquet`. Runs on
    `device`, else the config's (a checkpoint trained anywhere loads onto either)."""
    out = Path(out_dir)
    config = TrainConfig.from_dict(json.loads((out / "config.json").read_text()))
    device = torch.device(device) if device is not None else resolve(config.device)
    splits, data_info = _view(config)
    train_set, valid_set, test_set, vocab = _sets(config, splits)
    history = pq.read_table(out / "epochs.parquet").to_pylist()
    best = best_epoch(history)  # the epoch training kept in best.pt
    train_seconds = sum(row["seconds"] for row in history)
    best_path = out / "best.pt"
    best_state = checkpoint.load(best_path)
    model = checkpoint.build_model(best_state, best_path, config.solver, vocab).to(device)
    predicted = evaluate(model, test_set, vocab, config.beam_size, config.batch_size, device)
    fill: tuple[list, list] = ([None] * len(test_set), [None] * len(test_set))
    infilled: dict[str, float | None] = dict.fromkeys(("all", "pmr", "used", "pmr_used"))
    final_epsilon = final_tau = None
    if config.psedual is not None:
        reexaminer = Reexaminer(vocab, config.model, config.psedual)
        reexaminer.load_state_dict(best_state["reexaminer"])
        fill = infill(model, reexaminer.to(device), test_set, vocab, config.batch_size, device)
        scored = [(p, g) for p, g in zip(*fill) if g is not None]
        if scored:
            pred, gold = zip(*scored)
            infilled = {"all": infilling_accuracy(pred, gold).value, "pmr": perfect_match_ratio(pred, gold).value,
                        "used": infilling_accuracy(pred, gold, used_only=True).value,
                        "pmr_used": perfect_match_ratio(pred, gold, used_only=True).value}
        final_epsilon, final_tau = schedules.final(config.psedual, steps_per_epoch(config, len(train_set)),
                                                   config.epochs)
    rows = [{"id": p.id, "predicted": list(pred), "gold": list(p.prefix), "value_correct": value_correct(pred, p),
             "expression_correct": expression_correct(pred, p),
             "expression_correct_values": expression_correct_values(pred, p), "infill_predicted": fp,
             "infill_gold": fg}
            for pred, p, fp, fg in zip(predicted, test_set, *fill)]
    n_test = max(len(rows), 1)
    result = RunResult(best["epoch"], best["valid_value_acc"], best["valid_expr_acc"],
                       sum(r["value_correct"] for r in rows) / n_test,
                       sum(r["expression_correct"] for r in rows) / n_test,
                       sum(r["expression_correct_values"] for r in rows) / n_test,
                       infilled["all"], infilled["pmr"], infilled["used"], infilled["pmr_used"],
                       final_epsilon, final_tau, train_seconds, str(out))
    tables.write(rows, out / "predictions.parquet", tables.PREDICTIONS_SCHEMA)
    tables.write([{**config.flat(), **asdict(result), "n_train": len(train_set),
                   "n_valid": len(valid_set), "n_test": len(test_set),
                   "n_test_infilled": sum(g is not None for g in fill[1]) if config.psedual is not None else None,
                   **_data_columns(data_info)}],
                 out / "metrics.parquet")
    return result


def _bar(total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, leave=False, dynamic_ncols=True)
