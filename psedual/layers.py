"""The layer order the package reads in: every import of psedual or analysis code points down it,
and within analysis down its rooms.

tests/test_layers.py checks every import against this, and tests/test_readme.py checks the
README's Layout list against it; neither restates the order.
"""

from __future__ import annotations

LAYERS = {
    "psedual.atomic": 0, "psedual.storage": 0, "psedual.layers": 0, "psedual.extras": 0, "psedual.sweeps": 0,
    "psedual.option_errors": 0,
    "psedual.data": 1, "psedual.metrics": 2, "psedual.solvers": 3, "psedual.reexamine": 4,
    "psedual.train.config": 5, "psedual.results": 6, "psedual.train": 7, "psedual.llm": 8, "psedual.tune": 8,
    "analysis": 9, "psedual.job": 10, "psedual.job_options": 10, "psedual.paper_job": 10, "psedual.power_plan": 10,
    "psedual.seed_rounds": 10, "psedual.comparisons": 10,
    "psedual.typed_cli": 11, "psedual.readme": 11, "psedual.cli": 12, "psedual": 12,
}
"""A module's layer is its longest prefix here. Modules may import their own layer's and lower ones.
A run's config (`psedual.train.config`) sits below the results, whose rows hold its columns; the
results (a run folder's files, every row and table) sit below the trainer, which writes through them."""

ROOMS = {
    "analysis.tables": 0, "analysis.stats": 1, "analysis.checks": 2, "analysis.claims": 3, "analysis.report": 4,
    "analysis": 5,
}
"""Within the `analysis` layer, its rooms in the order they read (a module's room is its longest
prefix here): the tables read and rendered, the statistics, the checks on runs, the claims and their
verdicts, what the report shows, and at the top the commands (`analysis.cli`, its options, its errors,
the presets and the paper report). A module of analysis may import its own room's and lower ones."""
