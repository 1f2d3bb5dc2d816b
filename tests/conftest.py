"""Shared fixtures: a private Parquet cache for the whole test session; no GPU unless asked for."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

from psedual.data.cache import find_data_root, load_dataset
from psedual.data.config import DataConfig
from psedual.data.splits import split_dataset
from psedual.solvers.vocab import Vocab


def gpu_tests_selected(markexpr: str) -> bool:
    """Whether a `-m` expression runs the `gpu` tests (the default, `not slow and not gpu`, does not)."""
    return "gpu" in markexpr and "not gpu" not in markexpr


def pytest_configure(config):
    """A run that does not select the `gpu` tests sees no GPU, even on a GPU machine: device
    `auto` then trains on the CPU, where the bit-exact tests hold, and the Ray workers the tests
    start inherit the empty CUDA_VISIBLE_DEVICES. The `gpu` tests name CUDA themselves."""
    if not gpu_tests_selected(config.getoption("markexpr") or ""):
        os.environ["CUDA_VISIBLE_DEVICES"] = ""


def pytest_collection_modifyitems(items):
    """The modules that use the shared Ray (`local_ray`) run last, one after another: one Ray start
    serves them all, and no idle Ray runs through the modules between them (idle, it takes ~4% of a
    core: more than a start, ~5 CPU-seconds, over a few minutes). Otherwise pytest's order."""
    uses = {item.module for item in items if "local_ray" in getattr(item, "fixturenames", ())}
    items.sort(key=lambda item: getattr(item, "module", None) in uses)  # stable: each module's order kept


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory):
    """Tests never read or write the user's cache (~/.cache/psedual)."""
    path = tmp_path_factory.mktemp("psedual-cache")
    old = os.environ.get("PSEDUAL_CACHE")
    os.environ["PSEDUAL_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("PSEDUAL_CACHE")
    else:
        os.environ["PSEDUAL_CACHE"] = old


@pytest.fixture(scope="session")
def data_root():
    return find_data_root()


@pytest.fixture(scope="session")
def datasets(private_cache):
    """Each real benchmark loaded once per session (the first load fills the cache)."""
    cache = {}

    def get(name: str):
        if name not in cache:
            cache[name] = load_dataset(name)
        return cache[name]

    return get


@pytest.fixture
def one_thread():
    """Exact, repeatable numbers (multi-threaded CPU sums may change order)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def mawps(datasets):
    """MAWPS fold 0's splits."""
    return split_dataset(datasets("mawps"), DataConfig("mawps", fold=0))


@pytest.fixture(scope="session")
def vocab(mawps):
    return Vocab.build(mawps.train, mawps.constants)


@pytest.fixture(scope="module")
def local_ray(request):
    """A private 2-CPU Ray (never a running cluster), shared: each start costs seconds of both
    cores (half a minute on a loaded machine), so the modules that ask for it share one (they run
    last, together: `pytest_collection_modifyitems`). Started by the first module that asks (again
    after tests that needed a Ray of their own: `own_ray`), stopped after the last that asks."""
    import ray

    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    items = request.session.items
    last = max(i for i, item in enumerate(items) if getattr(item, "module", None) is request.module)
    if not any("local_ray" in getattr(item, "fixturenames", ()) for item in items[last + 1:]):
        ray.shutdown()


@pytest.fixture(scope="module")
def own_ray():
    """For tests that start a Ray of their own (a cluster stand-in, another environment): the
    shared one stopped first (a process holds one Ray at a time); the next `local_ray` starts it again."""
    import ray

    ray.shutdown()


@contextlib.contextmanager
def loopback_ray_env():
    """The environment for a Ray a test starts as a cluster stand-in: every address it binds and
    advertises on 127.0.0.1 (Ray otherwise advertises this machine's own IP), and its session
    files in a private folder (its address file never names it to `ray.init(address="auto")`
    elsewhere on the machine). Children (raylets, workers) read the variable; this process has
    read Ray's constant at import already, so it is set here too."""
    from ray._private import ray_constants

    tmp = tempfile.mkdtemp(prefix="ray-test-", dir="/tmp")  # short: Ray's socket paths have a length limit
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
            patch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)
            patch.setenv("RAY_TMPDIR", tmp)
            yield patch
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def mawps_root(tmp_path, data_root) -> Path:
    """A data root of five small MAWPS fold files: the first 3 real records of each fold (the
    bad-input tests add or break records in them)."""
    from psedual.data.sources import mawps

    root = tmp_path / "data"
    for name in mawps.FOLD_FILES:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        records = json.loads((data_root / name).read_text(encoding="utf-8"))[:3]
        path.write_text(json.dumps(records, indent=4, ensure_ascii=False), encoding="utf-8")
    return root
