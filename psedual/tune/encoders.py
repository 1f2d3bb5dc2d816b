"""The pretrained encoders a sweep's trials read (`model.plm`), checked before its first trial.

`model.plm` is `minilm` (the English MiniLM shipped in a package), a local Hugging Face folder, or a
hub id read from the Hugging Face cache (`psedual.solvers.hub`). A sweep does not leave a hub id to
its trials to download: each node would fetch it on its own, perhaps another commit of it, and
without a connection every trial would fail hours into the sweep, each one retried. So an encoder
must be here before the first trial: a folder with its config.json, or a hub id in this machine's
cache, which clusters/gpu.yaml's setup fills on every node with an explicit `hf download`. The plan
says which are present (a hub id with the commit it resolves to), and the run refuses in one line
before its first trial; an English encoder on Chinese problems too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from psedual.data.registry import DATASETS
from psedual.solvers import hub
from psedual.solvers.hub import MINILM


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
        """Whether this machine has it: `minilm`, a folder with a config.json, or a hub id in the cache."""
        return self.resolved() is not None

    def resolved(self) -> hub.Encoder | None:
        """Where it is read from here (nothing is downloaded), or None when it is not here."""
        try:
            return hub.resolve(self.plm, download=False)
        except ValueError:
            return None

    def problem(self) -> str | None:
        """Why these trials cannot read it here, in one clause; None where they can."""
        if self.plm == MINILM and self.languages - {"en"}:
            return (f"{self.trials} read the English {MINILM} on {'/'.join(sorted(self.languages - {'en'}))} "
                    f"problems: name an encoder of that language in model.plm (for Math23K a Chinese "
                    f"BERT/RoBERTa, as search_spaces/paper.yaml's full profile does)")
        if self.present:
            return None
        ref = None if Path(self.plm).expanduser().is_dir() else hub.split_hub_id(self.plm)
        if ref is not None:
            return (f"encoder {self.plm} (model.plm of {self.trials}) is not in the Hugging Face cache on {_node()} "
                    f"({hub.cache()}): fetch it first with `{hub.fetch_command(*ref)}` (clusters/gpu.yaml's setup "
                    f"does, on every node), so that every trial reads the same commit")
        return (f"encoder {self.plm} (model.plm of {self.trials}) is missing on {_node()}: no config.json "
                f"there; copy a local Hugging Face model folder there, or name a hub id")

    def line(self) -> str:
        """The plan's line on it: present (a hub id with its commit), or MISSING and why."""
        problem = self.problem()
        if problem is not None:
            return f"MISSING: {problem}"
        found = self.resolved()
        at = f" at commit {found.commit}" if found is not None and found.commit else ""
        return f"encoder {self.plm}: present here{at} ({self.trials})"


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
    return [use.line() for use in uses(parts)]


def check(parts: dict[str, list]) -> None:
    """Refuse, before the first trial, trials whose encoder is absent here or of the wrong language:
    a ValueError of one line naming each."""
    problems = [p for p in (use.problem() for use in uses(parts)) if p is not None]
    if problems:
        raise ValueError("; ".join(problems))
