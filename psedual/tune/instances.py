"""The cloud instance types a cost plan prices, and what a GPU cluster costs besides its trials
(psedual/tune/cost.py prices the trials; clusters/gpu.yaml names the types)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Instance:
    """A cloud instance type the plan prices (AWS on-demand, us-west-2, at the time of writing:
    check yours, or pass the price)."""

    name: str
    """The instance type (`g5.xlarge`)."""
    gpus: int
    """The GPUs it holds."""
    gpu: str | None
    """Their model as torch names it (`torch.cuda.get_device_name`): the calibration rows a GPU part
    is priced from are this GPU's (`gpu_machine`); None for a CPU instance."""
    price_hour: float
    """Dollars per hour, on demand."""

    def __post_init__(self) -> None:
        if self.gpus < 0 or self.price_hour < 0 or (self.gpus > 0) != (self.gpu is not None):
            raise ValueError(f"bad instance: {self}")


INSTANCES = {i.name: i for i in (Instance("g5.xlarge", 1, "NVIDIA A10G", 1.006),
                                  Instance("g6.xlarge", 1, "NVIDIA L4", 0.8048),
                                  Instance("g4dn.xlarge", 1, "Tesla T4", 0.526),
                                  # 8 H100s: the GPU a GPU session of this project's is lent (bench/gpu_session.py)
                                  Instance("p5.48xlarge", 8, "NVIDIA H100 80GB HBM3", 98.32),
                                  # 8 H200s, the GPU of the session at 50ac138 (docs/gpu/h200_report.md); no
                                  # on-demand price was at hand offline: AWS's EC2 Capacity Blocks rate
                                  # (US East (Ohio), Jan 2025), $5.408 a GPU-hour, stands in: pass yours
                                  Instance("p5en.48xlarge", 8, "NVIDIA H200", 43.26),
                                  Instance("m6i.2xlarge", 0, None, 0.384))}
"""The instance types the plan knows, by name: clusters/gpu.yaml's (`g5.xlarge` workers, an
`m6i.2xlarge` head), two other one-GPU types, and the H100s and H200s GPU sessions calibrated on."""


def instance(name: str, gpu: bool | None = None) -> Instance:
    """An instance type by name (an unknown one lists the valid ones); `gpu`: it must (not) hold one."""
    if name not in INSTANCES:
        raise ValueError(f"unknown instance type {name!r}; valid: {', '.join(INSTANCES)}")
    found = INSTANCES[name]
    if gpu and not found.gpus:
        raise ValueError(f"{name} holds no GPU; GPU instances: {', '.join(n for n, i in INSTANCES.items() if i.gpus)}")
    return found


def gpu_machine(gpu: str) -> str:
    """The calibration's machine key of shapes measured on one GPU of model `gpu` (as `machine`
    names a node with one: `NVIDIA A10G x1`)."""
    return f"{gpu} x1"


@dataclass(frozen=True)
class ClusterCost:
    """What a GPU cluster costs besides its trials' GPU-hours: the head for the whole run, and each
    GPU node's setup before its first trial and idle time after its last (clusters/gpu.yaml)."""

    gpu: Instance
    """The GPU workers' instance type."""
    head: Instance
    """The head's instance type."""
    price_head_hour: float
    """Dollars per head-hour (default: the head instance's price)."""
    node_setup_minutes: float
    """Minutes a new GPU node is paid for before its first trial: boot, installs (the CUDA torch),
    the data and the encoders. An estimate, not measured."""
    node_idle_minutes: float
    """Minutes a GPU node is paid for after its last trial (gpu.yaml's idle_timeout_minutes)."""

    def __post_init__(self) -> None:
        if min(self.price_head_hour, self.node_setup_minutes, self.node_idle_minutes) < 0 or not self.gpu.gpus:
            raise ValueError(f"bad cluster costs: {self}")

    def nodes(self, plans: list) -> int:
        """GPU nodes the run brings up (`plans`: cost.PartPlan's): as many as its busiest GPU part holds at once (parts run back
        to back, so a node comes up once)."""
        return max((math.ceil(p.units * p.concurrency / self.gpu.gpus) for p in plans if p.gpu), default=0)
