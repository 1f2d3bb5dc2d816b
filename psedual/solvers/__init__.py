"""Solvers behind one interface (`interface.Solver`), by name: the built-in ones, and any other
package's registered through the `psedual.solvers` entry-point group."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Literal

from psedual.solvers.bert_tree import BertTree
from psedual.solvers.dns import DNS
from psedual.solvers.graph2tree import Graph2Tree
from psedual.solvers.re_deduction import REDeduction
from psedual.solvers.gts import GTS

BUILT_IN = {"gts": GTS, "dns": DNS, "graph2tree": Graph2Tree, "bert_tree": BertTree, "re_deduction": REDeduction}
"""The solvers of this package (the README's table lists these)."""
ENTRY_POINTS = "psedual.solvers"
"""The entry-point group through which another package registers a solver, without a fork:
`NAME = "module:Class"` under `[project.entry-points."psedual.solvers"]` in its pyproject.toml
(docs/solvers.md). Every process that imports this module finds them (a Ray worker included), as
installed packages or on PYTHONPATH."""
PROTOCOL = ("name", "reads_subwords", "may_leave_parameters_unused", "pretrained_parameters", "encode",
            "slot_states", "loss", "loss_terms", "rollout", "decode")
"""What a registered class must have (`interface.Solver`), checked when it is loaded."""
SOLVERS = dict(BUILT_IN)
"""Name -> solver class (an `interface.Solver`: built from a Vocab and a SolverConfig): the built-in
ones, then the entry points'. Adding a solver: docs/solvers.md."""


def get_solver(name: str):
    """The class of a solver; an unknown name lists the valid ones."""
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r}; valid names: {', '.join(SOLVERS)}")
    return SOLVERS[name]


def registered(group: str = ENTRY_POINTS) -> dict[str, type]:
    """The solver classes other packages register under `group`, each checked: a name taken twice,
    a class that cannot be imported or lacks the protocol is an ImportError naming the entry point."""
    out: dict[str, type] = {}
    for ep in entry_points(group=group):
        where = f"solver {ep.name!r} (entry point `{ep.value}` of {ep.dist.name if ep.dist else 'an unknown package'})"
        if ep.name in BUILT_IN or ep.name in out:
            raise ImportError(f"{where}: the name {ep.name!r} is taken; registered: {', '.join([*BUILT_IN, *out])}")
        try:
            cls = ep.load()
        except (ImportError, AttributeError) as err:
            raise ImportError(f"{where}: cannot be loaded: {err}") from err
        missing = [attr for attr in PROTOCOL if not hasattr(cls, attr)]
        if not isinstance(cls, type) or missing:
            raise ImportError(f"{where}: not a solver class (interface.Solver); missing: {', '.join(missing) or 'a class'}")
        if cls.name != ep.name:
            raise ImportError(f"{where}: its class says name = {cls.name!r}; checkpoints store the name: make them agree")
        out[ep.name] = cls
    return out


# after get_solver: an entry point's module may import this package's modules while it loads
SOLVERS.update(registered())
SolverName = Literal[tuple(SOLVERS)]  # the configs' annotation: the CLI lists the registry's names
