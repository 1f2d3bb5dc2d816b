"""Solvers behind one interface (`interface.Solver`), by name."""

from __future__ import annotations

from typing import Literal

from psedual.solvers.bert_tree import BertTree
from psedual.solvers.dns import DNS
from psedual.solvers.graph2tree import Graph2Tree
from psedual.solvers.re_deduction import REDeduction
from psedual.solvers.gts import GTS

SOLVERS = {"gts": GTS, "dns": DNS, "graph2tree": Graph2Tree, "bert_tree": BertTree, "re_deduction": REDeduction}
"""Name -> solver class (an `interface.Solver`: built from a Vocab and a SolverConfig). Adding a
solver: docs/solvers.md."""
SolverName = Literal[tuple(SOLVERS)]  # the configs' annotation: the CLI lists the registry's names


def get_solver(name: str):
    """The class of a solver; an unknown name lists the valid ones."""
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r}; valid names: {', '.join(SOLVERS)}")
    return SOLVERS[name]
