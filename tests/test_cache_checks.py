"""The data cache checks what it serves: an entry edited, truncated or with bad metadata is
rebuilt from the sources, naming it; a cache folder that cannot be written is one error line."""

from __future__ import annotations

import hashlib

import pyarrow.parquet as pq
import pytest

from psedual.cli import main
from psedual.data.cache import load_dataset


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("PSEDUAL_CACHE", str(folder))
    return folder


def _entry(cache):
    problems, = cache.glob("mawps-single-*.problems.parquet")
    return problems


def _fresh_then(cache, spoil, capsys, why):
    first = load_dataset("mawps-single")
    problems = _entry(cache)
    spoil(problems)
    capsys.readouterr()
    again = load_dataset("mawps-single")
    err = capsys.readouterr().err
    assert f"psedual: cache entry {problems} is not what was written (" in err and why in err, err
    assert "rebuilding it" in err and not again.from_cache
    assert again.problems == first.problems and again.skips == first.skips and again.notes == first.notes
    assert load_dataset("mawps-single").from_cache  # rebuilt whole: served from then on
    assert capsys.readouterr().err == ""


def _edit_a_row(path):
    """A schema-valid row no loader made: one answer changed, the metadata kept."""
    table = pq.read_table(path)
    answers = table.column("answer").to_pylist()
    answers[0] = "123456"
    table = table.set_column(table.schema.get_field_index("answer"), "answer", [answers])
    pq.write_table(table.replace_schema_metadata(pq.read_schema(path).metadata), path)


def test_a_row_no_loader_made_is_not_served(cache, capsys):
    _fresh_then(cache, _edit_a_row, capsys, "SHA256 differ")


def test_a_truncated_entry_is_rebuilt(cache, capsys):
    _fresh_then(cache, lambda p: p.write_bytes(p.read_bytes()[:1000]), capsys, "SHA256 differ")


def test_bad_metadata_is_named_and_rebuilt(cache, capsys):
    def spoil(path):
        table = pq.read_table(path)
        pq.write_table(table.replace_schema_metadata({**pq.read_schema(path).metadata, b"notes": b"{not json"}), path)
        digests = path.with_name(path.name.replace(".problems.parquet", ".sha256"))
        skips = path.with_name(path.name.replace(".problems", ".skips"))
        digests.write_text(f"{hashlib.sha256(path.read_bytes()).hexdigest()} "
                           f"{hashlib.sha256(skips.read_bytes()).hexdigest()}\n")

    _fresh_then(cache, spoil, capsys, "JSONDecodeError")


def test_a_cache_folder_that_is_a_file_is_one_line(tmp_path, monkeypatch, capsys):
    plain = tmp_path / "plain-file"
    plain.write_text("not a folder")
    monkeypatch.setenv("PSEDUAL_CACHE", str(plain))
    assert main(["data", "stats", "mawps-single"]) == 2
    err = capsys.readouterr().err
    assert err == (f"psedual: error: {plain}: cannot write the data cache there (File exists); set PSEDUAL_CACHE "
                   "to a folder you can write\n")


def test_an_extra_svamp_variant_row_keeps_its_own_id(tmp_path, data_root, cache):
    import csv
    import shutil

    from psedual.data.sources.svamp import TAKEN

    shutil.copytree(data_root / "svamp", tmp_path / "root" / "svamp")
    test_csv = tmp_path / "root" / "svamp" / "test_svamp.csv"
    rows = list(csv.DictReader(test_csv.open(newline="")))
    variant = {**rows[0], "Numbers": " ".join(str(float(v) + 1) for v in rows[0]["Numbers"].split())}
    with test_csv.open("a", newline="") as f:  # SVAMP's first problem over other numbers; its second again
        csv.DictWriter(f, rows[0].keys()).writerows([variant, rows[1]])
    ds = load_dataset("svamp", data_root=tmp_path / "root")  # it stopped on a duplicate id it assigned itself
    test = {p.id for p in ds.problems if p.split == "test"}
    assert len(test) == 1002 and ds.notes[TAKEN] == 1
    assert {f"svamp:test-{len(rows)}", f"svamp:test-{len(rows) + 1}"} <= test
