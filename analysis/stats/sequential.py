"""Seeds until decided: a group-sequential design for paired seed differences (treatment − base, in
points of accuracy) whose error rates hold when a study looks after each round of seeds and stops at
the first decision. This module is its one name for callers (`psedual.seed_rounds`, bench/
sequential_sim.py, the tests); the parts live apart, each with one purpose:

- `analysis.stats.boundaries`: the design (`SequentialDesign`, its look `schedule`, the `SPENDING`
  functions) and its boundaries, normal theory (gsDesign's recursive integration) calibrated to the
  t statistics at each look's seeds (`boundaries`, shown by `calibration`);
- `analysis.stats.decisions`: what a look decides (`decisions`, one path for a study and for many),
  its `Look` with its verdict (`decide`) and a study's looks until its first decision (`run_looks`);
- `analysis.stats.margins`: the margins a user could mean (`check_margin`), the default margin and
  why (`default_margin`), and the one-sided test at a target Δ (`below_target`);
- `analysis.stats.operating`: many studies through a design at once (`simulate`) and its operating
  characteristics at one true Δ (`operating`).

docs/analysis.md ("Seeds until decided") states the rules; bench/sequential_sim.py checks the
decisions by simulation.
"""

from __future__ import annotations

from analysis.stats.boundaries import (DECISIONS, SPENDING, Boundaries, SequentialDesign, Spending, boundaries,
                                       calibration, fraction, normal_boundaries, null_t, schedule, spent)
from analysis.stats.decisions import Decisions, Look, decide, decisions, run_looks
from analysis.stats.margins import (MARGIN_CEILING, MARGIN_FLOOR, UNIT, below_target, check_margin, default_margin,
                                    said_against)
from analysis.stats.operating import Operating, Outcomes, operating, simulate

__all__ = ["DECISIONS", "MARGIN_CEILING", "MARGIN_FLOOR", "SPENDING", "UNIT", "Boundaries", "Decisions", "Look",
           "Operating", "Outcomes", "SequentialDesign", "Spending", "below_target", "boundaries", "calibration",
           "check_margin", "decide", "decisions", "default_margin", "fraction", "normal_boundaries", "null_t",
           "operating", "run_looks", "said_against", "schedule", "simulate", "spent"]
