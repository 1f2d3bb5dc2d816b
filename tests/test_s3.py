"""Sweeps whose storage is S3: an S3 server on loopback (moto's), a local Ray started after it, so
the trials, the Train workers and the tests after the sweep all reach it through the environment
(AWS_ENDPOINT_URL, as a cluster's nodes reach the real S3 through theirs)."""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pytest

from conftest import loopback_ray_env
from psedual.results import tables
from psedual.storage import filesystem
from psedual.tune.space import load_spec

ROOT = Path(__file__).parent.parent
BUCKET = "psedual-test"


@pytest.fixture(scope="module")
def s3():
    """An S3 server on 127.0.0.1 (a free port) with one bucket; yields the storage URI."""
    moto_server = pytest.importorskip("moto.server", reason="the test extra's moto[server]")
    import boto3

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{server._server.server_port}", "AWS_EC2_METADATA_DISABLED": "true"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    yield f"s3://{BUCKET}/psedual"
    server.stop()
    for k, v in old.items():
        if v is None:
            os.environ.pop(k)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def s3_ray(s3, own_ray):
    """A private 2-CPU Ray started with the S3 server's environment (its workers inherit it)."""
    import ray

    with loopback_ray_env():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            yield s3
        finally:
            ray.shutdown()


def test_a_train_workers_checkpoint_on_s3_is_read_through_the_storages_filesystem(s3, tmp_path):
    """What Ray Train's TuneReportCallback hands Tune for a checkpoint on S3: its path on the
    bucket, without `s3://`. Read as a URI it was `URI has empty scheme` and no table was written."""
    from ray.tune import Result

    from psedual.tune.sweep import _outcome

    fs, base = filesystem(f"s3://{BUCKET}/unit")  # beside the sweeps' storage, not in it
    folder = f"{base}/train_abc/checkpoint_0"
    fs.create_dir(folder)
    with fs.open_output_stream(f"{folder}/best.pt") as f:
        f.write(b"weights")
    flat = {**load_spec(ROOT / "search_spaces" / "smoke.yaml").fixed, "variant": "gcn"}
    result = Result(metrics={"epoch": 1, "valid_value_acc": 0.5, "checkpoint_path": folder, "config": flat},
                    checkpoint=None, error=None, path=f"{base}/trial")
    outcome = _outcome(result, SimpleNamespace(config=flat, trial_id="abc_00000", status="TERMINATED", local_path=None), fs)
    assert (outcome.trial, outcome.status, outcome.metrics["valid_value_acc"]) == ("abc_00000", "completed", 0.5)
    outcome.checkpoint.to_directory(str(tmp_path / "got"))
    assert (tmp_path / "got" / "best.pt").read_bytes() == b"weights"


def test_a_trial_lost_before_its_first_report_is_an_error_outcome(s3):
    """A trial whose node died (or whose start failed) before it reported has no metrics, so
    its Result has no config: reading the config from the Result crashed the whole job."""
    from ray.tune import Result

    from psedual.tune.sweep import _outcome

    fs, base = filesystem(f"s3://{BUCKET}/unit")
    flat = {**load_spec(ROOT / "search_spaces" / "smoke.yaml").fixed, "variant": "base"}
    lost = RuntimeError("The node running this trial died")
    outcome = _outcome(Result(metrics={}, checkpoint=None, error=lost, path=f"{base}/lost"),
                       SimpleNamespace(config=flat, trial_id="lost_00001", status="ERROR", local_path=None), fs)
    assert (outcome.trial, outcome.status, outcome.checkpoint, outcome.metrics) == ("lost_00001", "error", None, {})
    assert outcome.flat["variant"] == "base" and outcome.error == "RuntimeError: The node running this trial died"


def _rows(storage: str, table: str, experiment: str) -> pl.DataFrame:
    fs, base = filesystem(storage)
    return pl.from_arrow(ds.dataset(f"{base}/{table}/experiment={experiment}", filesystem=fs,
                                    format="parquet").to_table())


def _top_level(storage: str) -> list[str]:
    fs, base = filesystem(storage)
    return sorted(Path(i.path).name for i in fs.get_file_info(pafs.FileSelector(base)))


@pytest.mark.slow  # ~25-35 s: a Ray Train worker group's start
def test_a_train_worker_sweep_on_s3_writes_the_tables_and_keeps_its_folders_under_the_experiment(s3_ray):
    """Train hands a checkpoint on S3 back as a path without its scheme: built without its
    filesystem, it was read as a local path (`URI has empty scheme`) and no table was written."""
    from psedual.job import run_spec
    from psedual.train.resources import Resources

    spec = load_spec(ROOT / "search_spaces" / "smoke.yaml")
    spec = replace(spec, name="s3_workers", grid={}, arms=[{"variant": "gcn"}], resources=Resources(in_process=False))
    assert run_spec(spec, "s3_workers", False, s3_ray, None) == 0
    for table in tables.TABLES:
        rows = _rows(s3_ray, table, "s3_workers")
        assert rows.height == {"runs": 1, "epochs": 1, "predictions": 397}[table], table
    runs = _rows(s3_ray, "runs", "s3_workers")
    assert runs["status"][0] == "completed" and runs["test_value_acc"][0] is not None
    # the trial's Train run (its checkpoints) lies under the experiment, not at the storage root
    assert _top_level(s3_ray) == ["epochs", "predictions", "runs", "s3_workers"]


@pytest.mark.slow  # ~14-28 s (the fast tests above cover the S3 checkpoint path in the default run)
def test_an_in_process_sweep_on_s3_writes_the_tables_and_its_claim(s3_ray, capsys):
    from psedual.job import run_spec

    spec = load_spec(ROOT / "search_spaces" / "smoke.yaml")
    assert run_spec(spec, "s3_smoke", False, s3_ray, None) == 0
    assert _rows(s3_ray, "runs", "s3_smoke").height == 2
    assert _rows(s3_ray, "predictions", "s3_smoke").height == 2 * 397
    fs, base = filesystem(s3_ray)
    assert fs.get_file_info(f"{base}/claims/compare_s3_smoke.parquet").type == pafs.FileType.File
    assert "PseDual-GCN vs base" in capsys.readouterr().out
