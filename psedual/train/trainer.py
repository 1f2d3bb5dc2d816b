"""Train one solver on one dataset view, validate every epoch, test the best checkpoint once.

`_train` is the recipe, each step a function below it: data and vocabulary, model and
optimiser (`setup.build`), resume (`setup.resume`), first outputs, then per epoch
`_train_epoch`, `_validate`, `_checkpoint`; `test_run` tests the kept epoch. Determinism: the model is initialised from `seed`; epoch e
shuffles with its own generator seeded by (seed, e); dropout uses torch's global
RNG, whose state (and CUDA's) is saved in `last.pt` every epoch. So a run killed after any epoch
and resumed from `last.pt` ends with the same numbers as one never stopped:
bit for bit with `threads=1`; with more threads, torch's CPU kernels may sum in
another order, which moves losses in the 8th digit (two uninterrupted runs differ
the same way).
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch
from torch import nn

from psedual.data.stats import summary_text
from psedual.metrics import (expression_accuracy, expression_correct, expression_correct_values, infilling_accuracy,
                             perfect_match_ratio, value_accuracy, value_correct)
from psedual.reexamine import Reexaminer, schedules
from psedual.reexamine.schedules import Clock
from psedual.solvers import get_solver, hub
from psedual.solvers.batch import collate
from psedual.solvers.config import inference
from psedual.solvers.tensors import padded_ids
from psedual.solvers.vocab import Vocab
from psedual.train import checkpoint, setup, tables
from psedual.train.records import EPOCHS_SCHEMA, METRICS_SCHEMA, PREDICTIONS_SCHEMA, read, values
from psedual.train.rows import ENV_PREFIX, Environment, Prediction, RunCost, RunInfo, RunResult
from psedual.train.best import best_epoch
from psedual.train.config import TrainConfig
from psedual.train.device import environment, resolve
from psedual.train.distributed import all_sum, decode_split, gather, share, shard
from psedual.train.step import CPU, train_step
from psedual.train.unscored import decode_each, report_unscored
from psedual.train.view import check_identity, data_record, identity, run_config, sets, view


def evaluate(model, problems, vocab: Vocab, beam_size: int, batch_size: int, device: torch.device = CPU,
             rank: int = 0, world_size: int = 1) -> list[tuple[str, ...]]:
    """Predicted expressions of `problems`, decoded in chunks of `batch_size` (split over the
    ranks, and gathered, when `world_size` > 1: the same predictions as one process). A
    problem the solver cannot represent is predicted empty (scored wrong), see `evaluate_scored`."""
    return [pred for pred, _ in evaluate_scored(model, problems, vocab, beam_size, batch_size, device, rank,
                                                world_size)]


def evaluate_scored(model, problems, vocab: Vocab, beam_size: int, batch_size: int, device: torch.device = CPU,
                    rank: int = 0, world_size: int = 1) -> list[tuple[tuple[str, ...], str | None]]:
    """`evaluate`'s predictions, each with None, or why the problem could not be decoded
    (`unscored.decode_each`): more numbers than the solver's slots, more subwords than its
    encoder's positions. Such a problem is predicted empty and so scored wrong."""
    def decode(chunk):
        return decode_each(lambda part: model.decode(collate(part, vocab, with_targets=False).to(device),
                                                     beam_size=beam_size), chunk)

    return decode_split(decode, problems, batch_size, rank, world_size)


def _accuracies(predicted, problems) -> tuple[float, float]:
    return value_accuracy(predicted, problems).value, expression_accuracy(predicted, problems).value


def infill(model, reexaminer: Reexaminer, problems, vocab: Vocab, batch_size: int,
           device: torch.device = CPU, undecoded: frozenset[str] = frozenset(),
           show: Callable[[object], tuple[str, ...]] | None = None) -> tuple[list, list]:
    """Predicted and right slot fillings of each problem, from its gold expression; None for
    a problem whose gold expression uses a constant outside the vocabulary, or that the
    solver cannot represent (its id in `undecoded`: decoding it raised): not scored.
    `show(problem)`: the expression the infiller reads in place of the gold (a probe, see
    `reexamine.probe`); the right fillings stay the gold's."""
    tokens = set(vocab.output_tokens)
    writable = [p for p in problems
                if set(p.prefix) <= tokens and p.id not in undecoded]
    fill: dict[str, tuple[list[int], list[int]]] = {}
    with inference(model), inference(reexaminer):
        for i in range(0, len(writable), batch_size):
            chunk = writable[i:i + batch_size]
            batch = collate(chunk, vocab).to(device)
            shown = None if show is None else padded_ids([vocab.output_ids(show(p), p.id) for p in chunk])
            fill.update(zip((p.id for p in chunk), zip(*reexaminer.infill_gold(model, batch, shown))))
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
ENV_FILE = "env.json"
"""A run folder's `Environment`, written where it trains and read by `test_run` into its metrics
row (the test may run in another process, on another node)."""


def trained_environment(out: Path) -> dict:
    """The `env.*` columns of a run folder (none for a folder trained before env.json was written)."""
    path = out / ENV_FILE
    return values(Environment(**json.loads(path.read_text())), ENV_PREFIX) if path.is_file() else {}


def _train(config: TrainConfig, out: Path, resume: bool, stop_after_epoch: int | None, show_bar: bool,
           on_epoch: EpochHook | None, rank: int, world_size: int, device: torch.device) -> bool:
    """Train to the last epoch (True) or to `stop_after_epoch` (False)."""
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)  # NCCL's object gathers run on the current device
    # data and vocabulary (from the training split only)
    splits, data_info = view(config)
    data_info = {**data_info, "identity": identity(splits)}  # data.json: what `psedual test` checks
    train_set, valid_set, _, vocab = sets(config, splits, data_info)
    if rank == 0:  # what was read, skipped and left out, before any time is spent on it
        print(summary_text(data_info), file=sys.stderr, flush=True)
    # model, optimiser and schedules; then, resuming, their state from last.pt
    run = setup.build(config, out, train_set, valid_set, vocab, device, rank, world_size)
    setup.resume(run, resume)
    if run.main:
        _start_outputs(run, data_info)
    run.forward = _distribute(run)
    for epoch in range(run.start_epoch, config.epochs):
        began = time.perf_counter()
        losses = _train_epoch(run, epoch, show_bar)
        valid_value, valid_expr = _validate(run)
        seconds = time.perf_counter() - began
        run.train_seconds += seconds
        run.history.append({"epoch": epoch + 1, "train_loss": losses["train_loss"], "lr": losses["lr"],
                            "valid_value_acc": valid_value, "valid_expr_acc": valid_expr, "seconds": seconds,
                            "infill_loss": losses["infill_loss"], "epsilon": losses["epsilon"], "tau": losses["tau"]})
        _checkpoint(run, on_epoch)
        if stop_after_epoch is not None and epoch + 1 >= stop_after_epoch and epoch + 1 < config.epochs:
            return False
    return True


def _start_outputs(run: setup.Run, data_info: dict) -> None:
    """Rank 0, before the first epoch: say the PseDual regime; write config.json, data.json, env.json
    (where this process trains: a resumed run records where it resumed), a pretrained encoder's
    encoder.json (its name, folder and hub commit) and a resumed run's epochs table."""
    config, out = run.config, run.out
    if config.psedual is not None:  # say the regime out loud: where ε and τ go, over how many steps
        print(f"PseDual: {schedules.regime(config.psedual, run.per_epoch, config.epochs)}", file=sys.stderr, flush=True)
        warning = schedules.warning(config.psedual, run.per_epoch, config.epochs)
        if warning is not None:
            warnings.warn(warning, UserWarning, stacklevel=4)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(asdict(config), indent=2))
    (out / "data.json").write_text(json.dumps(data_info, indent=2))
    (out / ENV_FILE).write_text(json.dumps(asdict(environment(run.device)), indent=2))
    if get_solver(config.solver).reads_subwords:  # which encoder, and for a hub id which commit, it read
        (out / hub.ENCODER_FILE).write_text(json.dumps(hub.resolve(config.model.plm, download=False).record(), indent=2))
    if run.history:  # a resumed folder may predate per-epoch tables; test_run reads this one
        tables.write(run.history, out / "epochs.parquet", EPOCHS_SCHEMA)


def _distribute(run: setup.Run) -> nn.Module:
    """The step's loss as the ranks run it: itself alone, under DistributedDataParallel with several."""
    if run.world_size == 1:
        return run.step_fn
    from torch.nn.parallel import DistributedDataParallel

    # the search for parameters a step left out is a graph walk per step: only for solvers that
    # may leave some out (tests/test_distributed.py says which; the reexamining module never does)
    return DistributedDataParallel(run.step_fn, device_ids=[run.device] if run.device.type == "cuda" else None,
                                   find_unused_parameters=run.model.may_leave_parameters_unused)


def _train_epoch(run: setup.Run, epoch: int, show_bar: bool) -> dict:
    """One pass over the training set in the epoch's own seeded order: the epoch row's mean
    losses, the lr its steps used, and ε and τ at its last step."""
    config, train_set, world_size = run.config, run.train_set, run.world_size
    run.step_fn.train()
    order = torch.randperm(len(train_set), generator=torch.Generator().manual_seed(config.seed * 1_000_003 + epoch))
    batches = [[train_set[i] for i in order[j:j + config.batch_size].tolist()]
               for j in range(0, len(train_set), config.batch_size)]
    bar = _bar(len(batches), f"epoch {epoch + 1}/{config.epochs}") if show_bar and run.main else None
    # summed on the device in float64 (the same operations as on the host), read once per epoch:
    # reading a step's loss would make the host wait for the GPU every step (only the progress
    # bar, on a terminal, reads it)
    total = total_infill = torch.zeros((), dtype=torch.float64, device=run.device)
    schedule: dict[str, float | None] = {"epsilon": None, "tau": None}
    for i, problems in enumerate(batches):
        # the step count is a function of (epoch, i), so a resumed run continues ε and τ
        clock = Clock(epoch * run.per_epoch + i, run.per_epoch, config.epochs)
        mine, weight = shard(problems, run.rank, world_size)
        shares = None
        if world_size > 1:  # this rank's share of the global batch's mean losses (see `distributed`)
            shares = (share(run.model.loss_terms(mine), run.model.loss_terms(problems), weight, world_size),
                      share(run.reexaminer.loss_terms(mine), run.reexaminer.loss_terms(problems), weight, world_size)
                      if run.reexaminer is not None else 0.0)
        stepped = train_step(run.step_fn, run.opt, collate(mine, run.vocab).to(run.device), clock,
                             clip_grad_norm=config.clip_grad_norm, device=run.device, precision=config.precision,
                             forward=run.forward, shares=shares)
        if config.lr_schedule == "linear":
            run.sched.step()
        # the global batch's mean loss is the ranks' average (their sum at the epoch's end)
        total = total + stepped.loss.detach().double() / world_size * len(problems)
        if stepped.reexamined is not None:
            total_infill = total_infill + stepped.infill_loss.detach().double() / world_size * len(problems)
            schedule = {"epsilon": stepped.reexamined.epsilon, "tau": stepped.reexamined.tau}
        if bar is not None:
            bar.set_postfix(loss=f"{stepped.loss.item():.3f}")
            bar.update()
    if bar is not None:
        bar.close()
    total, total_infill = torch.stack([total, total_infill]).tolist()
    if world_size > 1:
        total, total_infill = all_sum([total, total_infill], run.device)
    lr = run.opt.param_groups[0]["lr"]
    if config.lr_schedule == "step":
        run.sched.step()
    return {"train_loss": total / len(train_set), "lr": lr,
            "infill_loss": total_infill / len(train_set) if run.reexaminer is not None else None, **schedule}


def _validate(run: setup.Run) -> tuple[float, float]:
    """Validation value and expression accuracy (decoding split over the ranks)."""
    config = run.config
    return _accuracies(evaluate(run.model, run.valid_set, run.vocab, config.beam_size, config.batch_size, run.device,
                                run.rank, run.world_size), run.valid_set)


def _checkpoint(run: setup.Run, on_epoch: EpochHook | None) -> None:
    """After an epoch: best.pt if it is the best so far, then last.pt and epochs.parquet (rank 0
    writes them), then the `on_epoch` hook."""
    config, out, row = run.config, run.out, run.history[-1]
    kept = best_epoch(run.history)
    # every rank's RNG states (dropout draws differ between ranks), gathered for rank 0 to save
    rngs = gather((torch.get_rng_state(), torch.cuda.get_rng_state(run.device) if run.device.type == "cuda" else None),
                  run.world_size)
    if run.main:
        weights = {**checkpoint.model_state(run.model), "config": asdict(config),
                   "reexaminer": run.reexaminer.state_dict() if run.reexaminer is not None else None}
        if kept["epoch"] == row["epoch"]:  # the best so far
            checkpoint.save(out / "best.pt", weights)
        print(f"epoch {row['epoch']}/{config.epochs} loss {row['train_loss']:.4f} valid value "
              f"{100 * row['valid_value_acc']:.1f}% expr {100 * row['valid_expr_acc']:.1f}% ({row['seconds']:.1f} s)",
              file=sys.stderr, flush=True)
        checkpoint.save(out / "last.pt", {**weights, "optimizer": run.opt.state_dict(),
                                          "scheduler": run.sched.state_dict(), **checkpoint.rng_fields(rngs),
                                          "history": run.history, "epoch": row["epoch"], "seconds": run.train_seconds})
        tables.write(run.history, out / "epochs.parquet", EPOCHS_SCHEMA)
    if on_epoch is not None:
        on_epoch({**row, "best_epoch": kept["epoch"], "best_valid_value_acc": kept["valid_value_acc"]}, out)


def test_run(out_dir: str | Path, device: torch.device | str | None = None,
             allow_changed_data: bool = False) -> RunResult:
    """Evaluate a run folder's `best.pt` on test, once; write `predictions.parquet` and
    `metrics.parquet` there. Needs `config.json`, `best.pt` and `epochs.parquet`. Runs on
    `device`, else the config's (a checkpoint trained anywhere loads onto either). A test
    problem the solver cannot represent is scored wrong, its reason in the predictions'
    `unscored` column; if anything else fails here, the checkpoints stay, and `psedual test
    RUN_DIR` (or `psedual train --resume` with the same options) runs this again without
    training. Data that changed since training (its `data.json` identity) is refused unless
    `allow_changed_data`."""
    began, out = time.perf_counter(), Path(out_dir)
    missing = [n for n in ("config.json", "epochs.parquet", "best.pt") if not (out / n).is_file()]
    if missing:
        raise FileNotFoundError(f"{out}: not a trained run folder (missing {', '.join(missing)})")
    config = run_config(out)
    device = torch.device(device) if device is not None else resolve(config.device)
    splits, data_info = view(config)
    changed = check_identity(out, splits, data_info, allow_changed_data)
    train_set, valid_set, test_set, vocab = sets(config, splits, data_info)
    try:
        history = read(out / "epochs.parquet", EPOCHS_SCHEMA)
        best = best_epoch(history)  # the epoch training kept in best.pt
        train_seconds = sum(row["seconds"] for row in history)
    except (OSError, ValueError, TypeError) as err:  # pyarrow's errors (and nulls met in best_epoch) name no file
        raise ValueError(f"{out / 'epochs.parquet'}: not a run's epoch table ({type(err).__name__}: "
                         f"{str(err).splitlines()[0][:200] if str(err) else ''})") from None
    best_path = out / "best.pt"
    best_state = checkpoint.load(best_path)
    model = checkpoint.build_model(best_state, best_path, config.solver, vocab).to(device)
    decoded = evaluate_scored(model, test_set, vocab, config.beam_size, config.batch_size, device)
    predicted, unscored = [pred for pred, _ in decoded], [why for _, why in decoded]
    report_unscored(test_set, unscored)
    fill: tuple[list, list] = ([None] * len(test_set), [None] * len(test_set))
    infilled: dict[str, float | None] = dict.fromkeys(("all", "pmr", "used", "pmr_used"))
    final_epsilon = final_tau = None
    if config.psedual is not None:
        reexaminer = Reexaminer(vocab, config.model, config.psedual)
        checkpoint.restore(reexaminer, best_state, "reexaminer", best_path)
        fill = infill(model, reexaminer.to(device), test_set, vocab, config.batch_size, device,
                      frozenset(p.id for p, why in zip(test_set, unscored) if why is not None))
        scored = [(p, g) for p, g in zip(*fill) if g is not None]
        if scored:
            pred, gold = zip(*scored)
            infilled = {"all": infilling_accuracy(pred, gold).value, "pmr": perfect_match_ratio(pred, gold).value,
                        "used": infilling_accuracy(pred, gold, used_only=True).value,
                        "pmr_used": perfect_match_ratio(pred, gold, used_only=True).value}
        final_epsilon, final_tau = schedules.final(config.psedual, setup.steps_per_epoch(config, len(train_set)),
                                                   config.epochs)
    rows = [asdict(Prediction(p.id, list(pred), list(p.prefix), value_correct(pred, p), expression_correct(pred, p),
                              expression_correct_values(pred, p), fp, fg, why))
            for pred, why, p, fp, fg in zip(predicted, unscored, test_set, *fill)]
    n_test = max(len(rows), 1)
    result = RunResult(best["epoch"], best["valid_value_acc"], best["valid_expr_acc"],
                       sum(r["value_correct"] for r in rows) / n_test,
                       sum(r["expression_correct"] for r in rows) / n_test,
                       sum(r["expression_correct_values"] for r in rows) / n_test,
                       infilled["all"], infilled["pmr"], infilled["used"], infilled["pmr_used"],
                       final_epsilon, final_tau, train_seconds, str(out))
    tables.write(rows, out / "predictions.parquet", PREDICTIONS_SCHEMA)
    data = data_record(data_info, train_set, valid_set, test_set, unscored,
                        sum(g is not None for g in fill[1]) if config.psedual is not None else None, changed)
    cost = RunCost(len(history), time.perf_counter() - began)
    tables.write([{**values(RunInfo(config.variant)), **config.flat(), **values(cost), **values(result),
                   **values(data), **trained_environment(out)}], out / "metrics.parquet", METRICS_SCHEMA)
    return result


def _bar(total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, leave=False, dynamic_ncols=True)
