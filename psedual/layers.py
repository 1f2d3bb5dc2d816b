"""The layer order the package reads in: every import of psedual or analysis code points down it.

tests/test_layers.py checks every import against this, and tests/test_readme.py checks the
README's Layout list against it; neither restates the order.
"""

from __future__ import annotations

LAYERS = {
    "psedual.atomic": 0, "psedual.storage": 0, "psedual.layers": 0, "psedual.extras": 0, "psedual.sweeps": 0,
    "psedual.data": 1, "psedual.metrics": 2, "psedual.solvers": 3, "psedual.reexamine": 4, "psedual.train": 5,
    "psedual.llm": 6, "psedual.tune": 6, "psedual.results": 7, "analysis": 8, "psedual.job": 9, "psedual.paper_job": 9, "psedual.power_plan": 9,
    "psedual.typed_cli": 10, "psedual.readme": 10, "psedual.cli": 11, "psedual": 11,
}
"""A module's layer is its longest prefix here. Modules may import their own layer's and lower ones."""
