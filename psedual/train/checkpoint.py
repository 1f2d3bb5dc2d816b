"""Checkpoints: model, optimiser, schedule, RNG states and history, written atomically.

A checkpoint carries its solver name, solver config and vocabulary, so `solve`
needs nothing else, and loading it for a different solver or vocabulary fails
with a message saying what differs (not a tensor-shape error).

A checkpoint is read with `weights_only=True`: a pickle may name any function to call while
it is read, so a `.pt` from elsewhere could run code. Everything saved here is therefore
tensors and plain values (dicts, lists, tuples, strings, numbers, None; the vocabulary as a
JSON string), which torch's restricted unpickler accepts; a file holding anything else is
refused unread, in one line naming it.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import torch

from psedual.atomic import atomic_write
from psedual.solvers import get_solver, hub
from psedual.solvers.config import SolverConfig
from psedual.solvers.vocab import Vocab, VocabularyError


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, or does not fit."""


def save(path: Path, state: dict) -> None:
    atomic_write(path, lambda stream: torch.save(state, stream))


def load(path: Path) -> dict:
    if not path.is_file():
        what = ("is a folder, not a checkpoint file" if path.is_dir() else
                "is not a regular file (a pipe, a socket or a device)" if path.exists() else
                "is a dangling symbolic link" if path.is_symlink() else "checkpoint not found")
        raise CheckpointError(f"{path}: {what}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many types for a corrupt file; name the file either way
        named = _named_global(err)
        if named is not None:  # the restricted unpickler met a callable a pickle could have run
            raise CheckpointError(f"{path}: refused: it holds objects other than tensors and plain values, which "
                                  f"could run code when read ({named}); PseDual's checkpoints never do") from None
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(err).__name__}: {_first_line(err)})") from None
    missing = {"solver", "solver_config", "vocab", "model"} - set(state) if isinstance(state, dict) else {"all"}
    if missing:
        raise CheckpointError(f"{path}: not a PseDual checkpoint (missing {sorted(missing)})")
    return state


def _advice(line: str) -> bool:
    """A line of torch's unpickling refusal that is advice, not what it met (it even suggests
    loading with weights_only=False)."""
    return any(w in line for w in ("weights_only", "Weights only", "Please file an issue", "documentation"))


def _named_global(err: Exception) -> str | None:
    """The line of a weights_only refusal naming the global (a callable) the pickle asked for."""
    if not isinstance(err, pickle.UnpicklingError):
        return None
    return next((line.strip() for line in str(err).splitlines() if "global" in line.lower() and not _advice(line)),
                None)


def _first_line(err: Exception) -> str:
    """One line of an error message, advice left out and long ones cut."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip() and not _advice(line)]
    shown = lines[0] if lines else type(err).__name__
    return shown if len(shown) <= 300 else shown[:300] + "..."


ENCODER_FILES = "encoder_files"
"""A checkpoint's copy of its pretrained encoder's config and tokenizer files (name -> bytes)."""


def model_state(model) -> dict:
    """What rebuilds `model`: its solver, config, vocabulary and weights and, for a solver with a
    pretrained encoder, that encoder's config and tokenizer (so no other file is needed)."""
    state = {"solver": model.name, "solver_config": asdict(model.config), "vocab": model.vocab.to_json(),
             "model": model.state_dict()}
    if model.reads_subwords:
        from psedual.solvers.plm import encoder_files

        state[ENCODER_FILES] = encoder_files(model.config.plm)
    return state


@contextmanager
def encoder_of(state: dict, path: Path) -> Iterator[None]:
    """Within the block, the checkpoint's encoder name reads the checkpoint's own copy of its config
    and tokenizer (`hub.stand_in`); a checkpoint without one (no pretrained encoder, or saved before
    checkpoints kept it) reads the encoder where its name points."""
    files = state.get(ENCODER_FILES) if isinstance(state, dict) else None
    if files is None:
        yield
        return
    name = state.get("solver_config", {}).get("plm") if isinstance(state.get("solver_config"), dict) else None
    bad = [k for k, v in files.items() if not isinstance(k, str) or not isinstance(v, bytes) or not k
           or k != Path(k).name or k.startswith(".")] if isinstance(files, dict) else ["(not a mapping)"]
    if bad or not isinstance(name, str) or "config.json" not in files:
        raise CheckpointError(f"{path}: its {ENCODER_FILES} are not an encoder's config and tokenizer files "
                              f"(names: {', '.join(map(repr, bad[:3])) or 'no config.json'})")
    with tempfile.TemporaryDirectory(prefix="psedual-encoder-") as d:
        for file_name, data in files.items():
            (Path(d) / file_name).write_bytes(data)
        with hub.stand_in(name, d):
            yield


def check(state: dict, path: Path, expect_solver: str | None = None, expect_vocab: Vocab | None = None) -> Vocab:
    """The checkpoint's vocabulary, refusing one made for another solver or vocabulary."""
    if expect_solver is not None and state["solver"] != expect_solver:
        raise CheckpointError(f"{path}: checkpoint is for solver {state['solver']!r}, not {expect_solver!r}")
    try:  # the right keys with foreign contents: a JSON error or a wrong type, in one line naming the file
        vocab = Vocab.from_json(state["vocab"])
    except (ValueError, TypeError, KeyError, VocabularyError) as err:
        raise CheckpointError(f"{path}: its vocabulary is not a PseDual vocabulary ({type(err).__name__}: "
                              f"{_first_line(err)})") from None
    if expect_vocab is not None and vocab != expect_vocab:
        diff = [k for k in ("words", "constants", "max_slots", "operators")
                if getattr(vocab, k) != getattr(expect_vocab, k)]
        raise CheckpointError(f"{path}: checkpoint vocabulary differs from this run's in {', '.join(diff)}")
    return vocab


def build_model(state: dict, path: Path, expect_solver: str | None = None, expect_vocab: Vocab | None = None):
    """The model stored in a checkpoint (see `check` for what is refused)."""
    vocab = check(state, path, expect_solver, expect_vocab)
    try:
        solver, config = get_solver(state["solver"]), SolverConfig(**state["solver_config"])
        with encoder_of(state, path):
            _check_shapes(solver, vocab, config, state["model"], path)
            model = solver(vocab, config)
        model.load_state_dict(state["model"])
    except CheckpointError:  # already one line naming the file
        raise
    except (ValueError, TypeError, RuntimeError, KeyError, AttributeError, VocabularyError) as err:
        raise CheckpointError(f"{path}: cannot rebuild the model ({type(err).__name__}: {_first_line(err)})") from None
    return model


def _check_shapes(solver, vocab: Vocab, config: SolverConfig, weights: object, path: Path) -> None:
    """Refuse a checkpoint whose config does not fit its own weights before the model is built: a
    config asking for a 100,000-wide layer beside small weights made the real build allocate
    gigabytes (or all of memory) before `load_state_dict` could refuse it. The model is first
    built on torch's meta device, which allocates nothing. A solver that reads a pretrained
    encoder cannot be built there (`from_pretrained` refuses); its encoder's size is the
    pretrained model's, and the real build's `load_state_dict` checks the rest."""
    try:
        with torch.device("meta"):
            shell = solver(vocab, config)
    except (RuntimeError, ValueError, TypeError, NotImplementedError):  # see above: built for real, as before
        return
    if not isinstance(weights, dict):
        return  # load_state_dict refuses it, in one line
    want = {k: tuple(v.shape) for k, v in shell.state_dict().items()}
    have = {k: tuple(v.shape) for k, v in weights.items() if isinstance(v, torch.Tensor)}
    wrong = next((k for k in sorted(want.keys() | have.keys()) if want.get(k) != have.get(k)), None)
    if wrong is not None:
        raise CheckpointError(f"{path}: its solver config {asdict(config)} does not fit its weights ({wrong}: "
                              f"the config makes {want.get(wrong, 'no such weight')}, the file holds "
                              f"{have.get(wrong, 'none')}); the model was not built")


def restore(module, state: dict, key: str, path: Path) -> None:
    """Load `state[key]` (e.g. the reexaminer's weights) into `module`, or one line naming the
    checkpoint: the key missing, or weights that do not fit (a checkpoint of another run)."""
    try:
        module.load_state_dict(state[key])
    except (KeyError, TypeError, RuntimeError, AttributeError, ValueError) as err:
        raise CheckpointError(f"{path}: cannot restore its {key!r} ({type(err).__name__}: {_first_line(err)})") from None


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
