"""The pretrained encoders a sweep's trials read (`model.plm`), checked before its first trial.

Nothing in the code downloads an encoder (`psedual.solvers.plm`): `model.plm` is `minilm` (the
English MiniLM shipped in a package) or a local Hugging Face directory, which clusters/gpu.yaml's
setup puts on every node with an explicit `hf download`. A directory that is not there, or an
English encoder on Chinese problems, used to fail every such trial hours into a sweep, each one
retried; the plan now says so, and the run refuses in one line before its first trial.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from psedual.data.registry import DATASETS

MINILM = "minilm"
"""The shipped English encoder's name (`solvers.plm.plm_path`)."""


@dataclass(frozen=True)
class EncoderUse:
    """One encoder a sweep's trials read, and which trials read it."""

    plm: str
    """`model.plm` as the trials name it."""
    trials: str
    """Which trials, in words: `table1: bert_tree, re_deduction on mathqa, mawps`."""
    languages: frozenset[str]
    """The languages of those trials' data sets (`DatasetSpec.language`)."""

    def __post_init__(self) -> None:
        if not self.plm or not self.trials or not self.languages:
            raise ValueError(f"an encoder use needs a name, its trials and their languages: {self}")

    @property
    def present(self) -> bool:
        """Whether this machine has it: `minilm`, or a directory with a config.json."""
        return self.plm == MINILM or (Path(self.plm).expanduser() / "config.json").is_file()

    def problem(self) -> str | None:
        """Why these trials cannot read it here, in one clause; None where they can."""
        if self.plm == MINILM and self.languages - {"en"}:
            return (f"{self.trials} read the English {MINILM} on {'/'.join(sorted(self.languages - {'en'}))} "
                    f"problems: name a local encoder of that language in model.plm (for Math23K a Chinese "
                    f"BERT/RoBERTa, as search_spaces/paper.yaml's full profile does)")
        if not self.present:
            return (f"encoder {self.plm} (model.plm of {self.trials}) is missing on {_node()}: no config.json "
                    f"there; clusters/gpu.yaml's setup puts it on every node (hf download), elsewhere copy a "
                    f"local Hugging Face model there (nothing is downloaded)")
        return None


def _node() -> str:
    import platform

    return f"this machine ({platform.node() or 'unknown'})"


def uses(parts: dict[str, list]) -> list[EncoderUse]:
    """The encoders that the trials of each part (part name → its TrainConfigs) read: only the
    solvers with a pretrained encoder (`reads_subwords`) read `model.plm`."""
    from psedual.solvers import SOLVERS

    seen: dict[str, dict[str, tuple[set, set]]] = {}
    for part, configs in parts.items():
        for config in configs:
            if not SOLVERS[config.solver].reads_subwords:
                continue
            solvers, datasets = seen.setdefault(config.model.plm, {}).setdefault(part, (set(), set()))
            solvers.add(config.solver)
            datasets.add(config.data.dataset)
    out = []
    for plm, by_part in seen.items():
        trials = "; ".join(f"{part}: {', '.join(sorted(s))} on {', '.join(sorted(d))}" for part, (s, d) in by_part.items())
        languages = frozenset(DATASETS[name].language for _, names in by_part.values() for name in names)
        out.append(EncoderUse(plm, trials, languages))
    return out


def plan_lines(parts: dict[str, list]) -> list[str]:
    """The plan's lines on its encoders: each one present or, in one line, what is wrong."""
    lines = []
    for use in uses(parts):
        problem = use.problem()
        lines.append(f"encoder {use.plm}: present here ({use.trials})" if problem is None else f"MISSING: {problem}")
    return lines


def check(parts: dict[str, list]) -> None:
    """Refuse, before the first trial, trials whose encoder is absent here or of the wrong language:
    a ValueError of one line naming each."""
    problems = [p for p in (use.problem() for use in uses(parts)) if p is not None]
    if problems:
        raise ValueError("; ".join(problems))
