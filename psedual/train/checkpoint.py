"""Checkpoints: model, optimiser, schedule, RNG states and history, written atomically.

A checkpoint carries its solver name, solver config and vocabulary, so `solve`
needs nothing else, and loading it for a different solver or vocabulary fails
with a message saying what differs (not a tensor-shape error).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import torch

from psedual.atomic import atomic_write
from psedual.solvers import get_solver
from psedual.solvers.config import SolverConfig
from psedual.solvers.vocab import Vocab, VocabularyError


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, or does not fit."""


def save(path: Path, state: dict) -> None:
    atomic_write(path, lambda stream: torch.save(state, stream))


def load(path: Path) -> dict:
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint not found")
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # torch raises many types for a corrupt file; name the file either way
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(err).__name__}: {err})") from None
    missing = {"solver", "solver_config", "vocab", "model"} - set(state) if isinstance(state, dict) else {"all"}
    if missing:
        raise CheckpointError(f"{path}: not a PseDual checkpoint (missing {sorted(missing)})")
    return state


def model_state(model) -> dict:
    return {"solver": model.name, "solver_config": asdict(model.config), "vocab": model.vocab.to_json(),
            "model": model.state_dict()}


def check(state: dict, path: Path, expect_solver: str | None = None, expect_vocab: Vocab | None = None) -> Vocab:
    """The checkpoint's vocabulary, refusing one made for another solver or vocabulary."""
    if expect_solver is not None and state["solver"] != expect_solver:
        raise CheckpointError(f"{path}: checkpoint is for solver {state['solver']!r}, not {expect_solver!r}")
    vocab = Vocab.from_json(state["vocab"])
    if expect_vocab is not None and vocab != expect_vocab:
        diff = [k for k in ("words", "constants", "max_slots", "operators")
                if getattr(vocab, k) != getattr(expect_vocab, k)]
        raise CheckpointError(f"{path}: checkpoint vocabulary differs from this run's in {', '.join(diff)}")
    return vocab


def build_model(state: dict, path: Path, expect_solver: str | None = None, expect_vocab: Vocab | None = None):
    """The model stored in a checkpoint (see `check` for what is refused)."""
    vocab = check(state, path, expect_solver, expect_vocab)
    try:
        model = get_solver(state["solver"])(vocab, SolverConfig(**state["solver_config"]))
        model.load_state_dict(state["model"])
    except (ValueError, TypeError, RuntimeError, VocabularyError) as err:
        raise CheckpointError(f"{path}: cannot rebuild the model ({err})") from None
    return model


def rng_fields(rngs: list[tuple]) -> dict:
    """`last.pt`'s RNG entries from every rank's (CPU, CUDA or None) states: rank 0's as `rng` and
    `cuda_rng` (what one process restores), and all of them by rank."""
    return {"rng": rngs[0][0], "cuda_rng": rngs[0][1], "rng_by_rank": [r[0] for r in rngs],
            "cuda_rng_by_rank": [r[1] for r in rngs]}


def rank_rng(state: dict, rank: int, world_size: int) -> tuple:
    """(CPU, CUDA or None) RNG states for `rank` to restore: its own, where the checkpoint holds
    one per rank of this many ranks; else rank 0's (a checkpoint from before they were saved per
    rank, or from another number of ranks)."""
    by_rank = state.get("rng_by_rank")
    if by_rank is not None and len(by_rank) == world_size:
        return by_rank[rank], state["cuda_rng_by_rank"][rank]
    return state["rng"], state.get("cuda_rng")
