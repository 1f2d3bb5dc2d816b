"""`psedual llm` on all 1,000 SVAMP test problems through the tests' scripted server (no network):
with and without --reexamine, both added to the result tables, then `psedual analyze compare`.

The scripted model answers 65% right; 10% wrong in a way its reexamination catches (and a
re-solve fixes); 15% wrong with a refilling that agrees; 10% unusable (prose, numbers not in
the problem, empty), drawn per problem from a hash of its id. It shows the plumbing and the
analysis on real problem texts, not any model's accuracy.

Usage: python tools/llm_fake_svamp.py [--work /tmp/llm-fake]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fake_llm import KEY, FakeLLM  # noqa: E402

from psedual.cli import main as psedual  # noqa: E402
from psedual.data.cache import load_dataset  # noqa: E402
from psedual.data.config import DataConfig  # noqa: E402
from psedual.data.splits import split_dataset  # noqa: E402


def behaviour(problem_id: str) -> str:
    u = int(hashlib.sha256(problem_id.encode()).hexdigest()[:8], 16) / 16 ** 8
    for cut, how in ((0.65, "right"), (0.75, "caught"), (0.90, "uncaught"), (0.94, "prose"), (0.97, "foreign")):
        if u < cut:
            return how
    return "empty"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default="/tmp/llm-fake")
    args = parser.parse_args()
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    problems = list(split_dataset(load_dataset("svamp"), DataConfig("svamp")).test)
    server = FakeLLM(problems, {p.id: behaviour(p.id) for p in problems})
    os.environ["FAKE_LLM_KEY"] = KEY
    try:
        for name, extra in (("llm", []), ("llm-reexamine", ["--reexamine"])):
            began = time.perf_counter()
            psedual(["llm", "--dataset", "svamp", "--model", "fake-1", "--base_url", server.url, "--api_key_env",
                     "FAKE_LLM_KEY", "--out", str(work / name), *extra])
            print(f"  ({time.perf_counter() - began:.1f} s, {server.requests} requests to the server so far)")
        psedual(["results", "add", str(work / "llm"), str(work / "llm-reexamine"), "--experiment", "svamp_llm",
                 "--root", str(work / "results")])
        psedual(["analyze", "compare", "--root", str(work / "results"), "--experiment+", "svamp_llm", "--arm",
                 "variant", "--base", "llm", "--treatment+", "llm+reexamine"])
    finally:
        server.close()


if __name__ == "__main__":
    main()
