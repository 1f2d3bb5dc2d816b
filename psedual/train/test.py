"""A trained run's one test: its kept checkpoint (`best.pt`) evaluated on the test split.

`evaluate_run` reads a run folder and returns what it found as one `Tested` record, in memory (a sweep's
tests after the sweep run it as Ray tasks on the trials' checkpoints, which stay as they are);
`test_run` does so and writes the folder's predictions and metrics (`psedual train`, `psedual
test RUN_DIR`). Decoding (`evaluate`) and infilling (`infill`) are shared with validation and the
infilling probe.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from psedual.metrics import (expression_accuracy, expression_correct, expression_correct_values, infilling_accuracy,
                             perfect_match_ratio, value_accuracy, value_correct)
from psedual.reexamine import Reexaminer, schedules
from psedual.results.best import kept_epoch
from psedual.results.folder import BEST, TEST_NEEDS, RunFolder
from psedual.results.records import Prediction, RunCost, RunResult, values
from psedual.results.row import Tested
from psedual.solvers.batch import collate
from psedual.solvers.config import inference
from psedual.solvers.tensors import padded_ids
from psedual.solvers.vocab import Vocab
from psedual.train import checkpoint
from psedual.train.device import CPU, resolve
from psedual.train.distributed import decode_split
from psedual.train.unscored import decode_each, report_unscored
from psedual.train.view import check_identity, data_record, sets, view


@dataclass(frozen=True)
class TestConfig:
    """`psedual test`: test a trained run folder's best checkpoint (again), without training."""

    run_dir: str
    """The folder `psedual train --out` wrote."""
    device: str | None = None
    """Where to evaluate (default: the run's config)."""
    allow_changed_data: bool = False
    """Test even though the data on disk differ from what the run trained and tested on
    (refused by default: its metrics would be for other problems)."""


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


def accuracies(predicted, problems) -> tuple[float, float]:
    """Value and expression accuracy of `predicted` on `problems`."""
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


def evaluate_run(out_dir: str | Path, device: torch.device | str | None = None, allow_changed_data: bool = False) -> Tested:
    """Evaluate a run folder's `best.pt` on test, once, and return what it found; the folder is
    only read. Needs `config.json`, `best.pt` and `epochs.parquet`. Runs on `device`, else the
    config's (a checkpoint trained anywhere loads onto either). A test problem the solver cannot
    represent is scored wrong, its reason in its prediction's `unscored`. Data that changed since
    training (its `data.json` identity) is refused unless `allow_changed_data`."""
    began, folder = time.perf_counter(), RunFolder(Path(out_dir))
    missing = folder.missing(TEST_NEEDS)
    if missing:
        raise FileNotFoundError(f"{folder.path}: not a trained run folder (missing {', '.join(missing)})")
    config = folder.config()
    device = torch.device(device) if device is not None else resolve(config.device)
    best_path = folder.file(BEST)
    best_state = checkpoint.load(best_path)
    with checkpoint.encoder_of(best_state, best_path):  # the tokenizer it trained with, wherever its folder went
        splits, data_info = view(config)
    changed = check_identity(folder, data_info, allow_changed_data)
    train_set, valid_set, test_set, vocab = sets(config, splits, data_info)
    epochs = folder.epochs()
    best = kept_epoch((values(e) for e in epochs), config.selection)  # the epoch training kept in best.pt
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
        final_epsilon, final_tau = schedules.final(config.psedual, config.steps_per_epoch(len(train_set)),
                                                   config.epochs)
    predictions = tuple(Prediction(p.id, list(pred), list(p.prefix), value_correct(pred, p),
                                   expression_correct(pred, p), expression_correct_values(pred, p), fp, fg, why)
                        for pred, why, p, fp, fg in zip(predicted, unscored, test_set, *fill))
    n_test = max(len(predictions), 1)
    result = RunResult(best["epoch"], best["valid_value_acc"], best["valid_expr_acc"],
                       sum(p.value_correct for p in predictions) / n_test,
                       sum(p.expression_correct for p in predictions) / n_test,
                       sum(p.expression_correct_values for p in predictions) / n_test,
                       infilled["all"], infilled["pmr"], infilled["used"], infilled["pmr_used"],
                       final_epsilon, final_tau, sum(e.seconds for e in epochs), str(folder.path))
    data = data_record(data_info, train_set, valid_set, test_set, unscored,
                       sum(g is not None for g in fill[1]) if config.psedual is not None else None, changed)
    return Tested(config, result, RunCost(len(epochs), time.perf_counter() - began), data, epochs, predictions,
                  folder.environment())


def test_run(out_dir: str | Path, device: torch.device | str | None = None,
             allow_changed_data: bool = False) -> Tested:
    """`evaluate_run`, then its predictions and metrics written to the run folder. If anything fails here,
    the checkpoints stay, and `psedual test RUN_DIR` (or `psedual train --resume` with the same
    options) runs this again without training."""
    tested = evaluate_run(out_dir, device, allow_changed_data)
    RunFolder(Path(out_dir)).write_tested(tested)
    return tested
