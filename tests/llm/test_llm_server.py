"""//examples/llm/server:llm_server end to end with the official `openai` client: completions and chat, streamed
and not, equal to llm_runner's greedy tokens; seeded sampling, stop sequences, refusals by parameter, 429 when the
queue is full, a disconnected stream freeing its slot, concurrent requests that do not disturb each other, and a
short locust run with every stream complete and no memory growth."""

import importlib.util
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import ROOT, bazel_build
from tests.llm.test_llm_runner import BOS, model, tokenizer_file  # noqa: F401 (fixtures)

openai = pytest.importorskip("openai")


@pytest.fixture(scope="module")
def binaries():
    bazel_build("//examples/llm/server:llm_server", "//examples/llm:llm_runner")
    bin_dir = os.path.realpath(os.path.join(ROOT, "bazel-bin"))
    return os.path.join(bin_dir, "examples/llm/server/llm_server"), os.path.join(bin_dir, "examples/llm/llm_runner")


class Server:
    """An llm_server process on a free port, stopped with SIGTERM (it must exit 0)."""

    def __init__(self, binary, pte, tokenizer, *args):
        self.proc = subprocess.Popen(
            [binary, "--model", pte, "--tokenizer", tokenizer, "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://[\d.]+:\d+)", line)
        assert m, (
            f"llm_server did not start: {line!r} {self.proc.stderr.read() if self.proc.poll() is not None else ''}"
        )
        self.url = m.group(1)
        self.client = openai.OpenAI(base_url=self.url + "/v1", api_key="unused", max_retries=0, timeout=120)

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(next(line for line in f if line.startswith("VmRSS:")).split()[1])

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=60) == 0, self.proc.stderr.read()


@pytest.fixture(scope="module")
def server(binaries, model, tokenizer_file):  # noqa: F811
    s = Server(binaries[0], model[1], tokenizer_file[1], "--slots", "2", "--queue", "8")
    yield s
    s.stop()


def raw(url, path, body=None, method=None):
    """(status, parsed JSON body) of one request, errors included."""
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(url + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def runner_text(binaries, model, tokenizer_file, ids, n):  # noqa: F811
    r = subprocess.run(
        [binaries[1], "--model", model[1], "--prompt-ids", " ".join(map(str, ids)), "--max-new-tokens", str(n)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    generated = [int(t) for t in r.stdout.split()]
    return tokenizer_file[0].decode(generated, skip_special_tokens=False), generated


def test_health_and_models(server):
    assert raw(server.url, "/health") == (200, {"status": "ok"})
    models = server.client.models.list()
    assert [m.id for m in models.data] == ["tiny_llama"]
    assert server.client.models.retrieve("tiny_llama").owned_by == "ember"
    status, body = raw(server.url, "/v1/models/other")
    assert status == 404 and body["error"]["param"] == "model"
    status, body = raw(server.url, "/v2/nothing")
    assert status == 404 and "no route GET /v2/nothing" in body["error"]["message"]


def test_greedy_completion_equals_llm_runner(server, binaries, model, tokenizer_file):  # noqa: F811
    ids = [BOS, 5, 7, 9, 11]
    expected, generated = runner_text(binaries, model, tokenizer_file, ids, 12)
    c = server.client.completions.create(model="whatever", prompt=ids, max_tokens=12, temperature=0)
    assert c.model == "tiny_llama"  # any name is the one model served
    if 2 in generated:  # EOS: the runner stops there and writes no text for it
        assert c.choices[0].finish_reason == "stop"
    else:
        assert c.choices[0].finish_reason == "length"
        assert c.usage.completion_tokens == 12
    assert c.choices[0].text == expected.replace("\ufffd", "\ufffd")
    assert c.usage.prompt_tokens == len(ids)


def test_stream_equals_whole_answer(server):
    kwargs = dict(model="m", prompt="hello world edge", max_tokens=20, temperature=0)
    whole = server.client.completions.create(**kwargs)
    chunks = list(server.client.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs))
    text = "".join(ch.choices[0].text for ch in chunks if ch.choices)
    assert text == whole.choices[0].text
    assert chunks[-2].choices[0].finish_reason == whole.choices[0].finish_reason
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == whole.usage.total_tokens


def test_chat_streamed_and_not(server):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello model"}]
    whole = server.client.chat.completions.create(model="m", messages=messages, max_tokens=10, temperature=0)
    assert whole.choices[0].message.role == "assistant"
    chunks = list(
        server.client.chat.completions.create(model="m", messages=messages, max_tokens=10, temperature=0, stream=True)
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks) == whole.choices[0].message.content
    assert chunks[-1].choices[0].finish_reason == whole.choices[0].finish_reason


def test_seeded_sampling_and_top_p(server):
    def sample(seed, top_p=1.0):
        return (
            server.client.completions.create(
                model="m", prompt="token", max_tokens=16, temperature=1.0, top_p=top_p, seed=seed
            )
            .choices[0]
            .text
        )

    assert sample(5) == sample(5)
    assert sample(5, 0.5) == sample(5, 0.5)
    assert len({sample(s) for s in range(6)}) > 1
    # top_p close to 0 keeps only the most probable token: greedy's text whatever the seed.
    greedy = server.client.completions.create(model="m", prompt="token", max_tokens=16, temperature=0).choices[0].text
    assert sample(1, 1e-6) == sample(2, 1e-6) == greedy


def test_stop_sequence_ends_the_answer(server):
    kwargs = dict(model="m", prompt="kernel tensor", max_tokens=24, temperature=0)
    full = server.client.completions.create(**kwargs).choices[0].text
    stop = full[len(full) // 2 : len(full) // 2 + 3]
    assert len(stop) == 3
    for stream in (False, True):
        if stream:
            chunks = list(server.client.completions.create(stop=[stop, "\x00never"], stream=True, **kwargs))
            text, finish = "".join(c.choices[0].text for c in chunks), chunks[-1].choices[0].finish_reason
        else:
            c = server.client.completions.create(stop=[stop, "\x00never"], **kwargs)
            text, finish = c.choices[0].text, c.choices[0].finish_reason
        assert text == full[: full.index(stop)] and finish == "stop"


def test_refusals_name_the_parameter(server):
    with pytest.raises(openai.BadRequestError) as e:
        server.client.completions.create(model="m", prompt="x", n=2)
    assert e.value.body["param"] == "n"
    with pytest.raises(openai.BadRequestError) as e:
        server.client.completions.create(model="m", prompt="x", max_tokens=10_000)
    assert e.value.body["param"] == "max_tokens" and "context is 64 tokens" in e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:
        server.client.chat.completions.create(model="m", messages=[{"role": "robot", "content": "x"}])
    assert e.value.body["param"] == "messages"
    status, body = raw(server.url, "/v1/completions", '{"prompt": "x", "max_tokens": }')
    assert status == 400 and "not valid JSON" in body["error"]["message"]
    status, body = raw(server.url, "/v1/completions", b"\xff\xfe" * 8)
    assert status == 400
    assert raw(server.url, "/health")[0] == 200  # still serving


def test_concurrent_requests_do_not_disturb_each_other(server):
    prompts = [f"edge {w} memory" for w in ("hello", "world", "kernel", "tensor", "planned", "model")]
    alone = {
        p: server.client.completions.create(model="m", prompt=p, max_tokens=12, temperature=0).choices[0].text
        for p in prompts
    }
    results = {}

    def ask(p):
        results[p] = server.client.completions.create(model="m", prompt=p, max_tokens=12, temperature=0).choices[0].text

    threads = [threading.Thread(target=ask, args=(p,)) for p in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == alone


@pytest.fixture(scope="module")
def long_model(tmp_path_factory, tokenizer_file):  # noqa: F811
    """A wider, deeper random Llama with a 1,024-position context: generating to its end takes long enough for a
    second request to find its only slot busy."""
    from tests.llm import tiny_models

    hf = tiny_models.llama(
        0,
        vocab_size=tokenizer_file[0].get_vocab_size(),
        hidden_size=384,
        intermediate_size=1024,
        num_hidden_layers=6,
        num_attention_heads=6,
        max_position_embeddings=1024,
    )
    return tiny_models.export(hf, 1024, str(tmp_path_factory.mktemp("llm") / "long.pte"))


def test_full_queue_is_429_and_a_dropped_stream_is_cancelled(binaries, long_model, tokenizer_file):  # noqa: F811
    s = Server(binaries[0], long_model, tokenizer_file[1], "--slots", "1", "--queue", "0")
    try:
        # Hold the only slot with a stream of 1,000 tokens, read its first event, then ask again: no slot, no queue.
        stream = s.client.completions.create(model="m", prompt=[BOS, 3], max_tokens=1000, temperature=0, stream=True)
        next(iter(stream))
        with pytest.raises(openai.RateLimitError) as e:
            s.client.completions.create(model="m", prompt="x", max_tokens=2)
        assert "busy" in e.value.body["message"]
        stream.close()  # the client goes away: its generation stops at the next token and the slot frees
        deadline = time.time() + 60
        while True:
            try:
                s.client.completions.create(model="m", prompt="x", max_tokens=2)
                break
            except openai.RateLimitError:
                assert time.time() < deadline, "the dropped stream's slot was never freed"
                time.sleep(0.05)
    finally:
        s.stop()
    log = s.proc.stderr.read()
    m = re.search(r"cmpl-\d+ cancelled after (\d+) tokens", log)
    assert m and int(m.group(1)) < 1000, log


def test_locust_load_every_stream_complete_no_growth(server, tmp_path):
    # Not imported here: importing locust patches this process's threads and sockets with gevent's.
    if importlib.util.find_spec("locust") is None:
        pytest.skip("locust is not installed (requirements.txt)")

    def load(seconds):
        csv = tmp_path / f"load{seconds}"
        r = subprocess.run(
            [
                os.path.join(ROOT, ".venv", "bin", "python3"),
                "-m",
                "locust",
                "-f",
                os.path.join(ROOT, "examples", "llm", "server", "locustfile.py"),
                "--headless",
                "-u",
                "6",
                "-r",
                "6",
                "-t",
                f"{seconds}s",
                "--host",
                server.url,
                "--csv",
                str(csv),
                "--only-summary",
            ],
            capture_output=True,
            text=True,
            timeout=seconds + 120,
            env={**os.environ, "LLM_LOAD_MAX_TOKENS": "8"},
        )
        stats = {row.split(",")[1]: row.split(",") for row in open(f"{csv}_stats.csv").read().splitlines()[1:]}
        return r, stats

    load(3)  # warm: every slot's arenas touched
    before = server.rss_kb()
    r, stats = load(8)
    after = server.rss_kb()
    total = stats["Aggregated"]
    requests, failures = int(total[2]), int(total[3])
    assert failures == 0, r.stderr[-3000:]
    assert requests >= 50, r.stderr[-3000:]
    assert after - before < 8 * 1024, f"server RSS grew from {before} to {after} kB over {requests} requests"


PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 5},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 1},
    },
    "required": ["name", "age"],
}


def test_response_format_json_schema_always_validates(server):
    from tests.llm.grammar_support import errors

    for seed in range(4):
        for stream in (False, True):
            kwargs = dict(
                model="m",
                messages=[{"role": "user", "content": "a person"}],
                max_tokens=40,
                temperature=1.0,
                seed=seed,
                response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}},
            )
            if stream:
                text = "".join(
                    c.choices[0].delta.content or ""
                    for c in server.client.chat.completions.create(stream=True, **kwargs)
                )
            else:
                reply = server.client.chat.completions.create(**kwargs)
                assert reply.choices[0].finish_reason == "stop", reply
                text = reply.choices[0].message.content
            assert errors(json.loads(text), PERSON) == [], text
    obj = server.client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "x"}],
        max_tokens=40,
        seed=1,
        response_format={"type": "json_object"},
    )
    assert isinstance(json.loads(obj.choices[0].message.content), dict)
    with pytest.raises(openai.BadRequestError) as e:
        server.client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "x"}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "n", "schema": {"type": "string", "pattern": "a+"}},
            },
        )
    assert e.value.body["param"] == "response_format" and "pattern" in e.value.body["message"]


def test_required_tool_choice_gives_a_valid_call(binaries, long_model, tokenizer_file):  # noqa: F811
    # The call's JSON runs to about 40 tokens of this small vocabulary: the model with the longer context.
    server = Server(binaries[0], long_model, tokenizer_file[1], "--slots", "1")
    try:
        check_tool_calls(server)
    finally:
        server.stop()


def check_tool_calls(server):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "add",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "x": {"type": "integer", "minimum": 0, "maximum": 9},
                        "y": {"type": "integer", "minimum": 0, "maximum": 9},
                    },
                    "required": ["x", "y"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "greet",
                "parameters": {
                    "type": "object",
                    "properties": {"who": {"type": "string", "maxLength": 4}},
                    "required": ["who"],
                },
            },
        },
    ]
    for seed, choice in [(1, "required"), (2, {"type": "function", "function": {"name": "greet"}})]:
        kwargs = dict(
            model="m",
            messages=[{"role": "user", "content": "add 2 and 3"}],
            tools=tools,
            tool_choice=choice,
            max_tokens=120,
            seed=seed,
        )
        reply = server.client.chat.completions.create(**kwargs)
        assert reply.choices[0].finish_reason == "tool_calls", reply
        call = reply.choices[0].message.tool_calls[0]
        assert call.function.name in ("add", "greet") and (choice == "required" or call.function.name == "greet")
        params = next(t["function"]["parameters"] for t in tools if t["function"]["name"] == call.function.name)
        from tests.llm.grammar_support import errors

        assert errors(json.loads(call.function.arguments), params) == []
        chunks = list(server.client.chat.completions.create(stream=True, **kwargs))
        streamed = [c.choices[0].delta.tool_calls[0] for c in chunks if c.choices and c.choices[0].delta.tool_calls]
        assert [(t.function.name, t.function.arguments) for t in streamed] == [
            (call.function.name, call.function.arguments)
        ]
        assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_chat_template_and_prefix_cache(binaries, long_model, tokenizer_file, tmp_path):  # noqa: F811
    """ChatML rendered by the model's template (the prompt's tokens are transformers' rendering's); requests
    sharing a system prompt fork the cached state and answer as a server without the cache does; usage and
    /metrics count the prompt tokens that were not prefilled."""
    from transformers import PreTrainedTokenizerFast

    template = open(os.path.join(ROOT, "tests", "llm", "chat_templates", "qwen2.jinja")).read()
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"chat_template": template, "eos_token": "</s>", "bos_token": "<s>"}))
    reference = PreTrainedTokenizerFast(tokenizer_file=tokenizer_file[1], chat_template=template)
    systems = [
        {"role": "system", "content": "You are a kernel tensor model with planned memory."},
        {"role": "system", "content": "Answer as a runtime would."},
    ]
    words = ("world", "edge", "runtime")
    conversations = [[systems[i % 2], {"role": "user", "content": f"hello {w}"}] for i, w in enumerate(words)]
    answers = {}
    for cache in ("4", "0"):
        s = Server(
            binaries[0],
            long_model,
            tokenizer_file[1],
            "--chat-template",
            str(config),
            "--slots",
            "1",
            "--prefix-cache",
            cache,
        )
        try:
            answers[cache], cached = [], []
            for messages in conversations + conversations[::-1]:
                r = s.client.chat.completions.create(model="m", messages=messages, max_tokens=8, temperature=0)
                answers[cache].append(r.choices[0].message.content)
                ids = reference.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
                ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
                assert r.usage.prompt_tokens == len(ids)
                cached.append(r.usage.prompt_tokens_details.cached_tokens)
            metrics = prometheus(s.url)
        finally:
            s.stop()
        assert metrics["ember_prompt_tokens_cached_total"] == sum(cached)
        assert metrics['ember_requests_total{outcome="finished"}'] == 6
        if cache == "4":
            # One slot, whose session holds the previous conversation. Each system prompt is prefilled once (the
            # first two requests); a request whose system prompt differs from the slot's forks the cached one
            # (3, 5, 6); request 4 repeats request 3, all of it kept in the slot but the last token.
            n_system = []
            for m in systems:
                ids = reference.apply_chat_template([m], tokenize=True)
                n_system.append(len(ids["input_ids"] if hasattr(ids, "keys") else ids))
            assert cached[0] == 0 and cached[1] < n_system[1], cached
            assert [cached[2], cached[4], cached[5]] == [n_system[0], n_system[1], n_system[0]], (cached, n_system)
            assert metrics["ember_prefix_cache_misses_total"] == 2
            assert metrics["ember_prefix_cache_hits_total"] == 3
    assert answers["4"] == answers["0"]


def prometheus(url):
    """GET /metrics parsed: {'name{labels}': value} for every sample line."""
    with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
        assert r.headers["Content-Type"].startswith("text/plain")
        lines = r.read().decode().splitlines()
    return {k: float(v) for k, v in (ln.rsplit(" ", 1) for ln in lines if ln and not ln.startswith("#"))}
