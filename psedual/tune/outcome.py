"""What a sweep trial left, as `psedual.tune.sweep` returns it; the tests after the sweep
(`psedual.tune.evaluate`) turn it into the result tables' rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # an annotation only: reading outcomes needs no Ray
    from ray.train import Checkpoint


@dataclass
class TrialOutcome:
    """What one sweep trial left."""

    trial: str
    """Tune's trial id."""
    flat: dict
    """The trial's config as dotted keys, its arm's expanded (`TrainConfig.from_flat` builds it)."""
    status: str
    """`completed`, `stopped` (by ASHA before its last epoch), `lost` (its node died under it) or
    `error` (a failure, or left unfinished by a stopped sweep: `sweep.unfinished_line`)."""
    metrics: dict
    """Last reported validation metrics (empty if none)."""
    checkpoint: Checkpoint | None
    """Ray's checkpoint holding the run folder with `best.pt`; None if the trial left none."""
    error: str | None
    """`Type: message` of the exception that ended the trial, or None."""
