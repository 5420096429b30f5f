"""Load for llm_server (locust): each simulated client alternates streamed chat and plain completions, checks
that every answer is complete and well formed (a stream's events all parse, it ends with [DONE] after a finish
reason), and reports time to first token as its own request type ("TTFT <kind>") beside the whole request.

    .venv/bin/python3 -m locust -f examples/llm/server/locustfile.py --headless -u 16 -r 16 -t 60s \\
        --host http://127.0.0.1:8080

LLM_LOAD_MAX_TOKENS (default 16) bounds each answer."""

import json
import os
import time

from locust import HttpUser, between, task

MAX_TOKENS = int(os.environ.get("LLM_LOAD_MAX_TOKENS", "16"))
PROMPTS = ["hello world", "edge runtime memory", "kernel tensor planned", "token model"]


class Client(HttpUser):
    wait_time = between(0.0, 0.05)

    def on_start(self):
        self.turn = 0

    def _report(self, name, started, error=None):
        self.environment.events.request.fire(
            request_type="TTFT",
            name=name,
            response_time=(time.perf_counter() - started) * 1000.0,
            response_length=0,
            exception=error,
            context={},
        )

    @task(3)
    def streamed_chat(self):
        self.turn += 1
        body = {
            "model": "any",
            "messages": [{"role": "user", "content": PROMPTS[self.turn % len(PROMPTS)]}],
            "max_tokens": MAX_TOKENS,
            "temperature": 0.8,
            "seed": self.turn,
            "stream": True,
        }
        started = time.perf_counter()
        first = True
        finish = None
        with self.client.post(
            "/v1/chat/completions", json=body, stream=True, catch_response=True, name="chat stream"
        ) as r:
            if r.status_code != 200:
                r.failure(f"status {r.status_code}: {r.text[:200]}")
                return
            done = False
            for line in r.iter_lines():
                if not line:
                    continue
                text = line.decode("utf-8")  # raises on a delta that is not whole UTF-8
                if not text.startswith("data: "):
                    r.failure(f"not an event: {text[:80]}")
                    return
                data = text[len("data: ") :]
                if data == "[DONE]":
                    done = True
                    break
                event = json.loads(data)
                choice = event["choices"][0]
                if first and choice["delta"].get("content"):
                    self._report("chat stream", started)
                    first = False
                finish = choice.get("finish_reason") or finish
            if not done or finish not in ("stop", "length"):
                r.failure(f"stream incomplete: done={done} finish={finish}")
            else:
                r.success()

    @task(1)
    def completion(self):
        self.turn += 1
        body = {"prompt": PROMPTS[self.turn % len(PROMPTS)], "max_tokens": MAX_TOKENS, "temperature": 0}
        with self.client.post("/v1/completions", json=body, catch_response=True, name="completion") as r:
            if r.status_code != 200:
                r.failure(f"status {r.status_code}: {r.text[:200]}")
                return
            answer = r.json()
            if answer["choices"][0]["finish_reason"] not in ("stop", "length") or "usage" not in answer:
                r.failure(f"malformed answer: {r.text[:200]}")
            else:
                r.success()
