"""`psedual analyze leakage` on the committed 5-fold converged study (issue 49): the test problems
that repeat a training problem under another id are solved from memory (99-100%); the rest are
the score a new problem gets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_repeated_test_problems_score_apart_from_the_rest():
    done = subprocess.run([sys.executable, "-m", "psedual.cli", "analyze", "leakage", "--root",
                           "docs/converged_5fold/results", "--experiment", "converged_5fold"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    # fold 0 repeats 67 of its 397 test problems (the runs table's data_test_leaked, rebuilt here)
    assert "| 43fcb_00000 | 0 | 86.90 [83.23, 89.87] (397) | 100.00 [94.58, 100.00] (67) | " \
           "84.24 [79.92, 87.78] (330) |" in lines
    assert "| pooled: base, seed 0 | 0, 1, 2, 3, 4 | 85.96 [84.36, 87.42] (1987) | 99.31 [97.51, 99.81] (289) | " \
           "83.69 [81.85, 85.37] (1698) |" in lines
    assert sum(line.startswith("| pooled: ") for line in lines) == 6  # 2 arms x 3 seeds, never all pooled
