"""Typed configuration of one training run; the CLI and the sweeps both build it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from psedual.data.config import DataConfig
from psedual.solvers import get_solver


@dataclass(frozen=True)
class TrainConfig:
    """One run: data, solver and the published GTS recipe as defaults."""

    data: DataConfig = field(default_factory=lambda: DataConfig("mawps", fold=0))
    """Which problems to train, validate and test on."""
    solver: str = "gts"
    """Registry name of the solver."""
    embedding_size: int = 128
    """Word and operator embedding size."""
    hidden_size: int = 512
    """Encoder and decoder hidden size."""
    layers: int = 2
    """Encoder GRU layers."""
    dropout: float = 0.5
    """Dropout probability."""
    epochs: int = 80
    """Passes over the training set."""
    batch_size: int = 64
    """Problems per optimisation step."""
    lr: float = 1e-3
    """Adam learning rate."""
    weight_decay: float = 1e-5
    """Adam weight decay."""
    lr_step: int = 20
    """The learning rate is multiplied by lr_gamma every lr_step epochs."""
    lr_gamma: float = 0.5
    """Learning-rate decay factor."""
    min_word_count: int = 1
    """Words seen fewer times in training are UNK."""
    beam_size: int = 5
    """Beam width for validation and test decoding."""
    seed: int = 0
    """Seeds initialisation, shuffling and dropout."""
    threads: int = 0
    """torch CPU threads; 0 keeps torch's default."""

    def __post_init__(self) -> None:
        get_solver(self.solver)
        for name in ("embedding_size", "hidden_size", "layers", "epochs", "batch_size", "lr_step", "beam_size",
                     "min_word_count"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.lr <= 0 or self.weight_decay < 0 or not 0 < self.lr_gamma <= 1:
            raise ValueError(f"bad optimiser settings: lr={self.lr}, weight_decay={self.weight_decay}, "
                             f"lr_gamma={self.lr_gamma}")

    def solver_config(self):
        _, config_cls = get_solver(self.solver)
        return config_cls(self.embedding_size, self.hidden_size, self.layers, self.dropout)

    def flat(self) -> dict[str, object]:
        """One level of keys (`data.fold`, `lr`, ...), for tables."""
        out = {f"data.{k}": v for k, v in asdict(self.data).items()}
        out.update({k: v for k, v in asdict(self).items() if k != "data"})
        return out

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        return cls(**{**d, "data": DataConfig(**d["data"])})
