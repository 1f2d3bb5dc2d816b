"""Where a run computes: the device a config names, and the precision of its training steps."""

from __future__ import annotations

import contextlib
import platform
from importlib.metadata import PackageNotFoundError, version

import torch

from psedual.results.records import CPU_BUILD, NOT_INSTALLED, Environment

CPU = torch.device("cpu")
"""The default device of the functions that take one."""


def resolve(name: str) -> torch.device:
    """`auto` → CUDA when torch sees a GPU, else CPU; `cuda` without one is an error, not a
    silent CPU run."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device cuda: torch sees no CUDA device (a CPU build of torch, or no GPU); "
                         "use --device auto or cpu")
    return torch.device(name)


class NoCudaError(RuntimeError):
    """A process holds a GPU its torch cannot use: its message is one line (`no_cuda`)."""


def placed(name: str, gpu_ids: list) -> torch.device:
    """The device of a process Ray placed, holding the GPUs `gpu_ids` (`ray.get_gpu_ids()`).
    Ray sets no CUDA_VISIBLE_DEVICES for a process that asked for no GPU, so `auto` there would
    see every GPU of the machine and train on GPU 0 unaccounted: without a GPU of its own a
    process trains on the CPU (and never initialises CUDA); `cuda` without one is an error. A
    process that holds a GPU its torch cannot use (a CPU build, a driver older than the wheel's
    CUDA) fails at once rather than train for hours on the CPU; `cpu` there is taken as asked."""
    if gpu_ids:
        if name != "cpu" and not torch.cuda.is_available():
            raise NoCudaError(no_cuda(gpu_ids))
        return resolve(name)
    if name == "cuda":
        raise ValueError("device cuda: this trial holds no GPU (give its resources use_gpu or gpus_per_trial)")
    return torch.device("cpu")


def no_cuda(gpu_ids: list) -> str:
    """One line: which node holds a GPU that torch cannot see, and the versions that disagree."""
    from pathlib import Path

    driver = Path("/proc/driver/nvidia/version")
    driver = driver.read_text().splitlines()[0].strip() if driver.is_file() else "no NVIDIA driver loaded"
    return (f"node {platform.node()}: this trial holds GPU {', '.join(map(str, gpu_ids))} but torch "
            f"{torch.__version__} (CUDA {torch.version.cuda or 'none: a CPU build'}) sees no CUDA device; driver: "
            f"{driver}. Install the CUDA torch the driver supports on this node (make install TORCH_BUILD=cuda), "
            "or give the trial device: cpu")


def environment(device: torch.device) -> Environment:
    """The environment a run trains in on `device` (the runs table's `env.*`): versions read here,
    in the process that trains, so a trial records its node's, not the driver's. Ray's version is
    read from its installed metadata, not imported: the trainer runs without Ray."""
    try:
        ray_version = version("ray")
    except PackageNotFoundError:
        ray_version = NOT_INSTALLED
    gpu = None
    if device.type == "cuda":
        # `cuda` without an index is the current device: record which one it was
        device = torch.device("cuda", torch.cuda.current_device() if device.index is None else device.index)
        gpu = torch.cuda.get_device_name(device)
    return Environment(python=platform.python_version(), torch=torch.__version__,
                       cuda=torch.version.cuda or CPU_BUILD, ray=ray_version, device=str(device), gpu=gpu,
                       node=platform.node() or "unknown")


def autocast(device: torch.device, precision: str):
    """The context a training forward pass runs in: bf16 autocast, or nothing for fp32. On CPU
    bf16 autocast works too (slowly, without AMX); it is there so CI can run the path."""
    if precision == "fp32":
        return contextlib.nullcontext()
    if precision != "bf16":  # `auto` is resolved before a step (recipe_table.precision_for), never bf16 by default
        raise ValueError(f"precision {precision!r} at a training step; valid: fp32, bf16")
    return torch.autocast(device.type, dtype=torch.bfloat16)
