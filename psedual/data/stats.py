"""`psedual data stats`: what each dataset holds, what was dropped and why; and the
same in brief (`summary`, `summary_text`) for a training run to print and record.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, replace
from statistics import mean

from psedual.data.gold_rules import GOLD_RULES
from psedual.data.cache import Dataset, load_dataset
from psedual.data.config import DataConfig
from psedual.data.record import Problem
from psedual.data.registry import DATASETS, DatasetName, get_spec
from psedual.data.splits import Splits, constants_of, leaked, split_dataset


def _row(label: str, problems: list[Problem], skipped: int) -> str:
    if not problems:
        return f"  {label:<12} {0:>7} {skipped:>8}"
    nums = [len(p.numbers) for p in problems]
    lens = [len(p.prefix) for p in problems]
    agree = sum(p.answer_agrees for p in problems)
    return (f"  {label:<12} {len(problems):>7,} {skipped:>8} {mean(nums):>9.2f} {max(nums):>4} "
            f"{mean(lens):>10.2f} {max(lens):>4}   {100 * agree / len(problems):6.2f}% ({agree:,}/{len(problems):,})")


def describe(dataset: Dataset, config: DataConfig, seconds: float) -> str:
    spec = get_spec(dataset.name)
    where = "from cache" if dataset.from_cache else "processed"
    lines = [f"== {dataset.name}: {len(dataset.problems):,} kept, {len(dataset.skips)} skipped "
             f"({where} in {seconds:.2f} s, key {dataset.key}) ==",
             f"  {'source split':<12} {'kept':>7} {'skipped':>8} {'nums/prob':>9} {'max':>4} "
             f"{'expr len':>10} {'max':>4}   gold expression = answer"]
    groups = ([(f"fold {k}", lambda x, k=k: x.fold == k) for k in range(spec.folds)] if spec.folds else
              [(s, lambda x, s=s: x.split == s) for s in ("train", "valid", "test")])
    for label, member in groups:
        lines.append(_row(label, [p for p in dataset.problems if member(p)], sum(member(s) for s in dataset.skips)))
    # a record of no split and no fold (a Math23K id in no split, or unreadable) is "no split"
    reasons = Counter((s.reason, s.split or (f"fold {s.fold}" if s.fold >= 0 else "no split")) for s in dataset.skips)
    lines.append("  skipped by reason: " + ("none" if not reasons else
                 "; ".join(f"{r} ({where}): {n}" for (r, where), n in sorted(reasons.items()))))
    for s in dataset.skips[:5]:
        lines.append(f"    e.g. {s.origin}: {s.reason}: {s.detail[:140]}")
    notes = {k: n for k, n in dataset.notes.items() if k not in GOLD_RULES}
    if notes:
        lines.append("  repairs and notes: " + "; ".join(f"{k}: {n}" for k, n in notes.items()))
    # Every gold rule with its count, zeros too: a rule that touched nothing is shown to have been applied.
    lines.append("  gold rules (docs/data.md, \"Gold expressions\"): "
                 + "; ".join(f"{label}: {dataset.notes.get(k, 0):,}" for k, label in GOLD_RULES.items()))
    views = [replace(config, fold=k) for k in range(spec.folds)] if spec.folds else [config]
    for view in views:
        s = split_dataset(dataset, view)
        allowed = set(s.constants)
        unsolvable = {name: sum(not constants_of(p) <= allowed for p in ps)
                      for name, ps in (("valid", s.valid), ("test", s.test))}
        label = f"fold {view.fold}" if spec.folds else "run view"
        pool = len(s.train) + sum(s.left_out.values())
        none = "(none: no training split)" if not pool else "(none)"
        lines.append(f"  {label}: train {len(s.train):,} / valid {len(s.valid):,} / test {len(s.test):,}; "
                     f"constants (used by >= {view.min_constant_count} training problems): "
                     f"{' '.join(s.constants) or none}")
        if not pool:
            lines.append(f"    no training problems: give {dataset.name}'s training file with --user_path")
            continue
        left = "; ".join(f"{r}: {n}" for r, n in s.left_out.items()) or "none"
        lines.append(f"    training problems left out: {left}; valid/test problems needing a constant "
                     f"outside the vocabulary (kept, unsolvable): {unsolvable['valid']}/{unsolvable['test']}")
        lines.append(f"    {_inconsistent(s)}")
        lines.append(f"    {_leakage(leaked(s))}")
    return "\n".join(lines)


def _leakage(counts: dict[str, int]) -> str:
    return (f"leakage: valid/test problems whose text and gold are also in train (other ids): "
            f"{counts['valid']:,}/{counts['test']:,}" + (" (scores on them may be memory)" if any(counts.values()) else ""))


def _inconsistent(s: Splits) -> str:
    n = s.train_disagreeing
    return (f"training problems whose gold disagrees with the answer: {n:,}"
            + (" (trained on; --data.drop_inconsistent leaves them out)" if n else ""))


def summary(dataset: Dataset, splits: Splits) -> dict:
    """What a run read and left out, for its outputs: where from, the cache key, the counts."""
    reasons = Counter(s.reason for s in dataset.skips)
    return {"dataset": dataset.name, "data_root": dataset.root or None, "user_path": dataset.user_path or None,
            "cache_key": dataset.key, "from_cache": dataset.from_cache, "kept": len(dataset.problems),
            "skipped": len(dataset.skips), "skipped_by_reason": dict(sorted(reasons.items())),
            "skip_examples": [f"{s.origin}: {s.reason}: {s.detail[:200]}" for s in dataset.skips[:5]],
            "notes": dict(dataset.notes), "train": len(splits.train), "valid": len(splits.valid),
            "test": len(splits.test), "left_out": sum(splits.left_out.values()),
            "left_out_by_reason": dict(splits.left_out),
            "train_disagreeing": splits.train_disagreeing, "leaked": leaked(splits)}


def summary_text(info: dict) -> str:
    """`summary` as the few lines a training run prints before its first epoch."""
    where = info["user_path"] or info["data_root"]
    cached = "from cache" if info["from_cache"] else "processed"
    reasons = "; ".join(f"{r}: {n:,}" for r, n in info["skipped_by_reason"].items())
    lines = [f"data: {info['dataset']} from {where} (cache key {info['cache_key']}, {cached}): "
             f"{info['kept']:,} problems kept, {info['skipped']:,} records skipped"
             + (f" ({reasons})" if reasons else "")]
    lines += [f"  e.g. {e}" for e in info["skip_examples"][:3]]
    if info["notes"]:
        lines.append("  notes: " + "; ".join(f"{k}: {n:,}" for k, n in info["notes"].items()))
    left = "; ".join(f"{r}: {n:,}" for r, n in info["left_out_by_reason"].items()) or "none"
    lines.append(f"  run view: train {info['train']:,} / valid {info['valid']:,} / test {info['test']:,}; "
                 f"left out of training: {left}")
    if any(info.get("leaked", {}).values()):
        lines.append(f"  {_leakage(info['leaked'])}")
    if info["train_disagreeing"]:
        n = info["train_disagreeing"]
        lines.append(f"  {n:,} training " + ("problem's gold disagrees" if n == 1 else "problems' gold disagree") +
                     " with the answer (trained on; --data.drop_inconsistent leaves them out)")
    return "\n".join(lines)


DEFAULT_STATS = tuple(name for name, spec in DATASETS.items() if not spec.needs_user_path)
"""`data stats` without names: every benchmark (a user's own data needs its path)."""


@dataclass(frozen=True)
class StatsConfig:
    """`psedual data stats`: per dataset and split, kept, dropped by reason, sizes, constants."""

    datasets: tuple[DatasetName, ...] = ()
    """Registry names (default: every benchmark that needs no path of yours)."""
    data_root: str | None = None
    """Benchmark folder (default: $PSEDUAL_DATA, a shared/data nearby, or the per-user folder
    psedual data fetch fills)."""
    user_path: str | None = None
    """MathQA's train.json, or the folder of a jsonl dataset."""
    no_cache: bool = False
    """Process the sources again, ignoring the Parquet cache."""
    min_constant_count: int = 5
    """Training problems a constant needs."""
    drop_inconsistent: bool = False
    """The run views leave out training problems whose gold disagrees with the answer (as
    --data.drop_inconsistent does in training)."""

    def __post_init__(self) -> None:
        if self.min_constant_count < 1:
            raise ValueError(f"min_constant_count must be at least 1, got {self.min_constant_count}")


def stats(names: list[str], *, data_root: str | None = None, user_path: str | None = None,
          use_cache: bool = True, min_constant_count: int = 5, drop_inconsistent: bool = False) -> str:
    out = []
    for name in names:
        start = time.perf_counter()
        dataset = load_dataset(name, data_root, user_path, use_cache=use_cache)
        seconds = time.perf_counter() - start
        config = DataConfig.first_fold(name, data_root=data_root, user_path=user_path,
                                       min_constant_count=min_constant_count, drop_inconsistent=drop_inconsistent)
        out.append(describe(dataset, config, seconds))
    return "\n\n".join(out)
