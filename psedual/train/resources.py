"""Where and how each trial of a sweep trains: workers, CPUs, GPUs. The sweep places its trials
with it, and testing after a sweep places each test as one of the trial's workers was placed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resources:
    """Where and how each trial trains."""

    num_workers: int = 1
    """Ray Train workers per trial (DDP ranks)."""
    use_gpu: bool = False
    """One GPU per worker."""
    gpus_per_trial: float = 0.0
    """GPUs a trial holds, shared evenly by its workers (instead of `use_gpu`'s one per worker):
    0.25 runs four in-process trials on one GPU at once (with `max_concurrent: 4`); 1 with
    `num_workers: 2` puts both DDP ranks of a Ray Train trial on one GPU, talking over gloo
    (NCCL wants a GPU per rank)."""
    cpus_per_worker: float = 1.0
    """CPUs reserved per worker."""
    in_process: bool = True
    """With 1 worker, train inside the Tune trial (which then holds the worker's CPUs and GPU)
    instead of starting a Ray Train worker group: saves ~20 s per trial."""
    max_concurrent: int = 1
    """Trials running at once."""
    max_failures: int = 2
    """Retries of a trial whose worker died, from its last checkpoint."""

    def __post_init__(self) -> None:
        if self.num_workers < 1 or self.cpus_per_worker <= 0 or self.max_concurrent < 1 or self.max_failures < 0 \
                or self.gpus_per_trial < 0:
            raise ValueError(f"bad resources: {self}")
        if self.use_gpu and self.gpus_per_trial:
            raise ValueError("give use_gpu (one GPU per worker) or gpus_per_trial (a share), not both")
        if self.gpus_per_worker > 1:
            raise ValueError(f"gpus_per_trial {self.gpus_per_trial:g} gives each of {self.num_workers} workers "
                             f"{self.gpus_per_worker:g} GPUs; a rank uses one (say use_gpu for one per worker)")

    @property
    def uses_train_workers(self) -> bool:
        return not (self.in_process and self.num_workers == 1)

    @property
    def gpus_per_worker(self) -> float:
        """The GPU (or share of one) each worker holds: 1 with `use_gpu`, else its part of `gpus_per_trial`."""
        return 1.0 if self.use_gpu else self.gpus_per_trial / self.num_workers

    @property
    def backend(self) -> str:
        """torch.distributed's backend for a Train trial: gloo where ranks may share a GPU (or have none)."""
        return "nccl" if self.gpus_per_worker == 1 else "gloo"
