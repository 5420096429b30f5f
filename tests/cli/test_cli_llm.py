"""`ember llm export | chat | serve` on a tiny random-weight Llama (a config.json alone: the export seeds its
weights): greedy ids through `llm chat --prompt-ids` equal transformers' generate on the same config and seed; one
chat turn from stdin is llm_runner --chat's; `llm serve` starts, answers one greedy completion with the same
text, and stops on SIGTERM with exit 0. The binaries are the ones tests/llm builds."""

import json
import re
import signal
import subprocess
import urllib.request

import pytest
import torch

from ember.cli import main
from ember.cli.binaries import find_binary
from tests.cli.cli_support import ENV, ember
from tests.llm.test_llm_runner import BOS, EOS, MAX_SEQ_LEN, tokenizer_file  # noqa: F401 (fixture)

PROMPT = [BOS, 5, 7, 9]
NEW = 6


@pytest.fixture(scope="module")
def exported(tmp_path_factory, tokenizer_file):  # noqa: F811
    """(config.json, .pte) of a 2-layer Llama whose vocabulary is the test tokenizer's, exported by the CLI."""
    from tests.llm import tiny_models

    d = tmp_path_factory.mktemp("cli_llm")
    cfg = tiny_models.llama_config(
        vocab_size=tokenizer_file[0].get_vocab_size(),
        bos_token_id=BOS,
        eos_token_id=EOS,
        max_position_embeddings=MAX_SEQ_LEN,
    )
    (d / "config.json").write_text(json.dumps(cfg.to_dict()))
    pte = d / "tiny.pte"
    argv = ["llm", "export", "--model", str(d / "config.json"), "--max-seq-len", str(MAX_SEQ_LEN), "-o", str(pte)]
    assert main(argv) == 0
    return d / "config.json", pte


def expected_ids(config):
    from examples.llm.export import load_hf

    hf = load_hf(str(config), seed=0)  # as `llm export` built it
    with torch.no_grad():
        out = hf.generate(
            torch.tensor([PROMPT]), max_new_tokens=NEW, do_sample=False, eos_token_id=None, pad_token_id=0
        )
    ids = out[0, len(PROMPT) :].tolist()
    return ids[: ids.index(EOS) + 1] if EOS in ids else ids  # the runner stops at EOS


def test_chat_prompt_ids_match_transformers(exported):
    config, pte = exported
    ids = " ".join(map(str, PROMPT))
    r = ember("llm", "chat", "--model", pte, "--prompt-ids", ids, "--max-new-tokens", NEW, "--ids", "-q")
    assert r.returncode == 0, r.stderr
    assert [int(t) for t in r.stdout.split()] == expected_ids(config)


def test_one_chat_turn_is_llm_runners(exported, tokenizer_file):  # noqa: F811
    _, pte = exported
    args = ["--model", str(pte), "--tokenizer", tokenizer_file[1], "--max-new-tokens", str(NEW)]
    # A random model's reply need not be UTF-8: compared as bytes.
    ours = ember("llm", "chat", *args, "-q", input=b"hello world\n", text=False)
    assert ours.returncode == 0, ours.stderr
    direct = subprocess.run(
        [find_binary("llm_runner", quiet=True), *args, "--chat"], input=b"hello world\n", capture_output=True
    )
    assert direct.returncode == 0
    assert ours.stdout == direct.stdout and ours.stdout.strip()


def test_serve_answers_one_request_and_stops(exported, tokenizer_file):  # noqa: F811
    config, pte = exported
    proc = subprocess.Popen(
        [*ember_cmd(), "llm", "serve", "--model", str(pte), "--tokenizer", tokenizer_file[1], "--port", "0", "-q"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        m = re.search(r"listening on (http://[\d.]+:\d+)", line)
        assert m, f"llm serve did not start: {line!r}"
        body = json.dumps({"model": "m", "prompt": PROMPT, "max_tokens": NEW, "temperature": 0}).encode()
        req = urllib.request.Request(
            m.group(1) + "/v1/completions", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            answer = json.loads(r.read())
        ids = [i for i in expected_ids(config) if i != EOS]
        assert answer["choices"][0]["text"] == tokenizer_file[0].decode(ids)
    finally:
        proc.send_signal(signal.SIGTERM)  # the server itself: `llm serve` execs it
        assert proc.wait(timeout=60) == 0, proc.stderr.read()


def ember_cmd():
    import sys

    return [sys.executable, "-m", "ember.cli"]
