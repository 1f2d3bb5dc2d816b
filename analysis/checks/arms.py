"""What an arm is, read from its runs: flags for an arm that is not what its name says.

A control arm (`psedual.control` other than `none`: its infiller reads another problem's expression, or
none) is a control, not the method: its name says so wherever it is shown (`named`, `short_names`),
and no paper figure of the method stands beside it.

A scheduled-fusion arm whose ε ends above the platform's near-teacher-forcing threshold
(`psedual.reexamine.config.NEAR_TEACHER_FORCING`, the threshold its runs warn at) gives the predicted
expression a weight of at most 1 − ε: it is close to teacher forcing, whatever its schedule's name.
The runs table records ε at each run's last step (`final_epsilon`), so the flag reads what the run
did, not what today's code would compute from its config.
"""

from __future__ import annotations

import polars as pl

from analysis.checks import guardrails
from analysis.checks.guardrails import FOLD, SEED
from analysis.tables import text
from psedual.reexamine.config import NEAR_TEACHER_FORCING as WARN_ABOVE

FUSION = "psedual.fusion"
FINAL = "final_epsilon"
CONTROL = "psedual.control"


NO_EXPRESSION = "no_expression"
"""the control whose infiller reads no expression: ε, which weighs two expressions, means nothing for it"""


def controls(runs: pl.DataFrame) -> list[str]:
    """The controls (`psedual.control` other than `none`) an arm's runs hold, sorted."""
    if CONTROL not in runs.columns:
        return []
    return sorted({str(c) for c in runs[CONTROL].drop_nulls().to_list() if c != "none"})


def control_words(values) -> str:
    """'control: another problem's expression', for a name."""
    return "control: " + ", ".join(text.label(str(v)) for v in values)


def named(arm: str, control_arms, controls_said: str | None) -> str:
    """An arm's label, with `[control: ...]` where it is one of a claim's `control_arms` (its `controls`
    the claim's controls, `, `-joined): 'PseDual-GCN [control: another problem's expression]'; an arm
    whose value is itself the control (`--arm psedual.control`) reads '... [control]'."""
    shown = text.label(str(arm))
    if str(arm) not in tuple(control_arms or ()):
        return shown
    said = (controls_said or "").split(", ")
    return f"{shown} [control]" if str(arm) in said else f"{shown} [{control_words(said)}]"


def comparison(claim) -> str:
    """A claim's name, 'PseDual-GCN [control: another problem's expression] vs base': each arm by
    `named`; a claim from a table older than `control_arms` that holds a control says so after both."""
    name = f"{named(claim.treatment_arm, claim.control_arms, claim.controls)} vs " \
           f"{named(claim.base_arm, claim.control_arms, claim.controls)}"
    if claim.controls and not claim.control_arms:
        name += f" [{control_words(claim.controls.split(', '))}]"
    return name


def near_teacher_forcing(name: str, runs: pl.DataFrame) -> list[str]:
    """A flag when `runs` (one arm's) use scheduled fusion and ε ended above WARN_ABOVE in any of
    them; none for teacher forcing (ε = 1 is its definition), for runs whose infiller reads no
    expression (`no_expression`: nothing for ε to weigh) or tables without the columns."""
    if FUSION not in runs.columns or FINAL not in runs.columns:
        return []
    reads = pl.col(CONTROL).ne_missing(NO_EXPRESSION) if CONTROL in runs.columns else pl.lit(True)
    scheduled = runs.filter((pl.col(FUSION) == "scheduled") & pl.col(FINAL).is_not_null() & reads)
    high = scheduled.filter(pl.col(FINAL) > WARN_ABOVE)
    if high.is_empty():
        return []
    low, top = high[FINAL].min(), high[FINAL].max()
    ends = f"{low:.3f}" if round(low, 3) == round(top, 3) else f"{low:.3f}-{top:.3f}"
    return [f"near teacher forcing: {name} is scheduled fusion but its ε ends at {ends} > {WARN_ABOVE} in "
            f"{high.height} of {scheduled.height} run(s): the predicted expression weighs at most "
            f"{1 - low:.3f}; docs/psedual.md"]


def final_epsilon(runs: pl.DataFrame) -> str:
    """An arm's ε at the last step, for a report's arm line: '0.500', '0.904', 'teacher forcing'
    (1 by definition), '0.500-0.513' where its runs differ, '–' without PseDual or where the infiller
    reads no expression (`psedual.control no_expression`)."""
    if FINAL not in runs.columns:
        return "–"
    values = runs[FINAL].drop_nulls()
    if values.is_empty():
        return "–"
    if FUSION in runs.columns and set(runs[FUSION].drop_nulls().to_list()) == {"teacher_forcing"}:
        return "1 (teacher forcing)"
    if CONTROL in runs.columns and set(runs[CONTROL].drop_nulls().to_list()) == {"no_expression"}:
        return "– (reads no expression)"  # ε mixes two expressions' keys: this arm's infiller reads neither
    low, top = values.min(), values.max()
    return f"{low:.3f}" if round(low, 3) == round(top, 3) else f"{low:.3f}-{top:.3f}"


def short_names(runs: dict[str, pl.DataFrame]) -> dict[str, str]:
    """A short name per arm (`runs`: each arm's runs, by any key): its variant's label, then each
    setting it holds apart from most PseDual arms of the study ('PseDual-GCN, teacher forcing'),
    read from the config columns whose values differ between the arms."""
    frames = list(runs.values())
    columns = guardrails.config_columns(frames[0].columns, [SEED, FOLD, "experiment", "variant"])
    varying = [c for c in columns if c in set.intersection(*(set(f.columns) for f in frames))
               and len({tuple(sorted(map(str, f[c].unique().to_list()))) for f in frames}) > 1]
    out = {}
    for key, mine in runs.items():
        variant = str(mine["variant"][0])
        parts = [text.label(variant)]
        for col in varying:
            values = mine[col].drop_nulls().unique().to_list()
            others = [v for f in frames for v in f[col].drop_nulls().unique().to_list()]
            if len(values) != 1 or not others or str(values[0]) == variant:  # the encoder `variant` sets
                continue
            usual = max(set(others), key=others.count)  # the study's usual value of this setting
            if col == CONTROL:  # a control says it is one, however usual; the method (`none`) is none
                parts += [control_words(values)] if values[0] != "none" else []
            elif values[0] != usual:
                shown = text.label(str(values[0]))
                parts.append(shown if shown != str(values[0]) else f"{col.removeprefix('psedual.')} {values[0]}")
        out[key] = ", ".join(parts)
    return out


LLM_MODEL, TEMPERATURE, SAMPLES = "llm.model", "llm.temperature", "llm.samples"


def sampling(runs: pl.DataFrame) -> str | None:
    """How an arm's runs decode by sampling ('temperature 0.7', 'temperature 0.7, 3 samples'), None where
    every run decodes deterministically: a language model at temperature 0 with one sample, or a trained
    solver (beam search or argmax: psedual/solvers/tree_search.py; no solver decodes by sampling). A
    sampled run is one sample of the method: two of them differ by chance as two seeds do."""
    if LLM_MODEL not in runs.columns:
        return None
    llm = runs.filter(pl.col(LLM_MODEL).is_not_null())
    said = []
    if TEMPERATURE in llm.columns:
        hot = sorted({float(t) for t in llm[TEMPERATURE].drop_nulls().to_list() if t > 0})
        said += [f"temperature {', '.join(f'{t:g}' for t in hot)}"] if hot else []
    if SAMPLES in llm.columns:
        many = sorted({int(n) for n in llm[SAMPLES].drop_nulls().to_list() if n > 1})
        said += [f"{', '.join(map(str, many))} samples"] if many else []
    return ", ".join(said) or None
