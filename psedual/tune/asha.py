"""ASHA within each arm: Ray Tune's ASHA scheduler, with one set of rungs per value of a key.

Plain ASHA ranks every trial at a rung against every other. In an ablation the arms do not start
alike: a PseDual trial trains under teacher-forced fusion and an extra loss at first, so at epoch 3
it trails the base solver whatever it would reach at the end, and a shared rung stops it for that.
Here a trial is ranked only against trials of its own arm (its `variant` by default), so each arm
keeps its best configurations at an equal budget and the arms are compared at the end, not early.
"""

from __future__ import annotations

import copy

from ray.tune.schedulers import ASHAScheduler


class ArmASHA(ASHAScheduler):
    """`ASHAScheduler` whose rungs are kept per value of `arm_key` in a trial's config."""

    def __init__(self, arm_key: str, **asha) -> None:
        super().__init__(**asha)
        self._arm_key = arm_key
        self._unused = copy.deepcopy(self._brackets)  # empty rungs, copied for each new arm
        self._by_arm: dict[str, list] = {}

    def on_trial_add(self, tune_controller, trial) -> None:
        # ASHA files a new trial under one of `self._brackets`: point it at this arm's own
        arm = repr(trial.config.get(self._arm_key))
        self._brackets = self._by_arm.setdefault(arm, copy.deepcopy(self._unused))
        super().on_trial_add(tune_controller, trial)

    def debug_string(self) -> str:
        return "\n".join(f"{self._arm_key}={arm}: " + "; ".join(b.debug_str() for b in brackets)
                         for arm, brackets in self._by_arm.items()) or "ArmASHA: no trials yet"
