"""A run folder protected by what it holds: a run starting in it must be the run its config.json says.

The trainer's guard looked at one file: a folder whose `last.pt` was deleted (to save space, or
by a cleanup) was taken for an empty one, and another config's run replaced its best.pt,
config.json and tables without a word. Here the folder's own config is compared with the new
run's: the same config starts again as before, another one is refused, naming the folder and
the first keys that differ.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from psedual.results.folder import CONFIG, DATA, ENV, FILES, RunFolder
from psedual.train.checkpoint import CheckpointError
from psedual.train.config import TrainConfig

CONFIG_FILE = CONFIG
"""The run's config, written before its first epoch (`trainer._start_outputs`)."""
OUTPUTS = tuple(f.name for f in FILES if f.trained is not None and f.name not in (CONFIG, DATA, ENV))
"""What a run leaves in its folder besides its config and notes: a folder holding any of them holds a run."""
SHOWN_KEYS = 3
"""Differing keys named in the error line (a different data set differs in many)."""


def check_run_folder(folder: RunFolder | Path, config: TrainConfig) -> None:
    """Refuse to start `config`'s run in `out` when `out` holds another run: one whose config.json
    is another config (`device` aside: a run may move), cannot be read as a run's config, or is
    missing beside a run's outputs. A folder without any, or with this config's, passes (the
    caller decides between resuming and starting again)."""
    out = folder.path if isinstance(folder, RunFolder) else Path(folder)
    path = out / CONFIG_FILE
    if not path.is_file():
        held = [name for name in OUTPUTS if (out / name).exists()]
        if held:
            raise CheckpointError(f"{out} holds a run ({', '.join(held)}) but no {CONFIG_FILE}: which config trained "
                                  "it cannot be told; use a new output folder (--out), or move those files away")
        return
    try:
        saved = TrainConfig.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) \
            as err:  # not JSON, or JSON of something else: either way not this run's
        raise CheckpointError(f"{path}: not a run's config ({type(err).__name__}: {' '.join(str(err).split())[:200]}); "
                              f"{out} may hold another run: use a new output folder (--out)") from None
    if replace(saved, device=config.device) == config:
        return
    ours, theirs = config.flat(), saved.flat()
    differ = [key for key in ours if key != "device" and ours[key] != theirs.get(key)]
    if config.variant != saved.variant:  # named as the arm; a base run has no psedual.* values at all
        either_base = None in (config.psedual, saved.psedual)
        differ = ["variant", *(k for k in differ if not (k == "psedual.expression_encoder"
                                                          or (either_base and k.startswith("psedual."))))]
    named = "; ".join(f"{k}: {_value(saved, theirs, k)} there, {_value(config, ours, k)} here"
                      for k in differ[:SHOWN_KEYS])
    more = f" (and {len(differ) - SHOWN_KEYS} more)" if len(differ) > SHOWN_KEYS else ""
    raise CheckpointError(f"{out} holds the run of another config ({named}{more}); starting here would replace "
                          f"its best.pt, {CONFIG_FILE} and tables: use a new output folder (--out), or that run's "
                          "own options")


def _value(config: TrainConfig, flat: dict, key: str) -> object:
    return config.variant if key == "variant" else flat.get(key)
