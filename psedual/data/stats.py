"""`psedual data stats`: what each dataset holds, what was dropped and why."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from statistics import mean

from psedual.data.cache import Dataset, load_dataset
from psedual.data.config import DataConfig
from psedual.data.record import Problem
from psedual.data.registry import get_spec
from psedual.data.splits import constants_of, split_dataset


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
    reasons = Counter((s.reason, s.split or f"fold {s.fold}") for s in dataset.skips)
    lines.append("  skipped by reason: " + ("none" if not reasons else
                 "; ".join(f"{r} ({where}): {n}" for (r, where), n in sorted(reasons.items()))))
    for s in dataset.skips[:5]:
        lines.append(f"    e.g. {s.origin}: {s.reason}: {s.detail[:140]}")
    if dataset.notes:
        lines.append("  repairs and notes: " + "; ".join(f"{k}: {n}" for k, n in dataset.notes.items()))
    views = [replace(config, fold=k) for k in range(spec.folds)] if spec.folds else [config]
    for view in views:
        s = split_dataset(dataset, view)
        allowed = set(s.constants)
        unsolvable = {name: sum(not constants_of(p) <= allowed for p in ps)
                      for name, ps in (("valid", s.valid), ("test", s.test))}
        label = f"fold {view.fold}" if spec.folds else "run view"
        lines.append(f"  {label}: train {len(s.train):,} / valid {len(s.valid):,} / test {len(s.test):,}; "
                     f"constants (used by >= {view.min_constant_count} training problems): "
                     f"{' '.join(s.constants) or '(none: no training split)'}")
        if not s.train:
            lines.append(f"    no training problems: give {dataset.name}'s training file with --user-path")
            continue
        left = "; ".join(f"{r}: {n}" for r, n in s.left_out.items()) or "none"
        lines.append(f"    training problems left out: {left}; valid/test problems needing a constant "
                     f"outside the vocabulary (kept, unsolvable): {unsolvable['valid']}/{unsolvable['test']}")
    return "\n".join(lines)


def stats(names: list[str], *, data_root: str | None = None, user_path: str | None = None,
          use_cache: bool = True, min_constant_count: int = 5) -> str:
    out = []
    for name in names:
        start = time.perf_counter()
        dataset = load_dataset(name, data_root, user_path, use_cache=use_cache)
        seconds = time.perf_counter() - start
        config = DataConfig(name, fold=0 if get_spec(name).folds else None, data_root=data_root,
                            user_path=user_path, min_constant_count=min_constant_count)
        out.append(describe(dataset, config, seconds))
    return "\n\n".join(out)
