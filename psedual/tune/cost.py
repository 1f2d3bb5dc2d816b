"""The cost plan of a paper run before launch: trials, epochs, steps, hours, wall time, dollars.

The model, per trial, from calibrated figures of its shape (`calibrate.py` measures them on
this code, `concurrency` trials at a time, and stores them in costs.tsv with the machine):

    trial_s = start_s + (steps − sampled) × step_s + sampled × sample_step_s
              + epochs × n_valid × eval_s + n_test × eval_s,   steps = epochs × steps_per_epoch

`start_s` is the trial's start (data, vocabulary, model; measured outside Ray), `step_s`
one optimiser step that samples no expression (a base solver's, or PseDual's at ε = 1),
`sample_step_s` one that does (PseDual at ε < 1: the rollout), `sampled` the trial's steps at
ε < 1 from its own schedule (`sampling.sampled_steps`), `eval_s` one problem decoded with the
trial's beam (validation each epoch, test once after the sweep). A row measured before
`sample_step_s` (`OLD_ROW`) prices a trial that samples only where a GPU session's bench
measured the sampled step beside it (`sampling.MEASURED`, said in the plan); elsewhere that
trial's shape is not priced, and the plan names the row and the command that recalibrates it
(rows whose one figure is known to be the sampled step carry both, and a note that says so).
A part's wall time is `part_s` (Ray's start and its per-trial overhead, the tests' workers, the
comparison: measured on a real sweep) plus the sum of its trials' seconds over the concurrency they
were measured at (trials measured two at a time already carry the slowdown of sharing two cores). Hours
are trial seconds × the CPUs (or GPUs) a trial holds; dollars are hours × the price given.
A shape without a figure for the machine is reported as such, never guessed, with one exception
the plan names: a shape measured on another data set with the same solver, variant and sizes
(`--calibrate_datasets` times one data set where a GPU session cannot time them all) lends it its
per-step and per-problem seconds, the steps and problems still counted on the shape's own data.
A GPU part is read from the rows of its GPU (`gpu_machine`, measured one shape at a time in a Ray
task holding one GPU: trials that hold a GPU each do not slow each other) and priced at the GPU
instance's price per GPU; a plan with GPU parts adds the head for the wall time and each GPU
node's setup and idle minutes (`instances.ClusterCost`).
"""

from __future__ import annotations

import csv
import functools
import os
import platform
from dataclasses import dataclass, field, replace
from pathlib import Path

from psedual.tune.sampling import measured_sample, sampled_steps

COSTS = Path(__file__).with_name("costs.tsv")
"""The stored calibration: one row per (machine, concurrency, shape)."""
PART = "part"
"""The shape name of a machine's per-part overhead row (its `start_s` is `part_s`)."""
COLUMNS = ("machine", "commit", "concurrency", "shape", "start_s", "step_s", "sample_step_s", "eval_s", "note")
"""`note`: how a row was measured where not as the shape names it (a stand-in encoder); optional."""
SHAPE_KEYS = ("solver", "variant", "psedual.fusion", "data.dataset", "model.embedding_size", "model.hidden_size",
              "model.layers", "model.plm_layers", "model.plm_hidden", "batch_size", "beam_size", "threads", "device")
"""What sets a trial's per-step and per-problem cost (not its sizes: those are counted)."""


def machine() -> str:
    """This machine in words: its GPU's model and count where it has NVIDIA GPUs, else its CPU's
    model and core count."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith("model name")]
        model = names[0] if names else model
    gpus = [line.split(":", 1)[1].strip() for info in sorted(Path("/proc/driver/nvidia/gpus").glob("*/information"))
            for line in info.read_text().splitlines() if line.startswith("Model:")]
    return f"{gpus[0]} x{len(gpus)}" if gpus else f"{model} x{os.cpu_count()}"


def shape(config) -> str:
    """A trial's shape key from its TrainConfig."""
    flat = config.flat()
    flat["variant"] = config.variant
    if not config.psedual:
        flat["psedual.fusion"] = "-"
    return " ".join(f"{k}={flat.get(k)}" for k in SHAPE_KEYS)


@dataclass(frozen=True)
class Figures:
    """One calibration row."""

    start_s: float
    """Seconds to start a trial (data, vocabulary, model); for the `part` row, a part's overhead."""
    step_s: float
    """Seconds per optimiser step that samples no expression (a base solver's; PseDual's at ε = 1)."""
    eval_s: float
    """Seconds per problem decoded (validation and test, with the trial's beam)."""
    commit: str = field(default="", compare=False)
    """The code version it was measured on (the plan says it)."""
    note: str = field(default="", compare=False)
    """How it was measured where not as its shape names (`STAND_IN`); the plan says it."""
    sample_step_s: float | None = None
    """Seconds per optimiser step that samples an expression (PseDual at ε < 1); None for a shape
    that never samples (a base solver, teacher forcing), and in a row measured before this figure
    (`OLD_ROW`) whatever its shape."""

    def __post_init__(self) -> None:
        if min(self.start_s, self.step_s, self.eval_s) < 0 or (self.sample_step_s is not None
                                                                and self.sample_step_s < 0):
            raise ValueError(f"negative seconds in a calibration row: {self}")


def read_costs(path: Path = COSTS) -> dict[tuple[str, int, str], Figures]:
    """(machine, concurrency, shape) → figures; an unreadable row names the file and line."""
    out = {}
    for i, row in _numbered(path):
        try:
            sample = row.get("sample_step_s") or None  # absent (an older file) or empty: no such figure
            out[(row["machine"], int(row["concurrency"]), row["shape"])] = Figures(
                float(row["start_s"]), float(row["step_s"]), float(row["eval_s"]), row.get("commit") or "",
                row.get("note") or "", None if sample is None else float(sample))
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{path}: line {i}: {err}") from None
    return out


def _numbered(path: Path) -> list[tuple[int, dict]]:
    """`_rows` with each row's line number in the file (comment lines counted: what an editor shows)."""
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    data = [n for n, line in enumerate(lines, 1) if not line.startswith("#")][1:]  # after the header
    return list(zip(data, _rows(path)))


def _rows(path: Path) -> list[dict]:
    """The costs file's rows as mappings (none when it does not exist); `#` lines are comments."""
    if not path.exists():
        return []
    with path.open() as f:
        return list(csv.DictReader((line for line in f if not line.startswith("#")), delimiter="\t"))


@dataclass(frozen=True)
class Sizes:
    """A trial's problem counts."""

    train: int
    valid: int
    test: int


def sizes(config) -> Sizes:
    """The trial's training, validation and test problem counts (from the data cache)."""
    return _sizes(config.data)


@functools.cache
def _sizes(data) -> Sizes:
    """Per DataConfig, once: a plan counts every trial, and most trials share their data."""
    from psedual.data.cache import load_dataset
    from psedual.data.splits import split_dataset

    splits = split_dataset(load_dataset(data.dataset, data.data_root, data.user_path), data)
    return Sizes(len(splits.train), len(splits.valid), len(splits.test))


def trial_seconds(fig: Figures, epochs: int, steps_per_epoch: int, n: Sizes, sampled: int = 0) -> float:
    """The model's seconds for one trial (see the module's docstring); `sampled`: its steps at ε < 1,
    priced at `fig.sample_step_s` (which they need)."""
    if sampled and fig.sample_step_s is None:
        raise ValueError(f"{sampled} sampling steps and no sampled-step figure (commit {fig.commit or 'unknown'})")
    steps = epochs * steps_per_epoch
    return (fig.start_s + (steps - sampled) * fig.step_s + sampled * (fig.sample_step_s or 0.0)
            + epochs * n.valid * fig.eval_s + n.test * fig.eval_s)


OLD_ROW = "measured before the sampled-step figure"
"""What the plan calls a row without `sample_step_s` pricing a trial that samples."""


def recalibrate_command(gpu: bool, profile: str) -> str:
    """The command that measures `profile`'s rows with both step figures, where its parts run."""
    return (f"psedual tune --space search_spaces/paper.yaml --profile {profile} --calibrate"
            + (" --address auto (on the GPU cluster)" if gpu else " (on this machine)"))


@dataclass
class PartPlan:
    """The plan's figures for one part."""

    part: str
    trials: int = 0
    epochs: int = 0
    steps: int = 0
    seconds: float = 0.0
    """Trial seconds, summed (what the hours are made of)."""
    units: float = 1.0
    """CPUs or GPUs one trial holds."""
    gpu: bool = False
    concurrency: int = 1
    part_s: float | None = None
    uncalibrated: tuple[str, ...] = ()
    """Shapes without figures for the machine (then no time is given)."""
    machine: str = ""
    """The calibration's machine its figures are read from (a GPU part: its GPU's, `gpu_machine`)."""
    shapes: dict = field(default_factory=dict)
    """Its calibrated shapes → the commit each was measured on."""
    borrowed: dict = field(default_factory=dict)
    """Its shapes priced from another data set's figures (`sibling`) → that data set."""
    notes: dict = field(default_factory=dict)
    """Its shapes whose figures carry a note (a stand-in encoder) → the note."""
    part_commit: str = ""
    """The commit its part overhead was measured on."""
    after_seconds: float = 0.0
    """`seconds` with the speed-ups measured beside its figures applied (`speedup`): the plan's 'after'."""
    priced: int = 0
    """Trials with figures (those `seconds` and `after_seconds` sum)."""
    sped_up: dict = field(default_factory=dict)
    """A speed-up's name -> the trials it was applied to."""
    sampled: int = 0
    """Of `steps`, those of priced trials that sample an expression (ε < 1)."""
    priced_steps: int = 0
    """The steps of its priced trials."""
    sampling_s: float = 0.0
    """Of `seconds`, what its sampling steps cost beyond the same steps at `step_s`."""
    bench_sampled: dict = field(default_factory=dict)
    """Its shapes whose old rows (`OLD_ROW`) price their sampling steps at a bench's figure
    (`sampling.MEASURED`) -> that figure's solver."""
    old_rows: dict = field(default_factory=dict)
    """Its shapes not priced: a trial samples and their row is `OLD_ROW` -> the row's commit and concurrency."""

    @property
    def hours(self) -> float:
        return self.seconds * self.units / 3600

    @property
    def wall_s(self) -> float:
        return (self.part_s or 0.0) + self.seconds / self.concurrency


def plan_part(part: str, configs: list, resources, costs: dict, where: str, size_of=sizes) -> PartPlan:
    """A part's plan from its trials' TrainConfigs and the calibration of machine `where`."""
    gpu = resources.gpus_per_worker > 0
    units = resources.num_workers * (resources.gpus_per_worker if gpu else resources.cpus_per_worker)
    plan = PartPlan(part, units=units, gpu=gpu, concurrency=resources.max_concurrent)
    part_fig = costs.get((where, plan.concurrency, PART))
    plan.part_s = part_fig.start_s if part_fig else None
    # trials that each hold whole GPUs do not slow each other: their shapes are measured one at a
    # time (a GPU calibration's rows are at concurrency 1); shares of a GPU are measured as run
    measured_at = 1 if gpu and resources.gpus_per_worker >= 1 else plan.concurrency
    plan.machine = where
    missing = set()
    for config in configs:
        n = size_of(config)
        per_epoch = config.steps_per_epoch(n.train)
        plan.trials += 1
        plan.epochs += config.epochs
        plan.steps += config.epochs * per_epoch
        key = shape(config)
        fig = costs.get((where, measured_at, key))
        if fig is None:
            fig, dataset = sibling(costs, where, measured_at, key)
            if fig is not None:
                plan.borrowed[key] = dataset
        sampled = sampled_steps(config, per_epoch)
        if fig is not None and sampled and fig.sample_step_s is None:
            bench = measured_sample(where, fig.commit, config)
            if bench is None:
                plan.old_rows[key] = f"commit {fig.commit or 'unknown'}, concurrency {measured_at}"
                fig = None
            else:
                fig = replace(fig, sample_step_s=bench.step_s)
                plan.bench_sampled[key] = bench.solver
        if fig is None:
            missing.add(key)
        else:
            plan.seconds += trial_seconds(fig, config.epochs, per_epoch, n, sampled)
            plan.priced += 1
            plan.sampled += sampled
            plan.sampling_s += sampled * ((fig.sample_step_s or 0.0) - fig.step_s)
            plan.priced_steps += config.epochs * per_epoch
            factor, name = speedup(config, fig) if gpu else (1.0, "")
            faster = replace(fig, step_s=fig.step_s / factor,
                             sample_step_s=None if fig.sample_step_s is None else fig.sample_step_s / factor)
            plan.after_seconds += trial_seconds(faster, config.epochs, per_epoch, n, sampled)
            if name:
                plan.sped_up[name] = plan.sped_up.get(name, 0) + 1
            plan.shapes[key] = fig.commit
            if fig.note:
                plan.notes[key] = fig.note
    plan.uncalibrated = tuple(sorted(missing))
    plan.part_commit = part_fig.commit if part_fig else ""
    return plan


SPEEDUP_SESSION = "3d2b7a9"
"""The GPU session (commit) whose calibration rows the measured speed-ups below were measured beside:
they apply to its rows only (rows calibrated later already train with them)."""
PRECISION_SPEEDUP = "precision by measurement"
"""A recipe's `auto` precision (bf16 where the H100 measured it faster: `recipe_table.PRECISIONS_MEASURED`)."""
NOT_APPLIED = (
    "the masked rollout (PseDual's sampled expression without a host read per token, GTS, Graph2Tree, "
    "BERT-Tree): measured on the H200 (docs/gpu/h200_report.md, 50ac138), no faster than the rows rollout "
    "(PseDual-GCN step / base step, 8 batches: GTS 2.30x masked vs 2.00x rows, Graph2Tree 2.24x vs 2.02x); "
    "the H200's rows timed the masked one, as a GPU runs it: nothing to apply",
    "several trials sharing a GPU: 8.22x steady throughput for 8 trials at 0.125 GPU each against one alone on "
    "the H200 (GTS base, 1,024 MAWPS problems, 20 epochs; docs/gpu/h200_report.md), one figure of one small "
    "solver; the plan's GPU trials hold a GPU each: not applied",
)
"""Issue 59's speed-ups without a GPU figure the plan may use: said, never assumed."""


def speedup(config, fig: Figures) -> tuple[float, str]:
    """The factor a GPU shape's calibrated step seconds divide by with the speed-ups measured beside
    its figures, and the speed-up's name (1.0 and "" when none applies): a recipe's `auto` precision
    on a solver measured faster in bf16, for a variant measured (fp32 and bf16 problems/s of the same
    session's `bench/train_speed.py`)."""
    from psedual.train.recipe_table import AUTO, PRECISIONS_MEASURED, precision_for

    measured = PRECISIONS_MEASURED.get(config.solver)
    if fig.commit != SPEEDUP_SESSION or config.precision != AUTO or measured is None:
        return 1.0, ""
    if precision_for(config.solver, measured.device, AUTO) != "bf16":
        return 1.0, ""
    speed = next((s for s in measured.speeds if s.variant == config.variant), None)
    return (1.0, "") if speed is None else (speed.bf16 / speed.fp32, PRECISION_SPEEDUP)


DATASET_KEY = "data.dataset"


def sibling(costs: dict, where: str, concurrency: int, key: str) -> tuple[Figures | None, str]:
    """The figures of `key`'s shape measured on another data set (same machine, concurrency,
    solver, variant and sizes), and that data set; (None, "") when there are none. Several: the
    first data set by name, so the plan does not depend on the file's order."""
    words = key.split(" ")
    at = next((i for i, w in enumerate(words) if w.startswith(DATASET_KEY + "=")), None)
    if at is None:
        return None, ""
    found = []
    for (machine_, conc, other), fig in costs.items():
        theirs = other.split(" ")
        if (machine_ == where and conc == concurrency and len(theirs) == len(words) and theirs[at] != words[at]
                and theirs[:at] + theirs[at + 1:] == words[:at] + words[at + 1:]):
            found.append((theirs[at].split("=", 1)[1], fig))
    if not found:
        return None, ""
    dataset, fig = min(found, key=lambda f: f[0])
    return fig, dataset


def write_costs(rows: list[dict], path: Path = COSTS) -> None:
    """Add or replace calibration rows (keyed by machine, concurrency, shape), sorted."""
    old = _rows(path)
    key = lambda r: (r["machine"], str(r["concurrency"]), r["shape"])  # noqa: E731
    new = {key(r): r for r in old}
    new.update({key(r): r for r in rows})
    with path.open("w", newline="") as f:
        f.write("# psedual tune --space search_spaces/paper.yaml --profile PROFILE --calibrate [--costs FILE]  (writes "
                "these rows, this file by default; psedual/tune/cost.py reads them)\n")
        writer = csv.DictWriter(f, COLUMNS, delimiter="\t", extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(sorted(new.values(), key=key))
