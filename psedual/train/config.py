"""Typed configuration of one training run; the CLI and the sweeps both build it."""

from __future__ import annotations

import math
import types
from dataclasses import asdict, dataclass, field
from typing import Literal, get_args, get_origin, get_type_hints

from psedual.data.config import DataConfig
from psedual.reexamine.config import BASE, PseDualConfig, check_variant
from psedual.solvers import SolverName, get_solver
from psedual.solvers.config import PROBLEM_VECTOR_SOLVERS, SolverConfig


Device = Literal["auto", "cpu", "cuda"]
Precision = Literal["fp32", "bf16", "auto"]
LRSchedule = Literal["step", "linear"]
Optimizer = Literal["adam", "adamw"]
Selection = Literal["best", "last"]
DEVICES = get_args(Device)
PRECISIONS = get_args(Precision)
LR_SCHEDULES = get_args(LRSchedule)
OPTIMIZERS = get_args(Optimizer)
SELECTIONS = get_args(Selection)
VARIANT_KEY = "psedual.expression_encoder"
"""Set through `variant`, never directly: two keys for one choice could disagree."""


def _type_name(annotation: object) -> str:
    """`int`, `float | None`, ...: a choice (Literal) is named by its values' type."""
    if get_origin(annotation) is Literal:
        return type(get_args(annotation)[0]).__name__
    if isinstance(annotation, types.UnionType):
        return " | ".join("None" if a is type(None) else _type_name(a) for a in get_args(annotation))
    return getattr(annotation, "__name__", str(annotation))


@dataclass(frozen=True)
class TrainConfig:
    """One run: data, solver and the published GTS recipe as defaults."""

    data: DataConfig = field(default_factory=lambda: DataConfig("mawps", fold=0))
    """Which problems to train, validate and test on."""
    solver: SolverName = "gts"
    """Registry name of the solver."""
    model: SolverConfig = field(default_factory=SolverConfig)
    """The solver's sizes and dropout."""
    psedual: PseDualConfig | None = None
    """The reexamining module and its schedules; None trains the solver alone."""
    epochs: int = 80
    """Passes over the training set."""
    batch_size: int = 64
    """Problems per optimisation step."""
    optimizer: Optimizer = "adam"
    """`adam`: Adam, weight decay added to the gradient (L2; torch.optim.Adam, as the recurrent
    solvers' published code); `adamw`: AdamW, weight decay applied to the weights apart from the
    gradient's moments (BERT-Tree's and RE-Deduction's code)."""
    lr: float = 1e-3
    """The optimiser's learning rate."""
    weight_decay: float = 1e-5
    """The optimiser's weight decay."""
    lr_step: int = 20
    """The learning rate is multiplied by lr_gamma every lr_step epochs."""
    lr_gamma: float = 0.5
    """Learning-rate decay factor."""
    lr_schedule: LRSchedule = "step"
    """`step`: lr × lr_gamma every lr_step epochs (the GTS recipe); `linear`: linear warm-up over
    warmup_fraction of all steps, then linear decay to 0 (transformers' schedule, per step)."""
    warmup_fraction: float = 0.1
    """`linear` schedule: share of the run's steps spent warming up."""
    plm_lr: float = 5e-5
    """Learning rate of a pretrained encoder's parameters (bert_tree, re_deduction); the rest use lr."""
    plm_weight_decay: float = 0.01
    """Weight decay of a pretrained encoder's parameters."""
    clip_grad_norm: float = 0.0
    """Clip the gradient's global norm to this before each step; 0 does not clip."""
    min_word_count: int = 1
    """Words seen fewer times in training are UNK."""
    beam_size: int = 5
    """Beam width for validation and test decoding."""
    selection: Selection = "best"
    """Which epoch's checkpoint is tested: `best`, the first with the highest validation value
    accuracy (`psedual.results.best`); `last`, the last epoch's (the published GTS and Graph2Tree
    protocol; with `--data.valid_fraction 0`, the only choice: there is nothing to select on).
    Never the test fold."""
    seed: int = 0
    """Seeds initialisation, shuffling and dropout."""
    threads: int = 0
    """torch CPU threads; 0 keeps torch's default."""
    device: Device = "auto"
    """`auto` (CUDA when present, else CPU), `cpu` or `cuda`. Inside a Ray Train worker the
    device is the one Ray assigned, whatever this says. Not part of a run's identity: a run
    may resume on another device."""
    precision: Precision = "fp32"
    """`fp32`, or `bf16`: the training forward pass under autocast (decoding stays fp32); `auto`
    (what a published recipe sets): the one measured faster for the solver on the device it trains
    on, fp32 on a CPU (`psedual.train.recipe_table.precision_for`)."""

    def __post_init__(self) -> None:
        get_solver(self.solver)
        if self.device not in DEVICES:
            raise ValueError(f"unknown device {self.device!r}; valid: {', '.join(DEVICES)}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"unknown precision {self.precision!r}; valid: {', '.join(PRECISIONS)}")
        for name in ("epochs", "batch_size", "lr_step", "beam_size", "min_word_count"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        # each optimiser setting on its own, so the message names the value that is wrong
        checks = (("lr", self.lr > 0, "> 0"), ("weight_decay", self.weight_decay >= 0, ">= 0"),
                  ("lr_gamma", 0 < self.lr_gamma <= 1, "in (0, 1]"),
                  ("warmup_fraction", 0 <= self.warmup_fraction < 1, "in [0, 1)"), ("plm_lr", self.plm_lr > 0, "> 0"),
                  ("plm_weight_decay", self.plm_weight_decay >= 0, ">= 0"),
                  ("clip_grad_norm", self.clip_grad_norm >= 0, ">= 0 (0: no clipping)"))
        for name, ok, valid in checks:
            if not ok:
                raise ValueError(f"{name} must be {valid}, got {getattr(self, name):g}")
        if self.selection not in SELECTIONS:
            raise ValueError(f"unknown selection {self.selection!r}; valid: {', '.join(SELECTIONS)}")
        if self.model.problem_vector != "final_state" and self.solver not in PROBLEM_VECTOR_SOLVERS:
            raise ValueError(f"model.problem_vector {self.model.problem_vector!r} is read by "
                             f"{', '.join(PROBLEM_VECTOR_SOLVERS)} only, not {self.solver}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; valid: {', '.join(OPTIMIZERS)}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"unknown lr_schedule {self.lr_schedule!r}; valid: {', '.join(LR_SCHEDULES)}")

    @property
    def variant(self) -> str:
        """The run's arm: `base`, or the PseDual expression encoder's name (the tables' `variant`)."""
        return BASE if self.psedual is None else self.psedual.expression_encoder

    def steps_per_epoch(self, n_train: int) -> int:
        """Optimiser steps per epoch over `n_train` training problems: the schedules' horizon is
        this times the epochs."""
        return math.ceil(n_train / self.batch_size)

    def flat(self) -> dict[str, object]:
        """One level of keys (`data.fold`, `model.hidden_size`, `psedual.fusion`, `lr`, ...), for
        tables; a run without PseDual has the `psedual.*` keys, all None."""
        out: dict[str, object] = {}
        for key, value in asdict(self).items():
            if key == "psedual" and value is None:
                value = {k: None for k in asdict(PseDualConfig())}
            if isinstance(value, dict):
                out.update({f"{key}.{k}": v for k, v in value.items()})
            else:
                out[key] = value
        return out

    @classmethod
    def field_hints(cls) -> dict[str, object]:
        """The keys of `flat()` with their types as annotated (`int | None`, `Literal[...]`, ...),
        resolved: the result tables derive their columns' Arrow types from these."""
        nested = {"data": DataConfig, "model": SolverConfig, "psedual": PseDualConfig}
        out = {name: t for name, t in get_type_hints(cls).items() if name not in nested}
        for prefix, sub in nested.items():
            out.update({f"{prefix}.{name}": t for name, t in get_type_hints(sub).items()})
        return out

    @classmethod
    def field_types(cls) -> dict[str, str]:
        """The keys of `flat()` with their annotations' names (`"int | None"`, ...), for sweep
        validation."""
        return {name: _type_name(t) for name, t in cls.field_hints().items()}

    @classmethod
    def flat_keys(cls) -> dict[str, str]:
        """The dotted keys `from_flat` takes, with their types' names: `flat()`'s keys, with
        `variant` in place of `psedual.expression_encoder`."""
        return {**{k: v for k, v in cls.field_types().items() if k != VARIANT_KEY}, "variant": "str"}

    @classmethod
    def from_flat(cls, flat: dict) -> TrainConfig:
        """The config of flat dotted keys (`lr`, `data.fold`, `psedual.fusion`, `variant`), as a
        sweep trial, `psedual train` and a runs-table row give them; unknown keys fail."""
        if VARIANT_KEY in flat:
            raise ValueError(f"{VARIANT_KEY} is set through `variant` (base or an expression encoder's name)")
        valid = cls.flat_keys()
        unknown = sorted(set(flat) - set(valid))
        if unknown:
            raise ValueError(f"unknown keys {unknown}; valid: {', '.join(sorted(valid))}")
        parts: dict[str, dict] = {"": {}, "data": {}, "model": {}, "psedual": {}}
        for key, value in flat.items():
            prefix, _, name = key.rpartition(".")
            if key != "variant":
                parts[prefix][name] = value
        variant = flat.get("variant", BASE)
        check_variant(variant)
        psedual = None if variant == BASE else PseDualConfig(**{**parts["psedual"], "expression_encoder": variant})
        return cls(data=DataConfig(**parts["data"]), model=SolverConfig(**parts["model"]), psedual=psedual,
                   **parts[""])

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        psedual = PseDualConfig(**d["psedual"]) if d.get("psedual") is not None else None
        return cls(**{**d, "data": DataConfig(**d["data"]), "model": SolverConfig(**d["model"]), "psedual": psedual})
