"""An OpenAI-compatible chat endpoint behind a persistent cache.

The `openai` client does the HTTP: its timeout, and its retries with exponential
backoff on 429, 5xx, timeouts and dropped connections (`max_retries`). This adds a
SQLite cache keyed by (model, prompt version, messages, parameters), so a rerun, or a
killed run resumed, asks nothing twice and reads back the same replies; and counts of
calls, cache hits and tokens. The API key is read from an environment variable and
never written anywhere: not in the cache (whose key does not include it), the tables,
or an error message.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path

from psedual.extras import require


class LLMError(RuntimeError):
    """The endpoint could not be used (down, refused the key, kept failing)."""


@dataclass(frozen=True)
class Reply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool


@dataclass
class Counts:
    calls: int = 0
    """Requests answered by the endpoint (not the cache)."""
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class CachedChat:
    def __init__(self, base_url: str, model: str, api_key_env: str, cache: Path, prompt_version: str,
                 timeout: float = 60.0, max_retries: int = 4, temperature: float = 0.0) -> None:
        OpenAI = require("openai", "llm", "`psedual llm`").OpenAI

        key = os.environ.get(api_key_env)
        if not key:
            raise LLMError(f"no API key: set the environment variable {api_key_env} (for a local server any "
                           "non-empty value)")
        self.base_url, self.model, self.prompt_version, self.temperature = base_url, model, prompt_version, temperature
        self.client = OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries)
        cache.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(cache, check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT NOT NULL)")
        self.db.commit()
        self.lock = threading.Lock()
        self.counts = Counts()

    def key(self, messages: list[dict], sample: int) -> str:
        params = {"temperature": self.temperature, "sample": sample}
        text = json.dumps([self.model, self.prompt_version, messages, params], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def __call__(self, messages: list[dict], sample: int = 0) -> Reply:
        """The reply to `messages`; `sample` > 0 asks for another draw (a different cache entry)."""
        import openai

        key = self.key(messages, sample)
        with self.lock:
            row = self.db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        if row is not None:
            with self.counts.lock:
                self.counts.cache_hits += 1
            return Reply(**json.loads(row[0]), cached=True)
        try:
            response = self.client.chat.completions.create(model=self.model, messages=messages,
                                                           temperature=self.temperature)
        except openai.AuthenticationError:
            raise LLMError(f"{self.base_url}: the endpoint refused the API key") from None
        except (openai.APIConnectionError, openai.APITimeoutError) as err:
            raise LLMError(f"{self.base_url}: no answer ({type(err).__name__}) after retries") from None
        except openai.APIStatusError as err:
            raise LLMError(f"{self.base_url}: HTTP {err.status_code} after retries") from None
        usage = response.usage
        reply = {"text": response.choices[0].message.content or "",
                 "prompt_tokens": usage.prompt_tokens if usage else 0,
                 "completion_tokens": usage.completion_tokens if usage else 0}
        with self.lock:
            self.db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?)", (key, json.dumps(reply)))
            self.db.commit()
        with self.counts.lock:
            self.counts.calls += 1
            self.counts.prompt_tokens += reply["prompt_tokens"]
            self.counts.completion_tokens += reply["completion_tokens"]
        return Reply(**reply, cached=False)
