"""Are pyproject.toml's lower bounds true? Install the lowest version each direct dependency allows
into a scratch venv, then run what a user runs first: a short train (logged to MLflow and
TensorBoard with the `track` extra), a sweep (the CI smoke grid) and `analyze compare` on its runs
(`make lowest`). A direct dependency that uv's resolution leaves above its bound is then put at
the bound itself, so every bound is the version checked.

The resolution is uv's `--resolution lowest-direct`: every direct dependency at the lowest
version its range allows, their own dependencies at the highest that fit. torch is the one
exception: it is pinned to torch==2.13.0, the CPU build, installed first as `make install` does
(from $TORCH_CPU_INDEX, or this machine's index, which serves that build): its lowest allowed
release from PyPI would be a CUDA build that pulls gigabytes of NVIDIA libraries, so torch's own
lower bound (torch>=2.4) is not checked here. Everything else comes from the package registry.

Prints each stage with its time and the versions installed; exits 1 at the first stage that
fails, with its last output lines. Usage: .venv/bin/python tools/lowest_deps.py [--work DIR]
[--extras test,track] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from packaging.version import Version  # pip's and setuptools' own

ROOT = Path(__file__).resolve().parent.parent
TORCH = "torch==2.13.0"
"""The one pin: the CPU build `make install` puts in first (see the module's docstring)."""


def stage(what: str, cmd: list[str], **kwargs) -> str:
    """Run one stage; its output, or exit 1 naming the stage and its last lines."""
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    took = time.perf_counter() - began
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        print(f"FAILED {what} ({took:.0f} s, exit {done.returncode}):\n{tail}", flush=True)
        sys.exit(1)
    print(f"ok {what} ({took:.0f} s)", flush=True)
    return done.stdout


def direct(extras: list[str]) -> list[str]:
    """The direct dependencies of the package and `extras`, as pyproject.toml states them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [*project["dependencies"], *(d for e in extras for d in project["optional-dependencies"][e])]


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def _bounds(requirements: list[str]) -> dict[str, str]:
    """Each direct dependency's lower bound (`>=X`), by its normalised name."""
    out = {}
    for r in requirements:
        low = re.search(r">=\s*([\w.]+)", r)
        if low:
            out[_name(r)] = low.group(1)
    return out


def _at(version: str | None, bound: str) -> bool:
    """Whether an installed version is the bound itself (`2.50.0` is `2.50`)."""
    return version is not None and Version(version) == Version(bound)


def _versions(frozen: str) -> dict[str, str]:
    """`pip freeze`'s versions by normalised name (a local build's `+cpu` left off)."""
    return {_name(line): line.split("==", 1)[1].split("+")[0] for line in frozen.splitlines() if "==" in line}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", help="scratch folder (default: a new temporary one)")
    parser.add_argument("--extras", default="test,track", help="extras to install too (default: test,track)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="psedual-lowest-"))
    work.mkdir(parents=True, exist_ok=True)
    venv, extras = work / "venv", [e for e in args.extras.split(",") if e]
    py = venv / "bin" / "python"
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "CI": "1", "UV_PYTHON": str(py)}
    try:
        stage("venv", [sys.executable, "-m", "venv", str(venv)])
        index = ["--index-url", os.environ["TORCH_CPU_INDEX"]] if os.environ.get("TORCH_CPU_INDEX") else []
        stage(f"{TORCH} (CPU build)", [str(py), "-m", "pip", "install", "-q", TORCH, *index])
        stage("uv", [str(py), "-m", "pip", "install", "-q", "uv"])
        pin = work / "torch.txt"
        pin.write_text(f"{TORCH}\n")
        spec = f"{ROOT}[{','.join(extras)}]" if extras else str(ROOT)
        stage("lowest-direct install", [str(venv / "bin" / "uv"), "pip", "install", "--python", str(py),
                                        "--resolution", "lowest-direct", "--constraint", str(pin), spec], env=env)
        # uv's lowest-direct may still land above a bound (it keeps a combination it prefers): each
        # such package is then put at its bound itself, so that every bound is the version checked
        installed = _versions(stage("pip freeze", [str(py), "-m", "pip", "freeze"]))
        pins = [f"{name}=={low}" for name, low in _bounds(direct(extras)).items()
                if name != "torch" and not _at(installed.get(name), low)]
        if pins:
            pin.write_text("\n".join([TORCH, *pins]) + "\n")
            stage(f"at the bound: {', '.join(pins)}", [str(venv / "bin" / "uv"), "pip", "install", "--python", str(py),
                                                      "--constraint", str(pin), spec], env=env)
            installed = _versions(stage("pip freeze", [str(py), "-m", "pip", "freeze"]))
        bounds = _bounds(direct(extras))
        print("direct dependencies installed: " + ", ".join(f"{n}=={installed.get(n)}" + (
            "" if _at(installed.get(n), low) else f" (bound {low})") for n, low in bounds.items()), flush=True)
        psedual, out = str(venv / "bin" / "psedual"), work / "run"
        # outside the checkout: the installed package, its shipped sweep files, the data root as set
        stage("a short train", [psedual, "train", "--data.dataset", "mawps", "--data.fold", "0", "--data.train_size",
                                "96", "--epochs", "1", "--batch_size", "32", "--beam_size", "1",
                                "--model.embedding_size", "16", "--model.hidden_size", "32", "--threads", "1",
                                "--out", str(out), *(["--loggers", "mlflow", "tensorboard"] if "track" in extras else [])],
              env=env, cwd=work)
        stage("a sweep (smoke.yaml)", [psedual, "tune", "--space", "smoke.yaml", "--storage", str(work / "results")],
              env=env, cwd=work)
        compared = stage("analyze compare", [psedual, "analyze", "compare", "--root", str(work / "results"),
                                             "--experiment", "smoke", "--arm", "variant", "--base", "base",
                                             "--treatment", "gcn"], env=env, cwd=work)
        print(compared.strip().splitlines()[0] if compared.strip() else "(no output)")
        print(f"lowest direct versions: every stage passed (scratch: {work})")
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
