"""Calibration of the cost plan: each distinct trial shape timed on this code and this machine.

A shape (`cost.shape`: solver, variant, fusion, data set, model sizes, batch, beam, threads) is
timed on the first trial of a profile that has it, `concurrency` shapes at a time (as the
profile runs its trials: two trials on two cores are each slower than one alone): its start
(data, vocabulary, model), two real training epochs and a validation pass. The second epoch
gives `step_s` (the first carries warm-up, which goes into `start_s`), the validation pass
`eval_s` per problem, decoded with the trial's beam by a model two (or three) epochs in.

A PseDual shape whose trials sample an expression (scheduled or predicted fusion) trains three
epochs through the trainer's own steps with ε pinned (`pinned`): a warm-up epoch that samples,
one at ε = 1 (`step_s`: gold keys only, no rollout) and one at ε = `SAMPLED_EPSILON`
(`sample_step_s`: the rollout beside the gold's keys). Its own schedule cannot be timed as it
runs: scheduled fusion holds ε at 1 for the first fifth of a run, so a trial's second epoch may
sample nothing (a 10-step epoch of an 80-epoch trial never does) or nearly every step. The plan
prices each trial's steps by its own schedule (`sampling.sampled_steps`).

A short calibration (a GPU session's minutes, `--calibrate_steps N`) times epochs of N steps
and decodes at most `DECODE_BATCHES` validation batches; a profile whose pretrained encoders
are not on the machine can be timed on a stand-in (`--calibrate_plm DIR`: a random encoder of
BERT-base's size from DIR's config and tokenizer). Rows measured either way carry a note
that the plan prints.
"""

from __future__ import annotations

import functools
import multiprocessing
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from psedual.tune.cost import machine, shape
from psedual.tune.instances import gpu_machine


DECODE_BATCHES = 4
"""Validation batches decoded per shape by a short calibration."""
SAMPLED_EPSILON = 0.5
"""ε of the timed sampled epoch: any ε strictly between 0 and 1 costs the same (the gold's keys and
the sample's); 0.5 is where the paper profiles' horizon schedule ends."""


def pinned(psedual, sampled: bool):
    """`psedual` (a PseDualConfig) with ε held: at 1 (teacher forcing: no rollout), or, `sampled`,
    at `SAMPLED_EPSILON` for scheduled fusion (predicted fusion's own ε is 0: it samples, and reads
    no gold keys, at every step); τ and the rest as the trial's."""
    if not sampled:
        return replace(psedual, fusion="teacher_forcing")
    if psedual.fusion == "predicted":
        return psedual
    return replace(psedual, fusion="scheduled", epsilon_schedule="step", epsilon0=SAMPLED_EPSILON,
                   epsilon_decay=1.0, epsilon_hold=0.0)
STAND_IN_LAYERS, STAND_IN_HIDDEN = 12, 768
"""A stand-in encoder's size: BERT-base's, as roberta-base and chinese-roberta-wwm-ext."""


def stand_in(flat: dict, plm: str | None) -> tuple[dict, str]:
    """`flat` with its pretrained encoder swapped for the stand-in built from `plm` (when it names
    one and `plm` is given), and the note its row carries ("" when unchanged)."""
    if plm is None or not flat.get("model.plm") or flat.get("solver") not in PLM_SOLVERS:
        return flat, ""
    return ({**flat, "model.plm": plm, "model.plm_layers": STAND_IN_LAYERS, "model.plm_hidden": STAND_IN_HIDDEN},
            f"a stand-in encoder (random, {STAND_IN_LAYERS} layers x {STAND_IN_HIDDEN}, {Path(plm).name}'s "
            f"tokenizer) for {Path(flat['model.plm']).name}")


PLM_SOLVERS = ("bert_tree", "re_deduction")
"""The solvers whose encoder is a pretrained one (`model.plm`)."""


def measure(flat: dict, device=None, steps: int | None = None, plm: str | None = None) -> dict:
    """Time one shape (run in a worker process of `measure_shapes`, or in `measure_on_gpu`'s task)
    on `device` (default: the config's, resolved): start_s, step_s, sample_step_s (None for a shape
    that never samples), eval_s, and the row's note.
    `steps`: epochs of that many steps and `DECODE_BATCHES` validation batches, not whole ones;
    `plm`: a stand-in encoder's folder (`stand_in`)."""
    import torch

    from psedual.tune.space import make_config

    key = shape(make_config(flat))  # the shape as the profile names it, whatever stands in
    timed, note = stand_in(flat, plm)
    config = make_config(timed)
    config = replace(config, epochs=max(config.epochs, 3))  # up to three epochs timed, whatever the trial runs
    threads = torch.get_num_threads()  # given back (as the trainer does): a caller in this process keeps its own
    torch.set_num_threads(config.threads or 1)
    try:
        return _timed(config, key, note, device, steps)
    finally:
        torch.set_num_threads(threads)


def _timed(config, key: str, note: str, device, steps: int | None) -> dict:
    """`measure`'s timing of `config` (its shape `key`), at the thread count already set."""
    from psedual.reexamine.schedules import samples
    from psedual.results.folder import RunFolder
    from psedual.train.device import resolve
    # the trainer's own steps (not a copy of them), timed one phase at a time
    from psedual.train.trainer import _distribute, _train_epoch, _validate, build
    from psedual.train.view import sets, view

    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        train_set, valid_set, _, vocab = sets(config, *view(config))
        if steps is not None:  # the vocabulary above is the whole training set's, as the trial's
            train_set = train_set[: steps * config.batch_size]
            valid_set = valid_set[: DECODE_BATCHES * config.batch_size]
            note = "; ".join(filter(None, [note, f"{steps} steps timed an epoch"]))
        run = build(config, RunFolder(Path(out)), train_set, valid_set, vocab,
                    resolve(config.device) if device is None else device, 0, 1)
        run.forward = _distribute(run)
        start = time.perf_counter() - began
        # a shape that samples: warm-up sampled (both paths warm), then ε = 1, then sampled
        sampling = config.psedual is not None and samples(config.psedual)
        regimes = [True, False, True] if sampling else [None, None]
        epochs = []
        for epoch, sampled in enumerate(regimes):
            if sampled is not None:  # the trainer's own epoch, its reexaminer's ε held
                run.reexaminer.config = pinned(config.psedual, sampled)
            t = time.perf_counter()
            _train_epoch(run, epoch, False)
            epochs.append(time.perf_counter() - t)
        t = time.perf_counter()
        _validate(run)
        valid = time.perf_counter() - t
    # the first epoch's extra over a timed one of its kind is warm-up; on a loaded machine the timed
    # one can run slower than the first, which is noise, not a negative start
    return {"shape": key, "start_s": round(max(0.0, start + epochs[0] - epochs[-1]), 3),
            "step_s": round(epochs[1] / run.per_epoch, 5),
            "sample_step_s": round(epochs[2] / run.per_epoch, 5) if sampling else None,
            "eval_s": round(valid / max(1, len(valid_set)), 5), "note": note}


def measure_shapes(flats: list[dict], concurrency: int, steps: int | None = None, plm: str | None = None) -> list[dict]:
    """Each trial config's shape timed, `concurrency` at a time in fresh processes (spawned:
    no state shared with this one, as Ray's workers); `steps`, `plm` as `measure`'s."""
    with multiprocessing.get_context("spawn").Pool(concurrency, maxtasksperchild=1) as pool:
        return pool.map(functools.partial(measure, steps=steps, plm=plm), flats, chunksize=1)


def measure_on_gpu(flats: list[dict], steps: int | None = None, plm: str | None = None) -> dict:
    """Inside one Ray task holding one GPU: each shape timed on it, one at a time, as a trial holding
    that GPU trains (`device.placed`: a GPU its torch cannot use fails in one line, never timed as
    the CPU). Each row's machine is the GPU's name (`gpu_machine`), or this node's CPU where a config
    names `device: cpu`. Returns the rows and where they ran (`node`: Ray's node id, `host`);
    `steps`, `plm` as `measure`'s."""
    import platform

    import ray
    import torch

    from psedual.train.device import placed
    from psedual.tune.space import make_config

    gpus, rows = ray.get_gpu_ids(), []
    for flat in flats:
        device = placed(make_config(flat).device, gpus)
        where = gpu_machine(torch.cuda.get_device_name(device)) if device.type == "cuda" else machine()
        rows.append({**measure(flat, device, steps, plm), "machine": where})
    return {"rows": rows, "node": ray.get_runtime_context().get_node_id(), "host": platform.node()}


def measure_on_cluster(flats: list[dict], cpus: float = 1.0, steps: int | None = None, plm: str | None = None) -> dict:
    """`measure_on_gpu` as one Ray task with one GPU (and `cpus`, as a trial's worker holds) on the
    Ray this process is attached to: on an autoscaling cluster that brings up a GPU worker. Not
    retried: a failure is the calibration's."""
    import ray

    task = ray.remote(num_gpus=1, num_cpus=cpus, max_retries=0)(measure_on_gpu)
    return ray.get(task.remote(flats, steps, plm))


def distinct_shapes(flats: list[dict], datasets: tuple[str, ...] = ()) -> list[dict]:
    """The first trial config of each distinct shape; `datasets`: only those on these data sets
    (the plan prices the others from them, `cost.sibling`)."""
    from psedual.tune.space import make_config

    seen: dict[str, dict] = {}
    for flat in flats:
        config = make_config(flat)
        if not datasets or config.data.dataset in datasets:
            seen.setdefault(shape(config), flat)
    return list(seen.values())
