"""Solvers behind one interface (`interface.Solver`), by name."""

from __future__ import annotations

from typing import Literal

from psedual.solvers.bert_tree import BertTree
from psedual.solvers.config import SolverConfig
from psedual.solvers.dns import DNS
from psedual.solvers.graph2tree import Graph2Tree
from psedual.solvers.re_deduction import REDeduction
from psedual.solvers.gts import GTS

# name -> (model class, config class); every solver takes a Vocab and its config.
SOLVERS = {"gts": (GTS, SolverConfig), "dns": (DNS, SolverConfig), "graph2tree": (Graph2Tree, SolverConfig),
           "bert_tree": (BertTree, SolverConfig), "re_deduction": (REDeduction, SolverConfig)}
SolverName = Literal[tuple(SOLVERS)]  # the configs' annotation: the CLI lists the registry's names


def get_solver(name: str):
    """(model class, config class) of a solver; an unknown name lists the valid ones."""
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r}; valid names: {', '.join(SOLVERS)}")
    return SOLVERS[name]
