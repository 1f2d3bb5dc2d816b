"""`psedual llm`: a chat model solves a dataset's test problems zero-shot, optionally reexamining
its own solutions (the paper's Table 2).

Procedure for one problem (prompts in `prompts/*_v1.txt`, versioned by PROMPT_VERSION):
1. Solve: the problem text → a reply with `Expression:` and `Answer:` lines. The expression is
   parsed by our parser into a prefix over the problem's slots; a reply without a usable
   expression is a counted failure, its text kept.
2. Reexamine (`--reexamine`): the problem with its numbers hidden as [N0], [N1], ... and the
   expression (with its numbers) → the model says which number goes in each slot. It agrees
   when every slot whose number the expression uses gets that number back, and every other
   slot gets none.
3. With `--samples K`, K solutions are drawn (sample 0 first) and the first whose
   reexamination agrees is kept (else sample 0). With `--rounds R`, a solution that still
   disagrees is re-solved, told which slots came back wrong, up to R times; a re-solve
   without a usable expression keeps the previous solution.
Per problem it records the rounds used, whether reexamination changed the answer's value,
and whether the final answer is right where the first was not (or the reverse).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from psedual.data.cache import load_dataset
from psedual.data.config import DataConfig
from psedual.data.expr import infix_with_numbers
from psedual.data.identity import gold_hash
from psedual.data.numbers import NumberError, parse_number
from psedual.data.record import Problem
from psedual.data.registry import DatasetName
from psedual.data.splits import split_dataset
from psedual.data.value import try_evaluate, values_equal
from psedual.llm.client import CachedChat
from psedual.llm.parse import Parsed, masked_text, parse_refill, parse_solution, problem_text
from psedual.metrics import expression_correct, expression_correct_values, value_correct
from psedual.results.folder import CACHE, RunFolder
from psedual.results.records import DataRecord, LLMPrediction, LLMRecord, LLMResult, RunCost, RunInfo
from psedual.results.row import MetricsRow, llm_config

PROMPT_VERSION = "v1"


def prompt(name: str) -> str:
    return resources.files("psedual.llm").joinpath(f"prompts/{name}_{PROMPT_VERSION}.txt").read_text()


@dataclass(frozen=True)
class LLMConfig:
    """One LLM run over a dataset's test split."""

    model: str
    """The endpoint's model name."""
    base_url: str
    """An OpenAI-compatible endpoint, e.g. https://api.openai.com/v1 or http://localhost:8000/v1 (vLLM)."""
    dataset: DatasetName = "svamp"
    """Registry name of the dataset whose test split is solved."""
    fold: int | None = None
    """Test fold of a cross-validated dataset."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key (never written anywhere)."""
    reexamine: bool = False
    """Reexamine each solution (see the module's docstring)."""
    rounds: int = 1
    """With reexamine: re-solves of a solution whose reexamination disagrees."""
    samples: int = 1
    """With reexamine: candidate solutions drawn, the first that reexamination accepts kept."""
    temperature: float = 0.0
    """Sampling temperature (samples > 1 needs it above 0 to differ)."""
    limit: int | None = None
    """Solve only the first `limit` test problems."""
    concurrency: int = 8
    """Problems in flight at once."""
    timeout: float = 60.0
    """Seconds per request."""
    max_retries: int = 4
    """Retries (exponential backoff, by the openai client) on 429, 5xx, timeouts and lost connections."""

    def __post_init__(self) -> None:
        if min(self.samples, self.concurrency) < 1 or self.rounds < 0 or self.timeout <= 0 or self.max_retries < 0:
            raise ValueError(f"bad LLM run settings: {self}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be positive, got {self.limit}")

    @property
    def variant(self) -> str:
        return "llm+reexamine" if self.reexamine else "llm"


def check_refill(refill: dict[int, str], prefix: tuple[str, ...], p: Problem) -> list[str]:
    """Slots the refilling got wrong, described; empty when it agrees with the problem."""
    values = p.values()
    used = {values[int(t[1:])] for t in prefix if t.startswith("N") and t[1:].isdigit()}
    wrong = []
    for k, value in enumerate(values):
        said = refill.get(k, "missing")
        try:
            got = parse_number(said.replace(",", "")) if said not in ("none", "missing") else None
        except NumberError:
            got = None
        expected = value if value in used else None
        if got != expected:
            wrong.append(f"[N{k}] got {said}, the problem has {p.number_texts[k] if expected is not None else 'none'}")
    return wrong


def _solve_messages(p: Problem) -> list[dict]:
    return [{"role": "user", "content": prompt("solve").format(problem=problem_text(p))}]


def _reexamine(chat: CachedChat, p: Problem, prefix: tuple[str, ...]) -> list[str]:
    slots = ", ".join(f"[N{k}]" for k in range(len(p.numbers)))
    text = prompt("reexamine").format(slots=slots, masked=masked_text(p), first_slot="[N0]",
                                      expression=infix_with_numbers(prefix, p.number_texts))
    return check_refill(parse_refill(chat([{"role": "user", "content": text}]).text, len(p.numbers)), prefix, p)


def solve_one(chat: CachedChat, p: Problem, config: LLMConfig) -> LLMPrediction:
    """One problem's prediction."""
    messages = _solve_messages(p)
    reply = chat(messages)
    parsed = parse_solution(reply.text, p)
    first, rounds_used, reexamined = parsed, 0, False
    if config.reexamine:
        candidates = [(reply, parsed)] + [(r, parse_solution(r.text, p))
                                          for r in (chat(messages, sample=s) for s in range(1, config.samples))]
        wrong: list[str] = []  # sample 0's mismatches, kept unless a later sample agrees
        for k, (r, c) in enumerate(candidates):
            if c.prefix is None:
                continue
            reexamined = True
            mismatch = _reexamine(chat, p, c.prefix)
            if k == 0:
                wrong = mismatch
            if not mismatch:
                reply, parsed, wrong = r, c, mismatch
                break
        while wrong and rounds_used < config.rounds:
            rounds_used += 1
            feedback = prompt("resolve").format(expression=infix_with_numbers(parsed.prefix, p.number_texts),
                                                mismatch="; ".join(wrong), problem=problem_text(p))
            retry = chat(messages + [{"role": "assistant", "content": reply.text},
                                     {"role": "user", "content": feedback}])
            new = parse_solution(retry.text, p)
            if new.prefix is None:
                break
            reply, parsed = retry, new
            wrong = _reexamine(chat, p, parsed.prefix)
    predicted = parsed.prefix or ()
    before, after = _value(first, p), _value(parsed, p)
    changed = config.reexamine and not values_equal(before, after) and (before is not None or after is not None)
    return LLMPrediction(
        p.id, list(predicted), list(p.prefix), value_correct(predicted, p), expression_correct(predicted, p),
        expression_correct_values(predicted, p), infill_predicted=None, infill_gold=None, unscored=None,
        reply=reply.text, failure=parsed.failure, reexamined=reexamined if config.reexamine else None,
        rounds_used=rounds_used if config.reexamine else None, changed=changed if config.reexamine else None,
        first_value_correct=value_correct(first.prefix or (), p))


def _value(parsed: Parsed, p: Problem):
    return None if parsed.prefix is None else try_evaluate(parsed.prefix, p.values())


def run(config: LLMConfig, out: str | Path, progress: bool = True) -> dict:
    """Solve the test split; write predictions.parquet, metrics.parquet and config.json to `out`
    (its cache.sqlite makes a rerun or a resumed run ask nothing twice). Returns the metrics row
    (`METRICS_SCHEMA`'s columns: the counts are `llm.*`)."""
    folder = RunFolder(Path(out))
    folder.path.mkdir(parents=True, exist_ok=True)
    problems = list(split_dataset(load_dataset(config.dataset), DataConfig(config.dataset, fold=config.fold)).test)
    problems = problems[: config.limit] if config.limit else problems
    chat = CachedChat(config.base_url, config.model, config.api_key_env, folder.file(CACHE), PROMPT_VERSION,
                      config.timeout, config.max_retries, config.temperature)
    began = time.perf_counter()
    with ThreadPoolExecutor(config.concurrency) as pool:
        jobs = pool.map(lambda p: solve_one(chat, p, config), problems)
        if progress:
            from tqdm import tqdm

            jobs = tqdm(jobs, total=len(problems), desc=config.variant, leave=False)
        rows = list(jobs)
    n = max(1, len(rows))
    c = chat.counts
    llm = LLMRecord(config.model, PROMPT_VERSION, config.reexamine, config.rounds, config.samples, config.temperature,
                    failures=sum(r.failure is not None for r in rows), changed=sum(bool(r.changed) for r in rows),
                    changed_to_right=sum(bool(r.changed) and r.value_correct and not r.first_value_correct
                                         for r in rows),
                    changed_to_wrong=sum(bool(r.changed) and r.first_value_correct and not r.value_correct
                                         for r in rows),
                    calls=c.calls, cache_hits=c.cache_hits, prompt_tokens=c.prompt_tokens,
                    completion_tokens=c.completion_tokens)
    result = LLMResult(sum(r.value_correct for r in rows) / n, sum(r.expression_correct for r in rows) / n,
                       sum(r.expression_correct_values for r in rows) / n)
    data = DataRecord(n_train=None, n_valid=None, n_test=len(rows), n_test_infilled=None, data_key=None,
                      data_train_hash=None, data_test_hash=gold_hash(problems))
    metrics = MetricsRow(RunInfo(config.variant), llm_config(config.model, config.dataset, config.fold),
                         RunCost(epochs_done=0, test_seconds=time.perf_counter() - began), result, data, llm=llm)
    folder.write_llm(asdict(config), rows, metrics)
    return metrics.values()
