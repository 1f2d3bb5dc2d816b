"""Every GPU figure in one command, for a session lent a GPU (issue 38; docs/gpu.md gives the
device calls): stage by stage, each a subprocess with a time limit, each stage's section added
to one Markdown report as soon as it ends, so a run cut off keeps what it did.

Stages, in order (`STAGES`): the environment; one fp32 and one bf16 training step of every
solver × variant; the `gpu` tests; training and beam-5 evaluation speed of every solver
(bench/train_speed.py); PseDual-GCN's step against the base step for GTS and Graph2Tree, with the
masked (the GPU's) and the rows rollout side by side (`rollout`), and with the masked rollout's steps
compiled (torch.compile) beside it eager (`compiled`); Graph2Tree's step 48 steps into training,
when its samples are about as long as the gold's (`rollout_late`); host-device syncs
(bench/syncs.py); the same short RE-Deduction run at fp32 and at bf16, their test accuracies
compared problem by problem (`precision`, bench/precision_accuracy.py); the side-by-side against the
published GTS on the same device; MAWPS trials sharing one GPU, 1, 2, 4 and 8 at once, their steady
throughput and start-up apart (`share`); the calibration of the `full`
profile's GPU trial shapes (`--calibrate`, its Math23K shapes, 10 steps each, the pretrained
encoders stood in for: its rows go to costs.tsv beside the report); a 2-worker gloo Ray Train
trial on one GPU.

Issue 59's figures in one call (`ISSUE59`, 505 s expected from the H200's stages: over the issue's 8
minutes): `--stages env rollout syncs precision share --budget 540`; then the second command
(`ISSUE59_THEN`, the same `--work`): on a GPU whose shapes are calibrated, the masked rollout compiled
beside it eager and the step 48 steps into training, `--stages compiled rollout_late --budget 180`; on
one not yet calibrated, the calibration instead, `--stages calibrate --budget 300`.

`--device cpu` runs the same stages at toy size (CI's slow set runs it that way, so it
cannot rot); there the `gpu` tests skip and the trials share CPUs, not a GPU.

Resumable: the state (each finished stage's section) is kept in `--work`; a second run with
the same `--work` skips the stages that passed. A stage is started only if its expected
seconds (`expect_s`, on an H100) fit what is left of `--budget`; those that do not are listed
as left for the next run. On the device, `--work` lies outside $OUT (emptied before each call),
and `--unpack` first unpacks what bench/gpu_carry.py packed (the packages the image lacks, the
data, the stand-in encoder's tokenizer, the published GTS).

Writes into `--out`: report.md, state.json and (after the calibration) costs.tsv.

Usage: python bench/gpu_session.py --out DIR [--device cuda|cpu] [--work DIR] [--budget S]
           [--unpack .carry/session.tar.xz] [--stages NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
SHOWN_LINES = 120
"""A stage's output in the report: its last lines (the figures are printed last)."""


@dataclass(frozen=True)
class Context:
    """Where a run's inputs are."""

    device: str
    """`cuda`, or `cpu` for the toy run."""
    work: Path
    """The state folder; the calibration writes its costs.tsv here."""
    carry: Path | None
    """The unpacked carry (bench/gpu_carry.py), or None: this machine's install and data."""
    reference: Path | None
    """A checkout of the published GTS code (with data/Math_23K.json), if any."""
    side_by_side: Path | None
    """The side-by-side script, if any."""

    @property
    def cuda(self) -> bool:
        return self.device == "cuda"

    @property
    def plm(self) -> str:
        """The stand-in encoder's folder (config and tokenizer): the carried one, else the package's."""
        return str(self.carry / "minilm") if self.carry else "minilm"


@dataclass(frozen=True)
class Stage:
    """One step of the session: its command for each device, its time limit and expected time."""

    name: str
    title: str
    argv: object
    """Context → the arguments after `python`, or a string: why the stage cannot run here."""
    expect_s: int
    """Seconds expected on an H100 (what the budget plans with)."""
    timeout_s: int
    """Seconds before the stage is stopped (on the GPU; the toy run's limit is half of it)."""


ENV_CODE = """
import importlib.metadata as md, os, platform, shutil, subprocess, torch
print("python", platform.python_version(), "on", platform.node(), f"({os.cpu_count()} CPUs)")
print("torch", torch.__version__, "CUDA", torch.version.cuda, "available:", torch.cuda.is_available())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("GPU", p.name, f"{p.total_memory / 2**30:.0f} GiB, compute capability {p.major}.{p.minor},",
          p.multi_processor_count, "SMs")
if shutil.which("nvidia-smi"):
    print(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip())
for name in ("ray", "optuna", "jsonargparse", "pyarrow", "transformers", "torch_geometric", "scipy", "numpy"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "MISSING")
print("commit", os.environ.get("PSEDUAL_COMMIT", "unknown"))
"""


def _steps(c: Context):
    return [str(BENCH / "step_check.py"), "--device", c.device, "--plm", c.plm] + ([] if c.cuda else
                                                                                    ["--toy", "--batch-size", "16"])


def _tests(c: Context):
    return ["-m", "pytest", "-m", "gpu", str(ROOT / "tests" / "test_gpu.py"), "-q", "-p", "no:cacheprovider",
            "--durations=5"]


def _speed(c: Context):
    if c.cuda:
        # the calibration's stand-in size (calibrate.STAND_IN_*): this process imports no psedual (on the
        # device it is not on this process's path, only on the stages')
        return [str(BENCH / "train_speed.py"), "--device", "cuda", "--dataset", "math23k", "--plm", c.plm,
                "--plm-layers", "12", "--plm-hidden", "768", "--batches", "5", "--eval-problems", "64"]
    return [str(BENCH / "train_speed.py"), "--device", "cpu", "--dataset", "mawps", "--solvers", "gts",
            "--variants", "base", "gcn", "--batches", "1", "--warmup", "1", "--batch-size", "8", "--eval-problems",
            "8", "--precisions", "fp32", "bf16"]


def _steps_beside_base(c: Context, rollouts: list[str], solvers: tuple[str, ...] = ("gts", "graph2tree"),
                       window: tuple[str, str] = ("3", "16")) -> list[str]:
    """train_speed.py's PseDual-GCN step against the base step with each tree rollout in `rollouts`: `solvers`
    on Math23K on a GPU, timing `window` (warm-up steps, timed batches), a toy GTS step on a CPU."""
    if c.cuda:
        warmup, batches = window
        return [str(BENCH / "train_speed.py"), "--device", "cuda", "--dataset", "math23k", "--solvers", *solvers,
                "--variants", "base", "gcn", "--rollouts", *rollouts, "--precisions", "fp32",
                # 16: at 8 the H200's per-batch ratios spread 1.45-2.89x, too wide to rank the two rollouts
                "--warmup", warmup, "--batches", batches, "--eval-problems", "16"]
    return [str(BENCH / "train_speed.py"), "--device", "cpu", "--dataset", "mawps", "--solvers", "gts",
            "--variants", "base", "gcn", "--rollouts", *rollouts, "--precisions", "fp32", "--batches", "1",
            "--warmup", "1", "--batch-size", "8", "--eval-problems", "8"]


def _rollout(c: Context):
    return _steps_beside_base(c, ["masked", "rows"])


def _compiled(c: Context):
    # the masked rollout's steps through torch.compile beside the eager ones: on a GPU bound by launching
    # kernels, a step's 368 ops (232 forward, 136 backward, its weight gradients deferred; GTS, Math23K,
    # batch 64) against the compiled graph's 82 (the CPU's generated code: 27 kernels forward, 55
    # backward); its first batch, compiling, is printed apart (the toy CPU run times the compiled one
    # alone: its eager twin is the rollout stage's)
    return _steps_beside_base(c, ["masked", "compiled"] if c.cuda else ["compiled"])


def _rollout_late(c: Context):
    # the rollout stage's window is an untrained model's: its samples run to the length limit, and the
    # rollout pays for every token. 48 steps later they are about as long as the gold's (on the CPU,
    # Graph2Tree's step went 1.27x -> 1.16x as its samples went 1.44x -> 1.01x the gold's tokens, 49990a8),
    # and the default ε schedule samples nothing before a fifth of the run's epochs. Graph2Tree alone, and
    # the masked rollout alone, to fit the second call
    return _steps_beside_base(c, ["masked"], ("graph2tree",), ("48", "8"))


def _precision(c: Context):
    if c.cuda:  # RE-Deduction, the one recipe bf16 was chosen for by speed: its stand-in encoder at 12 x 768
        # 20 epochs: in 10 the H200's fp32 run reached 23.4% on test (under the 25% floor; validation still
        # rising, 22.6% then 25.2%); the two runs go at once (the default on cuda), so 20 take about what 10 did
        return [str(BENCH / "precision_accuracy.py"), "--device", "cuda", "--solvers", "re_deduction", "--epochs",
                "20", "--concurrent", "--plm", c.plm]
    # GTS beside it: a tree decoder's bf16 run under CUDA's autocast rules too; the toy learns too little to
    # compare, so it compares at any accuracy (the path, not a figure)
    return [str(BENCH / "precision_accuracy.py"), "--device", "cpu", "--solvers", "re_deduction", "--toy",
            "--epochs", "2", "--train-size", "64", "--min-learned", "0", "--cuda-rules", "--plm", c.plm]


def _side_by_side(c: Context):
    if c.side_by_side is None or not c.side_by_side.is_file():
        return ("no side-by-side script (../shared/bench/gts_side_by_side.py here; bench/gpu_carry.py "
                "--reference carries it)")
    if c.reference is None or not (c.reference / "src" / "models.py").is_file():
        return ("no checkout of the published GTS code (github ShichaoSun/math_seq2tree): pass --reference, "
                "or carry it (bench/gpu_carry.py --reference)")
    sizes = ["--batches", "40"] if c.cuda else ["--batches", "1", "--eval-problems", "4"]
    return [str(c.side_by_side), "--reference", str(c.reference), "--device", c.device, *sizes]


def _share(c: Context):
    # on a GPU: trials of about a minute (20 epochs of 1,024 problems), whose start-up is a few seconds; on
    # the toy CPU run the same four passes (4 and 8 trials hold a share of the machine's CPUs: the code path)
    return [str(BENCH / "gpu_trials.py"), "share", "--device", c.device] + (
        ["--trials", "1", "2", "4", "8", "--epochs", "20", "--train-size", "1024"] if c.cuda else
        ["--trials", "1", "2", "4", "8", "--epochs", "2", "--train-size", "64"])


def _calibrate(c: Context):
    costs = ["--costs", str(c.work / "costs.tsv")]
    if c.cuda:  # the full profile's GPU parts; MAWPS priced from Math23K, the encoders stood in for
        return ["-m", "psedual.cli", "tune", "--space", str(ROOT / "search_spaces" / "paper.yaml"), "--profile",
                "full", "--calibrate", "--calibrate_steps", "10", "--calibrate_datasets", "math23k",
                "--calibrate_plm", c.plm if c.carry else _package_plm(), "--gpu_instance", "p5.48xlarge", *costs]
    # Table 3's shapes (teacher forcing beside scheduled fusion) with figure1's, which they share but one
    return ["-m", "psedual.cli", "tune", "--space", str(ROOT / "search_spaces" / "paper.yaml"), "--profile", "small",
            "--only", "figure1,table3", "--calibrate", "--calibrate_steps", "2", *costs]


def _package_plm() -> str:
    from psedual.solvers.plm import plm_path  # only where the package is installed (no carry)

    return str(plm_path("minilm"))


def _syncs(c: Context):
    return [str(BENCH / "syncs.py"), "--device", c.device] + (
        ["--dataset", "math23k"] if c.cuda else ["--dataset", "mawps", "--steps", "1", "--decode", "8",
                                                 "--batch-size", "8"])


def _gloo(c: Context):
    return [str(BENCH / "gpu_trials.py"), "gloo", "--device", c.device] + (
        [] if c.cuda else ["--epochs", "1", "--train-size", "64"])


STAGES = [Stage("env", "Environment", lambda c: ["-c", ENV_CODE], 10, 60),
          Stage("steps", "One fp32 and one bf16 training step of every solver × variant", _steps, 40, 240),
          Stage("gpu_tests", "The `gpu` tests (tests/test_gpu.py)", _tests, 90, 360),
          Stage("train_speed", "Training and beam-5 evaluation speed (bench/train_speed.py)", _speed, 80, 300),
          Stage("rollout", "PseDual-GCN's step against the base step, masked and rows rollouts (train_speed.py)",
                _rollout, 60, 300),
          # 120: the rollout stage's 60 with rows swapped for compiled, and compiling (about a minute on
          # this machine's CPU at toy size; not yet timed on a GPU)
          Stage("compiled", "PseDual-GCN's step with the masked rollout compiled by torch.compile (train_speed.py)",
                _compiled, 120, 300),
          # 45: 56 steps of each arm at the H200's 0.166 and 0.368 s, its evaluation and start
          Stage("rollout_late", "PseDual-GCN's step against the base step 48 steps into training, Graph2Tree, "
                "masked rollout (train_speed.py --warmup 48)", _rollout_late, 45, 240),
          Stage("syncs", "Host-device syncs (bench/syncs.py)", _syncs, 25, 180),
          # 165: the H200's 10 epochs in turn took 166 s; 20 at once are estimated at 150-170 s (a2b43c5)
          Stage("precision", "Accuracy at bf16 beside fp32, the same short run (bench/precision_accuracy.py)",
                _precision, 165, 300),
          Stage("side_by_side", "Beside the published GTS on the same device (gts_side_by_side.py)", _side_by_side,
                60, 300),
          Stage("share", "Trials sharing one GPU at steady state, 1, 2, 4 and 8 at once (bench/gpu_trials.py share)",
                _share, 245, 420),  # the H200: 239.8 s
          Stage("calibrate", "The full profile's GPU trial shapes, calibrated (--calibrate)", _calibrate, 240, 480),
          Stage("gloo", "Two Ray Train workers on one GPU over gloo (bench/gpu_trials.py gloo)", _gloo, 40, 240)]
"""The session's stages, in the order they run."""
BY_NAME = {s.name: s for s in STAGES}
ISSUE59 = ["env", "rollout", "syncs", "precision", "share"]
"""Issue 59's figures in one command: expected 10 + 60 + 25 + 165 + 245 = 505 s from the H200's stages
(50ac138; the rollout's 16 batches and the precision stage's 20 epochs at once estimated), over the
8 minutes the issue set: `--budget 540` holds them in one call of at most 10 minutes."""
ISSUE59_THEN = ["compiled", "rollout_late", "calibrate"]
"""Issue 59's second command, with the same --work: the compiled rollout's row and the step 48 steps into
training (`--stages compiled rollout_late --budget 180`: 120 + 45 s, on a GPU whose shapes are calibrated,
the H200), or on a GPU without rows in costs.tsv the calibration instead (`--stages calibrate --budget 300`:
Table 3's shapes with the rest of the full profile's 20 Math23K GPU shapes; 15 took 190 s on the H100,
3d2b7a9): a device's 15 minutes hold the first call and one of these."""


GOALS = [("train_speed", r"^gts\s+base\s+fp32 .*epoch ≈\s*([\d.]+) s", "GTS epoch on Math23K, fp32 (s)", "<=", 60.0),
         ("side_by_side", r"ratio train ([\d.]+)x", "training beside the published GTS (x)", ">=", 3.0),
         ("side_by_side", r"ratio train [\d.]+x eval ([\d.]+)x", "beam-5 evaluation beside the published GTS (x)",
          ">=", 20.0),
         ("rollout", r"step ratio gts gcn \(masked rollout\) / base, fp32: ([\d.]+)x",
          "GTS PseDual-GCN step / base step, masked rollout (x)", "<=", 1.5),
         ("rollout", r"step ratio graph2tree gcn \(masked rollout\) / base, fp32: ([\d.]+)x",
          "Graph2Tree PseDual-GCN step / base step, masked rollout (x)", "<=", 1.5),
         ("compiled", r"step ratio gts gcn \(compiled rollout\) / base, fp32: ([\d.]+)x",
          "GTS PseDual-GCN step / base step, masked rollout compiled (x)", "<=", 1.5),
         ("compiled", r"step ratio graph2tree gcn \(compiled rollout\) / base, fp32: ([\d.]+)x",
          "Graph2Tree PseDual-GCN step / base step, masked rollout compiled (x)", "<=", 1.5),
         ("rollout_late", r"step ratio graph2tree gcn \(masked rollout\) / base, fp32: ([\d.]+)x",
          "Graph2Tree PseDual-GCN step / base step, masked rollout, 48 steps into training (x)", "<=", 1.5),
         ("syncs", r"train step, gts gcn\s+\d+–(\d+) syncs", "host reads per PseDual-GCN step, GTS (most)", "<=", 5.0),
         ("precision", r"^bf16 - fp32, re_deduction: .*\(TOST\) p ([\d.]+)",
          "RE-Deduction's test accuracy, bf16 against fp32, TOST p at ±3 points (the same accuracy: equivalent)", "<=",
          0.05),
         ("share", r"1 trial alone: ([\d.]+)x", "8 trials at 0.125 GPU against one alone, steady state (x)", ">=",
          5.0),
         # the issue's steady state needs trials long enough that start-up is under 10% of their time
         ("share", r"the table, whole:(?:\n.*)*\n\s+8 (?:\s*\S+){6}\s+([\d.]+)%",
          "start-up's share of the 8 trials' time (%): trials long enough for a steady figure", "<=", 10.0)]
"""Issues 38's and 59's goals: the stage whose output holds the figure, how to find it, what, and the bound."""


def goals(state: dict, cuda: bool) -> list[str]:
    """A line per goal: the figure, the bound, met or not (or not measured)."""
    import re

    lines = []
    for name, pattern, what, op, bound in GOALS:
        record = state["stages"].get(name) or {}
        found = re.search(pattern, record.get("output", ""), re.MULTILINE) if record.get("rc") == 0 else None
        if found is None:
            lines.append(f"- {what}: not measured (stage {name}: {'not run' if not record else 'no figure'})")
            continue
        value = float(found.group(1))
        if not cuda:
            lines.append(f"- {what}: {value:g} (toy sizes on a CPU: not judged against {op} {bound:g})")
            continue
        met = value <= bound if op == "<=" else value >= bound
        lines.append(f"- {what}: {value:g}, goal {op} {bound:g}: {'met' if met else 'NOT met'}")
    return lines


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack bench/gpu_carry.py's archive into `dest` once (a marker names the archive's size)."""
    marker = dest / ".unpacked"
    stamp = f"{archive.name} {archive.stat().st_size}"
    if not (marker.is_file() and marker.read_text() == stamp):
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        with tarfile.open(archive) as t:
            t.extractall(dest, filter="data")
        marker.write_text(stamp)
    return dest


def commit(carry: Path | None) -> str:
    """This checkout's `git describe`; on a device machine (a copy without .git), the commit the
    carry was built at, said as such."""
    found = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True)
    if found.returncode == 0:
        return found.stdout.strip()
    if carry and (carry / "COMMIT").is_file():
        return f"{(carry / 'COMMIT').read_text().strip()} (the carry's)"
    return "unknown"


def environment(c: Context) -> dict:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "RAY_AUTH_MODE": "disabled", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "PSEDUAL_COMMIT": commit(c.carry),
           # the gpu tests' pretrained solvers read it: a device has the carried folder, not the plm extra
           "PSEDUAL_TEST_PLM": c.plm}
    path = [str(ROOT)] + ([str(c.carry / "site")] if c.carry else [])
    env["PYTHONPATH"] = os.pathsep.join(path + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if c.carry:
        env["PSEDUAL_DATA"] = str(c.carry / "data")
    if not c.cuda:  # the toy run never touches a GPU, even on a GPU machine
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def run_stage(stage: Stage, c: Context, env: dict) -> dict:
    """Run one stage; its record: rc (None: not run, with why), seconds, command, output's tail."""
    argv = stage.argv(c)
    if isinstance(argv, str):
        return {"rc": None, "seconds": 0.0, "command": "", "output": f"not run: {argv}"}
    command = [sys.executable, *argv]
    limit = stage.timeout_s if c.cuda else stage.timeout_s // 2
    began = time.perf_counter()
    # its own process group: a stage stopped at its limit takes its Ray and workers with it
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=limit)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        rc = "timeout"
        output += f"\n(stopped at its limit of {limit} s)"
    lines = output.splitlines()
    shown = lines[-SHOWN_LINES:]
    if len(lines) > len(shown):
        shown.insert(0, f"... ({len(lines) - len(shown)} earlier lines left out)")
    shown_command = " ".join(a if len(a) < 80 else "CODE" for a in ["python", *argv])
    return {"rc": rc, "seconds": round(time.perf_counter() - began, 1), "command": shown_command,
            "output": "\n".join(shown)}


def render(state: dict, c: Context, left: list[str]) -> str:
    lines = [f"# GPU session report ({c.device})", "",
             f"Commit {state['commit']}; started {state['started']}; `python bench/gpu_session.py --device {c.device}`. "
             f"Stages passed: {sum(1 for r in state['stages'].values() if r['rc'] == 0)} of {len(STAGES)}.", ""]
    if left:
        lines += [f"Left for the next run (same --work): {', '.join(left)}.", ""]
    lines += ["Goals (issues 38 and 59):", "", *goals(state, c.cuda), ""]
    for i, stage in enumerate(STAGES, 1):
        record = state["stages"].get(stage.name)
        lines.append(f"## {i}. {stage.title}")
        lines.append("")
        if record is None:
            lines += ["not run yet", ""]
            continue
        verdict = {0: "passed", None: "not run"}.get(record["rc"], f"FAILED (rc {record['rc']})")
        if record["command"]:
            lines += [f"`{record['command']}`: {verdict} in {record['seconds']} s", ""]
        lines += ["```", record["output"], "```", ""]
    return "\n".join(lines)


def save(state: dict, c: Context, out: Path, left: list[str]) -> None:
    (c.work / "state.json").write_text(json.dumps(state, indent=1))
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(render(state, c, left))
    if out.resolve() != c.work.resolve():
        shutil.copy2(c.work / "state.json", out / "state.json")
        if (c.work / "costs.tsv").is_file():
            shutil.copy2(c.work / "costs.tsv", out / "costs.tsv")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="report.md, state.json and costs.tsv go here")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--work", help="the state between runs (default: --out)")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds: start no stage whose expected time no longer fits (default: no limit)")
    parser.add_argument("--unpack", help="bench/gpu_carry.py's archive, unpacked into --carry-dir first")
    parser.add_argument("--carry-dir", default="/tmp/psedual_carry")
    parser.add_argument("--reference", help="the published GTS checkout (default: the carried one)")
    parser.add_argument("--side-by-side", help="the side-by-side script (default: the carried one, else "
                        "../shared/bench/gts_side_by_side.py)")
    parser.add_argument("--stages", nargs="+", choices=list(BY_NAME), help="only these (default: all)")
    args = parser.parse_args()
    began = time.perf_counter()
    out = Path(args.out)
    work = Path(args.work or args.out)
    work.mkdir(parents=True, exist_ok=True)
    carry = unpack(Path(args.unpack), Path(args.carry_dir)) if args.unpack else None
    reference = Path(args.reference) if args.reference else (carry / "math_seq2tree" if carry else None)
    script = (Path(args.side_by_side) if args.side_by_side else carry / "gts_side_by_side.py" if carry
              else ROOT.parent / "shared" / "bench" / "gts_side_by_side.py")
    c = Context(args.device, work, carry, reference, script)
    env = environment(c)
    state_file = work / "state.json"
    state = (json.loads(state_file.read_text()) if state_file.is_file() else
             {"commit": env["PSEDUAL_COMMIT"], "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "device": c.device, "stages": {}})
    if state.get("device") != c.device:
        sys.exit(f"{state_file} holds a {state.get('device')} run: give another --work")
    todo = [s for s in STAGES if (not args.stages or s.name in args.stages) and
            (state["stages"].get(s.name) or {}).get("rc") != 0]
    left = []
    for stage in todo:
        spent = time.perf_counter() - began
        if args.budget is not None and spent + stage.expect_s > args.budget:
            left.append(stage.name)
            continue
        print(f"[{spent:6.0f} s] {stage.name} ...", flush=True)
        state["stages"][stage.name] = record = run_stage(stage, c, env)
        print(f"[{time.perf_counter() - began:6.0f} s] {stage.name}: rc {record['rc']} in {record['seconds']} s",
              flush=True)
        save(state, c, out, left + [s.name for s in todo[todo.index(stage) + 1:]])
    save(state, c, out, left)
    failed = [n for n, r in state["stages"].items() if r["rc"] not in (0, None)]
    print(f"{out / 'report.md'}: {sum(1 for r in state['stages'].values() if r['rc'] == 0)} of {len(STAGES)} stages "
          f"passed" + (f"; failed: {', '.join(failed)}" if failed else "")
          + (f"; left for the next run: {', '.join(left)}" if left else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
