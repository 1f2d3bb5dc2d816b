"""Solvers behind one interface (`interface.Solver`), by name."""

from __future__ import annotations

from psedual.solvers.dns import DNS, DNSConfig
from psedual.solvers.graph2tree import Graph2Tree
from psedual.solvers.gts import GTS, GTSConfig

SOLVERS = {"gts": (GTS, GTSConfig), "dns": (DNS, DNSConfig), "graph2tree": (Graph2Tree, GTSConfig)}


def get_solver(name: str):
    """(model class, config class) of a solver; an unknown name lists the valid ones."""
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r}; valid names: {', '.join(SOLVERS)}")
    return SOLVERS[name]
