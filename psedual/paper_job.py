"""The paper in one command: a paper file's parts run in turn, each an ordinary experiment.

`psedual tune --space search_spaces/paper.yaml --profile small` runs table1, table3, figure1
(and table2 when an LLM endpoint is named) as experiments `<NAME>.<part>` through the main job's
`run_spec` (sweep → tests → runs table → comparison). NAME is `paper-<profile>`, or the first
free `-2`, `-3`, ...; `--resume NAME` skips the parts whose runs table holds all their trials
finished (none `error` or `lost`), resumes a started one from Tune's state (which reruns a failed or
lost trial), and starts the rest. `--plan` prices it from the
stored calibration and launches nothing; `--calibrate` measures that calibration first.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from psedual.job import TuneJob, experiment_name, run_spec, taken

REPORT = "psedual analyze report --experiment {name} --out {out}"


def paper_name(job: TuneJob, paper, profile: str) -> str:
    """The paper run's name, as an experiment's is chosen (`job.experiment_name`), from
    `<paper>-<profile>`; a name is used when any part of it is in the storage."""
    from psedual.tune.paper import PARTS

    return experiment_name(job, f"{paper.name}-{profile}", what="paper run",
                           used=lambda name: any(taken(job.storage, f"{name}.{part}") for part in PARTS))


def finished_trials(storage: str, experiment: str) -> int:
    """Rows of the experiment's runs table whose trial finished (0 when it has none): a part with an
    `error` or `lost` trial is not finished, so `--resume` resumes it, which reruns that trial."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    from psedual.results.records import FAILED
    from psedual.storage import filesystem

    fs, base = filesystem(storage)
    path = f"{base}/runs/experiment={experiment}"
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return 0
    return ds.dataset(path, filesystem=fs, format="parquet").count_rows(filter=~pc.field("status").isin(list(FAILED)))


def run_paper(job: TuneJob) -> int:
    """Run (or plan, or calibrate) a paper file's profile; 1 if any part had a failed trial."""
    from psedual.tune.paper import LLM_PART, load_paper, runnable

    paper = load_paper(job.space)
    if job.plan_from is not None or job.plan_sd is not None:
        raise ValueError(f"{job.space} is a paper file: plan_from and plan_sd plan a grid sweep file's comparisons")
    if job.paper.profile is None:
        raise ValueError(f"{job.space} is a paper file: give --profile ({', '.join(paper.profiles)})")
    profile = paper.profile(job.paper.profile)
    only = job.paper.only
    parts = paper.part_names(tuple(p.strip() for p in only.split(",")) if only else ())
    if job.calibration.calibrate:
        calibrate(paper, profile.name, parts, job)
    if job.plan or job.calibration.calibrate:
        print(plan(paper, profile.name, parts, job))
        return 0
    if profile.storage == "uri" and "://" not in job.storage:
        raise ValueError(f"profile {profile.name} stores its trials on a URI the nodes share: give --storage "
                         "s3://BUCKET/psedual (or gs://...)")
    from psedual.tune import encoders
    from psedual.tune.space import make_config

    # every part's encoders, before the first trial of the first part (one line naming each missing)
    encoders.check({part: [make_config(f) for f in spec.trial_configs()]
                    for part, spec, _ in _configs(paper, profile.name, parts) if spec is not None})
    name = paper_name(job, paper, profile.name)
    print(f"paper run {name}: {job.space}, profile {profile.name} ({profile.about}); parts {', '.join(parts)}; "
          f"storage {job.storage}", flush=True)
    began, code = time.perf_counter(), 0
    for part in parts:
        experiment = f"{name}.{part}"
        if part == LLM_PART:
            code = max(code, run_llm(paper.llm(part, profile.name), experiment, job))
            continue
        spec, lines = runnable(paper.sweep(part, profile.name))
        for line in lines:
            print(line, flush=True)
        if spec is None:
            continue
        expected = len(spec.trial_configs()) * spec.num_samples
        done = finished_trials(job.storage, experiment)
        if done >= expected:
            print(f"{experiment}: finished ({done} trials): skipped", flush=True)
            continue
        resume = taken(job.storage, experiment)
        print(f"\n{experiment}: {expected} trials ({'resumed' if resume else 'new'})", flush=True)
        code = max(code, run_spec(replace(spec, name=experiment), experiment, resume, job.storage, job.address,
                                       job.verbose, job.dashboard, rerun=name))
    print(f"\npaper run {name}: {len(parts)} parts in {time.perf_counter() - began:.0f} s. The report:\n  "
          + REPORT.format(name=name, out=f"docs/{name}"))
    return code


def run_llm(llm, experiment: str, job: TuneJob) -> int:
    """Table 2: the chat model solves the split plainly and reexamining, into the result tables."""
    if job.paper.llm_base_url is None:
        print(f"{experiment}: skipped: no LLM endpoint (give --llm_base_url URL --llm_model NAME, the key in "
              "$OPENAI_API_KEY)", flush=True)
        return 0
    if finished_trials(job.storage, experiment) >= 2:
        print(f"{experiment}: finished: skipped", flush=True)
        return 0
    from psedual.llm.client import LLMError
    from psedual.llm.run import LLMConfig, run
    from psedual.results.collect import add_run_folders

    # the reply caches stay beside local storage (a rerun sends no answered request again)
    where = Path(job.storage if "://" not in job.storage else ".") / "llm" / experiment
    folders = []
    for reexamine in (False, True):
        config = LLMConfig(model=job.paper.llm_model, base_url=job.paper.llm_base_url, dataset=llm.dataset, fold=llm.fold,
                           reexamine=reexamine, limit=llm.limit)
        folders.append(where / ("llm-reexamine" if reexamine else "llm"))
        try:
            run(config, folders[-1], progress=False)
        except LLMError as err:
            print(f"{experiment}: failed: {err}", flush=True)
            return 1
    add_run_folders(folders, job.storage, experiment)
    print(f"{experiment}: 2 LLM runs in {job.storage}/runs/experiment={experiment}/", flush=True)
    return 0


def _configs(paper, profile: str, parts: list[str]):
    """(part, its runnable sweep or None, lines about what was skipped) for each sweep part."""
    from psedual.tune.paper import LLM_PART, runnable

    for part in parts:
        if part != LLM_PART:
            yield (part, *runnable(paper.sweep(part, profile)))


def plan(paper, profile: str, parts: list[str], job: TuneJob) -> str:
    """The cost plan of the profile's parts (see psedual/tune/cost.py): CPU parts from this machine's
    calibration, GPU parts from the GPU instance's (`--gpu_instance`), with the cluster's costs."""
    from psedual.tune import encoders
    from psedual.tune.cost import machine, plan_part, read_costs
    from psedual.tune.plan_text import render
    from psedual.tune.instances import gpu_machine
    from psedual.tune.paper import LLM_PART
    from psedual.tune.space import make_config

    costs, where, plans, skipped, configs = read_costs(job.calibration.costs_path), machine(), [], [], {}
    cluster = job.prices.cluster_cost()
    for part, spec, lines in _configs(paper, profile, parts):
        skipped += lines
        if spec is not None:
            configs[part] = [make_config(f) for f in spec.trial_configs()]
            # a GPU part runs on the GPU workers: its figures are their GPU's, not this machine's
            at = gpu_machine(cluster.gpu.gpu) if spec.resources.gpus_per_worker > 0 else where
            plans.append(plan_part(part, configs[part] * spec.num_samples, spec.resources, costs, at))
    if LLM_PART in parts:
        skipped.append(f"{LLM_PART}: LLM calls, priced by the endpoint; run only with --llm_base_url")
    return render(plans, where, job.prices.price_cpu_hour, job.prices.gpu_hour, skipped + encoders.plan_lines(configs),
                  cluster if any(p.gpu for p in plans) else None, job.calibration.costs_path, profile)


CALIBRATION_SWEEP = "search_spaces/smoke.yaml"
"""The tiny real sweep whose wall time, less its trials' modelled seconds, is a part's overhead."""


def calibrate(paper, profile: str, parts: list[str], job: TuneJob) -> None:
    """Time each distinct trial shape of the profile and a part's overhead, and store them in the
    job's costs file (replacing the rows of the same machine, concurrency and shape): the CPU
    parts' on this machine, the GPU parts' on one GPU of the Ray at `job.address` (`calibrate_gpu`)."""
    cpu, gpu = [], []
    for _, spec, _ in _configs(paper, profile, parts):
        if spec is not None:
            (gpu if spec.resources.gpus_per_worker > 0 else cpu).append(spec)
    if gpu:
        calibrate_gpu(gpu, job)
    if cpu:
        calibrate_cpu(cpu, job)


def calibrate_cpu(specs: list, job: TuneJob) -> None:
    """The CPU parts' shapes on this machine, as many at once as the parts run, and a part's
    overhead (the smoke sweep's wall time less its trials' modelled seconds)."""
    from psedual.tune.calibrate import distinct_shapes, measure_shapes
    from psedual.tune.cost import machine

    flats = [f for spec in specs for f in spec.trial_configs()]
    concurrency = max(spec.resources.max_concurrent for spec in specs)
    smoke = _smoke(concurrency)
    shapes = distinct_shapes(distinct_shapes(flats, job.calibration.datasets) + smoke.trial_configs())
    print(f"calibrating {len(shapes)} trial shapes, {concurrency} at a time", flush=True)
    began = time.perf_counter()
    rows = measure_shapes(shapes, concurrency, job.calibration.calibrate_steps, job.calibration.calibrate_plm)
    print(f"  {time.perf_counter() - began:.0f} s", flush=True)
    where = machine()
    rows = [{**r, "machine": where, "concurrency": concurrency} for r in rows]
    _store(rows + [_part_row(smoke, rows, where, concurrency, job, own_ray=True)], job.calibration.costs_path)


def calibrate_gpu(specs: list, job: TuneJob) -> None:
    """The GPU parts' shapes in one Ray task holding one GPU of the Ray at `address` (a cluster's
    GPU worker; without an address, a local Ray's GPU if it has one), one shape at a time, keyed by
    the GPU's name at concurrency 1 (trials holding whole GPUs do not slow each other); then a
    part's overhead on that Ray, keyed the same at the parts' concurrency."""
    import ray

    from psedual.tune.calibrate import distinct_shapes, measure_on_cluster
    from psedual.tune.sweep import ensure_ray

    flats = [f for spec in specs for f in spec.trial_configs()]
    shapes = distinct_shapes(flats, job.calibration.datasets)
    ensure_ray(job.address)
    if job.address is None and not ray.cluster_resources().get("GPU"):
        print(f"{len(shapes)} GPU trial shapes not calibrated: this Ray has no GPU (on the cluster: the same command "
              "with --address auto)", flush=True)
        return
    cpus = max(spec.resources.cpus_per_worker for spec in specs)
    print(f"calibrating {len(shapes)} GPU trial shapes in one Ray task holding one GPU, one at a time", flush=True)
    began = time.perf_counter()
    measured = measure_on_cluster(shapes, cpus, job.calibration.calibrate_steps, job.calibration.calibrate_plm)
    where = measured["rows"][0]["machine"]
    print(f"  {time.perf_counter() - began:.0f} s on node {measured['host']} ({where})", flush=True)
    rows = [{**r, "concurrency": 1} for r in measured["rows"]]
    concurrency = max(spec.resources.max_concurrent for spec in specs)
    _store(rows + [_part_row(_smoke(concurrency), rows, where, concurrency, job)], job.calibration.costs_path)


def _smoke(concurrency: int):
    from psedual.tune.space import load_spec

    smoke = load_spec(CALIBRATION_SWEEP)
    return replace(smoke, resources=replace(smoke.resources, max_concurrent=concurrency))


def _part_row(smoke, rows: list[dict], where: str, concurrency: int, job: TuneJob, own_ray: bool = False) -> dict:
    """A part's overhead: the smoke sweep's wall time on the Ray at `job.address` (its storage: a URI
    the nodes share, else a temporary folder; `own_ray`: a Ray of this process's own, as a CPU part
    runs) less its trials' modelled seconds, from this machine's rows (measured now, with the smoke
    shapes, or already stored)."""
    address, storage = (None, None) if own_ray else (job.address, job.storage)
    import tempfile

    from psedual.tune.cost import PART, Figures, machine, plan_part, read_costs
    from psedual.tune.space import make_config

    local = machine()
    figures = {k: v for k, v in read_costs(job.calibration.costs_path).items() if k[0] == local}
    figures |= {(r["machine"], r["concurrency"], r["shape"]):
                Figures(r["start_s"], r["step_s"], r["eval_s"], sample_step_s=r.get("sample_step_s")) for r in rows}
    with tempfile.TemporaryDirectory() as tmp:
        shared = storage if storage is not None and "://" in storage else tmp
        began = time.perf_counter()
        run_spec(smoke, f"calibrate-{int(time.time())}", False, shared, address)
        wall = time.perf_counter() - began
    # the smoke sweep's trials as the plan models them (its shapes were measured on this machine)
    modelled = plan_part(smoke.name, [make_config(f) for f in smoke.trial_configs()], smoke.resources, figures,
                         local).seconds
    part_s = max(0.0, wall - modelled / concurrency)
    print(f"a part's overhead: {wall:.1f} s for the {smoke.name} sweep, its trials modelled at "
          f"{modelled / concurrency:.1f} s: {part_s:.1f} s", flush=True)
    return {"shape": PART, "start_s": round(part_s, 2), "step_s": 0, "eval_s": 0, "machine": where,
            "concurrency": concurrency}


def _store(rows: list[dict], path) -> None:
    from psedual.results.collect import code_version
    from psedual.tune.cost import write_costs

    commit = code_version()
    write_costs([{**r, "commit": commit} for r in rows], path)
