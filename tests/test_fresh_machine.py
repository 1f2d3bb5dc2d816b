"""A fresh machine: the tests collect without the benchmark files (`make test` fetches them first;
no test module may look for them at import time)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_every_test_module_imports_without_a_data_root(tmp_path):
    env = {**os.environ, "PSEDUAL_DATA": str(tmp_path / "no-data-here"), "HOME": str(tmp_path)}
    env.pop("XDG_DATA_HOME", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           str(REPO / "tests")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " collected" in done.stdout
