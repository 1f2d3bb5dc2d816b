"""`psedual llm` against a scripted OpenAI-compatible server on 127.0.0.1 (no network)."""

from __future__ import annotations

import polars as pl
import pytest

from fake_llm import KEY, FakeLLM
from psedual.cli import main
from psedual.data.config import DataConfig
from psedual.data.splits import split_dataset
from psedual.llm.client import LLMError
from psedual.llm.parse import parse_solution
from psedual.llm.run import LLMConfig, run

ENV = "PSEDUAL_TEST_LLM_KEY"
BEHAVIOUR = ["right", "caught", "uncaught", "prose", "foreign", "empty", "right", "right"]


@pytest.fixture(scope="module")
def svamp(datasets):
    return list(split_dataset(datasets("svamp"), DataConfig("svamp")).test)


@pytest.fixture
def fake(svamp, monkeypatch):
    monkeypatch.setenv(ENV, KEY)
    server = FakeLLM(svamp[:40], {p.id: b for p, b in zip(svamp, BEHAVIOUR)})
    yield server
    server.close()


def _config(fake, **kw) -> LLMConfig:
    return LLMConfig(model="fake-1", base_url=fake.url, api_key_env=ENV, **{"limit": 8, "max_retries": 0, **kw})


def test_replies_are_parsed_by_our_parser_into_slots(svamp):
    p = next(q for q in svamp if len(q.numbers) >= 2 and q.values()[0] != q.values()[1])
    a, b = p.number_texts[:2]
    assert parse_solution(f"Expression: ({a} + {b}) = 17\nAnswer: 17", p).prefix == ("+", "N0", "N1")
    assert parse_solution(f"**Expression:** {b} * {a}", p).prefix == ("*", "N1", "N0")
    assert parse_solution("Expression: 987654 - 1", p).failure == "numbers not in the problem: 987654, 1"
    assert parse_solution("I think it is 7.", p).failure == "no expression line"
    assert parse_solution("Expression: (3 +", p).failure.startswith("unparseable")
    assert parse_solution("Expression: __import__('os')", p).prefix is None  # never evaluated as code


def test_right_caught_uncaught_and_malformed_replies(fake, tmp_path):
    again = run(_config(fake, reexamine=True), tmp_path / "reexamine", progress=False)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "cache.sqlite").write_bytes((tmp_path / "reexamine" / "cache.sqlite").read_bytes())
    plain = run(_config(fake), tmp_path / "plain", progress=False)
    rows = pl.read_parquet(tmp_path / "reexamine" / "predictions.parquet").to_dicts()
    plain_rows = pl.read_parquet(tmp_path / "plain" / "predictions.parquet").to_dicts()
    assert [r["value_correct"] for r in plain_rows] == [True, False, False, False, False, False, True, True]
    assert [r["value_correct"] for r in rows] == [True, True, False, False, False, False, True, True]
    assert [r["failure"] for r in rows][3:6] == ["no expression line", "numbers not in the problem: 12345, 67890",
                                                 "no expression line"]
    assert rows[4]["reply"].startswith("Expression: 12345")  # the raw text is kept
    assert [r["rounds_used"] for r in rows] == [0, 1, 0, 0, 0, 0, 0, 0]
    assert [r["changed"] for r in rows] == [False, True, False, False, False, False, False, False]
    assert (plain["test_value_acc"], again["test_value_acc"]) == (3 / 8, 4 / 8)
    assert (again["llm.changed_to_right"], again["llm.changed_to_wrong"], again["llm.failures"]) == (1, 0, 3)
    # a solve per problem, a reexamination per usable solution, and the caught one's re-solve and re-check
    assert again["llm.calls"] == 8 + 5 + 2
    assert plain["llm.calls"] == 0 and plain["llm.cache_hits"] == 8  # the same solves, from the copied cache


def test_a_rerun_asks_nothing_and_writes_the_same_tables(fake, tmp_path):
    run(_config(fake, reexamine=True), tmp_path, progress=False)
    first, sent = pl.read_parquet(tmp_path / "predictions.parquet"), fake.requests
    metrics = run(_config(fake, reexamine=True), tmp_path, progress=False)
    assert fake.requests == sent and metrics["llm.calls"] == 0
    assert pl.read_parquet(tmp_path / "predictions.parquet").equals(first)


def test_429s_are_retried_with_backoff(fake, svamp, tmp_path):
    fake.fail_first[svamp[0].id] = 2
    metrics = run(_config(fake, limit=2, max_retries=3), tmp_path, progress=False)
    assert metrics["test_value_acc"] == 0.5 and fake.requests == 2 + 2


def test_a_killed_run_resumes_without_losing_or_repeating(fake, svamp, tmp_path):
    fake.fail_first[svamp[5].id] = 99  # the endpoint keeps refusing one problem: the run stops
    with pytest.raises(LLMError, match="HTTP 429 after retries"):
        run(_config(fake, concurrency=2), tmp_path / "killed", progress=False)
    fake.fail_first.clear()
    before = fake.requests
    resumed = run(_config(fake, concurrency=2), tmp_path / "killed", progress=False)
    assert 1 <= fake.requests - before < 8 and resumed["llm.cache_hits"] >= 1
    whole = run(_config(fake, concurrency=2), tmp_path / "whole", progress=False)
    a = pl.read_parquet(tmp_path / "killed" / "predictions.parquet")
    assert a["id"].n_unique() == a.height == 8
    assert a.equals(pl.read_parquet(tmp_path / "whole" / "predictions.parquet")) and whole["llm.calls"] == 8


def test_a_timeout_a_dead_server_and_a_bad_key_are_clear_errors(fake, tmp_path, monkeypatch):
    fake.stall_seconds = 2.0
    with pytest.raises(LLMError, match=f"{fake.url}: no answer \\(APITimeoutError\\)"):
        run(_config(fake, timeout=0.3, limit=1), tmp_path / "slow", progress=False)
    fake.stall_seconds = 0.0
    dead = fake.url
    fake.close()
    with pytest.raises(LLMError, match=f"{dead}: no answer \\(APIConnectionError\\)"):
        run(_config(fake, limit=1), tmp_path / "dead", progress=False)
    monkeypatch.delenv(ENV)
    with pytest.raises(LLMError, match=f"no API key: set the environment variable {ENV}"):
        run(_config(fake, limit=1), tmp_path / "nokey", progress=False)


def test_a_bad_key_is_refused_and_never_printed(svamp, tmp_path, monkeypatch, capsys):
    server = FakeLLM(svamp[:4], {})
    try:
        monkeypatch.setenv(ENV, "sk-wrong-key-4242")
        code = main(["llm", "--model", "fake-1", "--base_url", server.url, "--api_key_env", ENV, "--limit", "2",
                     "--max_retries", "0", "--out", str(tmp_path)])
        err = capsys.readouterr().err
        assert code == 2 and f"{server.url}: the endpoint refused the API key" in err
        assert "sk-wrong-key-4242" not in err
        monkeypatch.setenv(ENV, KEY)
        server.key = KEY
        assert main(["llm", "--model", "fake-1", "--base_url", server.url, "--api_key_env", ENV, "--limit", "4",
                     "--reexamine", "--out", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert "llm+reexamine fake-1 on svamp: value 100.00%" in out and KEY not in out
        stored = b"".join(f.read_bytes() for f in tmp_path.rglob("*") if f.is_file())
        assert KEY.encode() not in stored  # nor in the cache, the tables or config.json
    finally:
        server.close()


def test_llm_runs_join_the_tables_and_the_analysis(fake, tmp_path):
    run(_config(fake), tmp_path / "llm", progress=False)
    run(_config(fake, reexamine=True), tmp_path / "llm-reexamine", progress=False)
    root = str(tmp_path / "results")
    assert main(["results", "add", str(tmp_path / "llm"), str(tmp_path / "llm-reexamine"), "--experiment", "x",
                 "--root", root]) == 0
    runs = pl.read_parquet(tmp_path / "results" / "runs" / "experiment=x" / "*.parquet").sort("trial")
    assert runs["variant"].to_list() == ["llm", "llm+reexamine"] and runs["llm.changed"].to_list() == [0, 1]
    assert runs["solver"].to_list() == ["llm:fake-1"] * 2 and runs["n_test"].to_list() == [8, 8]
    assert main(["analyze", "compare", "--root", root, "--experiment+", "x", "--arm", "variant", "--base", "llm",
                 "--treatment+", "llm+reexamine", "--resamples", "200"]) == 0
    claim = pl.read_parquet(tmp_path / "results" / "claims" / "compare_x.parquet").row(0, named=True)
    assert (claim["n_examples"], claim["test"], claim["base"], claim["treatment"]) == (8, "mcnemar_exact", 37.5, 50.0)
    # a zero-shot run records its test split only, and that is all its claim needs
    assert runs["data_test_hash"].n_unique() == 1 and runs["data_train_hash"].null_count() == 2
    assert not any(f.startswith("data identity not recorded") for f in claim["flags"])
