"""A table rendered as Markdown (pipes) or LaTeX (booktabs), and what goes in its cells: an arm's
label, a p-value, a score, a significance mark. The bottom of the analysis: every room may use it."""

from __future__ import annotations

import math
from typing import Literal, get_args

from psedual.reexamine.config import VARIANT_LABELS

Format = Literal["markdown", "latex"]
FORMATS = get_args(Format)
ARM_LABELS = {**VARIANT_LABELS,
              "teacher_forcing": "teacher forcing", "scheduled": "scheduled fusion", "predicted": "predicted only",
              "horizon": "ε horizon (ours)", "epoch": "ε per epoch (published)",
              "other_problem": "another problem's expression", "no_expression": "no expression"}


def label(arm: str) -> str:
    return ARM_LABELS.get(arm, arm)


def mark(p_adjusted: float | None) -> str:
    if p_adjusted is None or math.isnan(p_adjusted):
        return ""
    return "**" if p_adjusted < 0.01 else "*" if p_adjusted < 0.05 else ""


def p_value(p: float | None) -> str:
    """A p-value for reading: 3 significant digits, and never a bare 0 (an exact p that small
    underflows: say how small instead)."""
    if p is None:
        return "–"
    return "< 1e-300" if p == 0 else f"{p:.3g}"


def dash(reason: str) -> str:
    """An empty cell that says why it is empty: '– (no spread)'. No table shows a bare '–'."""
    return f"– ({reason})"


def untested(row) -> str:
    """Why a claim row (a `Claim` or a row's dict) has no p, CI or TOST: no spread, else untested."""
    get = row.get if hasattr(row, "get") else lambda k: getattr(row, k, None)
    return "no spread" if get("untestable") or get("delta_sd") == 0 else "untested"


def score(mean: float, sd: float | None) -> str:
    return f"{mean:.2f}" if sd is None else f"{mean:.2f} ± {sd:.2f}"


def render(header: list[str], body: list[list[str]], fmt: str) -> str:
    """A table as Markdown (pipes) or LaTeX (booktabs)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; valid: {', '.join(FORMATS)}")
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in body])

    def tex(cell: str) -> str:
        for a, b in (("\\", r"\textbackslash{}"), ("_", r"\_"), ("%", r"\%"), ("&", r"\&"), ("#", r"\#"),
                     ("±", r"$\pm$"), ("Δ", r"$\Delta$"), ("−", "$-$")):
            cell = cell.replace(a, b)
        return cell

    lines = [r"\begin{tabular}{" + "l" * 2 + "r" * (len(header) - 2) + "}", r"\toprule",
             " & ".join(tex(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(tex(c) for c in row) + r" \\" for row in body]
    return "\n".join(lines + [r"\bottomrule", r"\end{tabular}"])
