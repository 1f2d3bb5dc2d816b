"""A scripted OpenAI-compatible chat server on 127.0.0.1, for `psedual llm` without a network.

It plays a model from the problems it is given: per problem a behaviour (`right`, `caught`:
wrong, reexamination catches it and a re-solve is right, `uncaught`: wrong and its refilling
agrees, `prose`, `foreign`, `empty`), read from the prompt's problem text. It can answer
429 or stall before answering, counts the requests, and checks the bearer key.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from psedual.data.expr import infix_with_numbers
from psedual.data.record import Problem
from psedual.data.value import try_evaluate
from psedual.llm.parse import masked_text, problem_text

KEY = "sk-test-do-not-print-0123456789"


def wrong_prefix(p: Problem) -> tuple[str, ...]:
    """An expression over the problem's numbers whose value is not the answer."""
    for candidate in (("+", "N0", "N1"), ("*", "N0", "N1"), ("-", "N0", "N1"), ("+", "N0", "N0")):
        if max(int(t[1:]) for t in candidate if t.startswith("N")) < len(p.numbers):
            value = try_evaluate(candidate, p.values())
            if value is not None and value != p.answer_value():
                return candidate
    return ("+", "N0", "N0")


class FakeLLM:
    def __init__(self, problems: list[Problem], behaviour: dict[str, str], key: str = KEY) -> None:
        self.by_text = {problem_text(p): p for p in problems}
        self.by_masked = {masked_text(p): p for p in problems}
        self.behaviour, self.key = behaviour, key
        self.requests = 0
        self.fail_first: dict[str, int] = {}
        """Problem id → how many more times to answer 429 before answering."""
        self.stall_seconds = 0.0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    fake.requests += 1
                if self.headers.get("Authorization") != f"Bearer {fake.key}":
                    return self._send(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
                status, text = fake.answer(body["messages"])
                if status != 200:
                    return self._send(status, {"error": {"message": "slow down", "type": "rate_limit"}})
                if fake.stall_seconds:
                    time.sleep(fake.stall_seconds)
                self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": text}}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, messages: list[dict]) -> tuple[int, str]:
        last = messages[-1]["content"]
        if "hidden behind the slots" in last:
            masked = re.search(r"^Problem: (.*)$", last, re.MULTILINE).group(1)
            p = self.by_masked[masked]
            return 200, self._refill(p, last)
        p = self.by_text[re.search(r"^Problem: (.*)$", last, re.MULTILINE).group(1)]
        with self.lock:
            if self.fail_first.get(p.id, 0) > 0:
                self.fail_first[p.id] -= 1
                return 429, ""
        how = self.behaviour.get(p.id, "right")
        resolving = "may not fit the problem" in last
        if how == "right" or (how == "caught" and resolving):
            prefix = p.prefix
        elif how in ("caught", "uncaught"):
            prefix = wrong_prefix(p)
        elif how == "prose":
            return 200, "The answer is probably quite large, I think."
        elif how == "foreign":
            return 200, "Expression: 12345 + 67890\nAnswer: 80235"
        else:
            return 200, ""
        value = try_evaluate(prefix, p.values())
        return 200, f"Expression: {infix_with_numbers(prefix, p.number_texts)}\nAnswer: {value}"

    def _refill(self, p: Problem, prompt: str) -> str:
        """Right for every behaviour but `caught`, whose wrong solution comes back misplaced."""
        expression = re.search(r"^Expression: (.*)$", prompt, re.MULTILINE).group(1)
        wrong = (self.behaviour.get(p.id) == "caught"
                 and expression == infix_with_numbers(wrong_prefix(p), p.number_texts))
        used = set(re.findall(r"[\d.,/]+", expression))
        lines = []
        for k, text in enumerate(p.number_texts):
            lines.append(f"[N{k}]: {text if text in used else 'none'}")
        if wrong:
            lines[0] = "[N0]: none" if "none" not in lines[0] else f"[N0]: {p.number_texts[0]}"
        return "\n".join(lines)
