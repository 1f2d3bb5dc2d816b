"""The one atomic writer: local paths and URIs, whole files or none, and its three users."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
import torch

from psedual.atomic import atomic_write, write_parquet
from psedual.results import tables
from psedual.train import checkpoint


def test_writes_a_local_path_and_makes_its_folder(tmp_path):
    target = tmp_path / "a" / "b" / "x.bin"
    assert atomic_write(target, lambda f: f.write(b"hello")) == str(target)
    assert target.read_bytes() == b"hello"
    atomic_write(target, lambda f: f.write(b"again"))  # replaces, never appends
    assert target.read_bytes() == b"again" and sorted(p.name for p in target.parent.iterdir()) == ["x.bin"]


def test_writes_a_uri_and_a_path_within_a_given_filesystem(tmp_path):
    atomic_write(f"file://{tmp_path}/u/x.bin", lambda f: f.write(b"uri"))
    assert (tmp_path / "u" / "x.bin").read_bytes() == b"uri"
    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    assert atomic_write("sub/y.bin", lambda f: f.write(b"sub"), fs) == "sub/y.bin"
    assert (tmp_path / "sub" / "y.bin").read_bytes() == b"sub"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "x.bin"
    target.write_bytes(b"old")

    def half(f):
        f.write(b"ha")
        raise KeyboardInterrupt  # as a kill in the middle would

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, half)
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["x.bin"]


def test_the_three_users_write_through_it(tmp_path):
    table = pa.table({"x": [1, 2]})
    write_parquet(table, tmp_path / "t.parquet")
    assert pq.read_table(tmp_path / "t.parquet").equals(table)
    checkpoint.save(tmp_path / "c.pt", {"w": torch.arange(3)})
    assert torch.equal(torch.load(tmp_path / "c.pt")["w"], torch.arange(3))
    path = tables.write(f"file://{tmp_path}/results", "epochs", "e", "t1", [{"trial": "t1", "epoch": 1}])
    assert path == f"{tmp_path}/results/epochs/experiment=e/t1.parquet"
    assert pq.read_table(path).schema == tables.EPOCHS_SCHEMA
    assert not list(tmp_path.rglob("*.tmp"))
