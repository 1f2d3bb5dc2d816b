"""Did a change to the loaders change what a shipped benchmark record means? Loads the five
benchmarks (no cache) with the `psedual` package of two checkouts, each in its own process,
and compares every kept record field by field (by id), the skips and the notes.

    python tools/compare_records.py OLD_CHECKOUT [NEW_CHECKOUT]    # NEW defaults to this one

OLD_CHECKOUT is a folder holding a `psedual` package (`git worktree add` or `git archive REV
psedual | tar -x -C DIR`). The data root is the one the loaders find ($PSEDUAL_DATA, ...).
Prints, per benchmark: records only before or after, records whose fields differ (by field,
with up to five examples), whether the skips are equal, and the notes whose counts changed.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

BENCHMARKS = ("math23k", "mawps", "mawps-single", "svamp", "mathqa")
_DUMP = """
import dataclasses, pickle, sys
from psedual.data.cache import load_dataset
out = {}
for name in sys.argv[2:]:
    ds = load_dataset(name, use_cache=False)
    out[name] = {"problems": [dataclasses.asdict(p) for p in ds.problems],
                 "skips": [dataclasses.asdict(s) for s in ds.skips], "notes": dict(ds.notes)}
with open(sys.argv[1], "wb") as f:
    pickle.dump(out, f)
"""


def _dump(checkout: Path, into: Path) -> dict:
    # Run from a neutral folder: `python -c` puts the working directory first on sys.path.
    subprocess.run([sys.executable, "-c", _DUMP, str(into), *BENCHMARKS], check=True, cwd=into.parent,
                   env={**os.environ, "PYTHONPATH": str(checkout.resolve())})
    with open(into, "rb") as f:
        return pickle.load(f)


def compare(old: dict, new: dict) -> list[str]:
    lines = []
    for name in BENCHMARKS:
        a = {p["id"]: p for p in old[name]["problems"]}
        b = {p["id"]: p for p in new[name]["problems"]}
        fields: Counter[str] = Counter()
        examples = []
        for i in sorted(a.keys() & b.keys()):
            for f in (f for f in a[i] if a[i][f] != b[i].get(f)):
                fields[f] += 1
                examples.append(f"    {i} {f}: {a[i][f]!r} -> {b[i].get(f)!r}")
        differing = sum(a[i] != b[i] for i in a.keys() & b.keys())
        skips = [[(s["origin"], s["reason"], s["detail"]) for s in d[name]["skips"]] for d in (old, new)]
        notes = {k: (old[name]["notes"].get(k, 0), new[name]["notes"].get(k, 0))
                 for k in sorted(old[name]["notes"].keys() | new[name]["notes"].keys())
                 if old[name]["notes"].get(k, 0) != new[name]["notes"].get(k, 0)}
        lines.append(f"{name}: {len(a):,} -> {len(b):,} kept; only before {len(a.keys() - b.keys())}, only after "
                     f"{len(b.keys() - a.keys())}; records differing {differing} {dict(fields)}; skips equal "
                     f"{skips[0] == skips[1]} ({len(skips[0])} / {len(skips[1])}); notes changed {notes}")
        lines += examples[:5]
    return lines


def main(argv: list[str]) -> None:
    old = Path(argv[0])
    new = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        dumps = [_dump(c, Path(tmp) / f"{k}.pkl") for k, c in enumerate((old, new))]
    print("\n".join(compare(*dumps)))


if __name__ == "__main__":
    main(sys.argv[1:])
