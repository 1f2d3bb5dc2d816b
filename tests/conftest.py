"""Shared fixtures: a private Parquet cache for the whole test session."""

from __future__ import annotations

import os

import pytest

from psedual.data.cache import find_data_root, load_dataset


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
