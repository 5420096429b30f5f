"""//examples/llm:llm_runner end to end: a tiny random-weight Llama from transformers, exported with
examples/llm/export.py, generates the same greedy tokens as transformers' own generate; a byte-level BPE
tokenizer trained here drives a text run; seeded sampling is reproducible; bad inputs are refused with named
errors and the runner's exit codes (3: program/tokenizer refused, 4: prompt refused)."""

import os
import subprocess

import pytest
import torch

from tests.conftest import ROOT, bazel_build

MAX_SEQ_LEN = 64
BOS, EOS = 1, 2
SPECIALS = ["<pad>", "<s>", "</s>"]  # ids 0, 1, 2: the model's pad, BOS and EOS


@pytest.fixture(scope="module")
def llm_runner():
    bazel_build("//examples/llm:llm_runner")
    return os.path.realpath(os.path.join(ROOT, "bazel-bin", "examples", "llm", "llm_runner"))


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory):
    """A byte-level BPE tokenizer.json trained on a small generated corpus (nothing downloaded)."""
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    words = ["hello", "world", "edge", "runtime", "token", "model", "memory", "planned", "kernel", "tensor"]
    lines = [" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(8)) + f" {i}." for i in range(400)]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIALS,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(lines, trainer)
    assert [tok.token_to_id(s) for s in SPECIALS] == [0, BOS, EOS]
    path = str(tmp_path_factory.mktemp("tok") / "tokenizer.json")
    tok.save(path)
    return tok, path


@pytest.fixture(scope="module")
def model(tmp_path_factory, tokenizer_file):
    """(transformers model, .pte path): a seeded random 2-layer Llama whose vocabulary is the tokenizer's."""
    from tests.llm import tiny_models

    vocab = tokenizer_file[0].get_vocab_size()
    hf = tiny_models.llama(0, vocab_size=vocab, bos_token_id=BOS, eos_token_id=EOS, max_position_embeddings=MAX_SEQ_LEN)
    return hf, tiny_models.export(hf, MAX_SEQ_LEN, str(tmp_path_factory.mktemp("llm") / "tiny_llama.pte"))


def run(runner, *args, check=True):
    r = subprocess.run([runner, *args], capture_output=True, timeout=300)
    if check:
        assert r.returncode == 0, f"llm_runner {' '.join(args)} exited {r.returncode}:\n{r.stderr.decode()}"
    return r


def runner_ids(r):
    return [int(t) for t in r.stdout.decode().split()]


@pytest.mark.parametrize("prompt", [[BOS, 5, 7, 9], [BOS] + list(range(20, 50)), [42]])
def test_greedy_ids_match_transformers(llm_runner, model, prompt):
    hf, pte = model
    with torch.no_grad():
        out = hf.generate(torch.tensor([prompt]), max_new_tokens=20, do_sample=False, eos_token_id=None, pad_token_id=0)
    expected = out[0, len(prompt) :].tolist()
    r = run(
        llm_runner,
        "--model",
        pte,
        "--prompt-ids",
        " ".join(map(str, prompt)),
        "--ids",
        "--max-new-tokens",
        "20",
        "--temperature",
        "0",
    )
    ours = runner_ids(r)
    # The runner stops at EOS (and prints it); transformers was told not to.
    if EOS in expected:
        expected = expected[: expected.index(EOS) + 1]
    assert ours == expected
    # --ignore-eos runs the whole 20 tokens whatever comes out.
    r = run(
        llm_runner,
        "--model",
        pte,
        "--prompt-ids",
        " ".join(map(str, prompt)),
        "--ids",
        "--max-new-tokens",
        "20",
        "--ignore-eos",
    )
    assert runner_ids(r) == out[0, len(prompt) :].tolist()


def test_text_generation_streams_text_and_stats(llm_runner, model, tokenizer_file):
    tok, tok_path = tokenizer_file
    _, pte = model
    args = ["--model", pte, "--tokenizer", tok_path, "--prompt", "hello world", "--max-new-tokens", "16"]
    text = run(llm_runner, *args)
    ids = run(llm_runner, *args, "--ids")
    generated = runner_ids(ids)
    assert 1 <= len(generated) <= 16
    # The text printed is the tokenizer's decode of the generated ids (EOS not written as text).
    expected = tok.decode([i for i in generated if i != EOS], skip_special_tokens=False)
    assert text.stdout.decode("utf-8", errors="replace").rstrip("\n") == expected
    err = text.stderr.decode()
    prompt_tokens = 1 + len(tok.encode("hello world", add_special_tokens=False).ids)  # BOS + the text
    assert f"prompt tokens: {prompt_tokens}\n" in err
    assert f"generated tokens: {len(generated)} " in err
    for line in (
        "time to first token: ",
        "prefill: ",
        "decode: ",
        "tokens/s",
        "peak RSS",
        "bytes planned by MethodMeta",
    ):
        assert line in err, f"no '{line}' in:\n{err}"


def test_seeded_sampling_is_reproducible(llm_runner, model):
    _, pte = model

    def sample(seed):
        r = run(
            llm_runner,
            "--model",
            pte,
            "--prompt-ids",
            "1 5 7",
            "--ids",
            "--max-new-tokens",
            "24",
            "--temperature",
            "1.0",
            "--seed",
            str(seed),
            "--ignore-eos",
        )
        return runner_ids(r)

    a, b, c = sample(1), sample(1), sample(2)
    assert len(a) == 24
    assert a == b
    assert a != c  # 24 draws over a few hundred tokens: a collision would be astronomically unlikely


def test_prompt_longer_than_max_seq_len_is_refused(llm_runner, model):
    _, pte = model
    r = run(llm_runner, "--model", pte, "--prompt-ids", " ".join(["5"] * (MAX_SEQ_LEN + 3)), "--ids", check=False)
    assert r.returncode == 4
    err = r.stderr.decode()
    assert "InvalidArgument" in err and f"max_seq_len is {MAX_SEQ_LEN}" in err
    # The prompt fits but prompt + new tokens do not: refused too, saying how many would fit.
    r = run(
        llm_runner, "--model", pte, "--prompt-ids", " ".join(["5"] * 10), "--max-new-tokens", "60", "--ids", check=False
    )
    assert r.returncode == 4
    assert f"--max-new-tokens {MAX_SEQ_LEN - 10 + 1} or less" in r.stderr.decode()
    r = run(llm_runner, "--model", pte, "--prompt-ids", "1 99999", "--ids", check=False)
    assert r.returncode == 4 and "outside the vocabulary" in r.stderr.decode()


def test_missing_files_exit_3(llm_runner, model, tmp_path):
    _, pte = model
    r = run(llm_runner, "--model", str(tmp_path / "missing.pte"), "--prompt-ids", "1", check=False)
    assert r.returncode == 3
    assert "missing.pte" in r.stderr.decode() and "AccessFailed" in r.stderr.decode()
    r = run(llm_runner, "--model", pte, "--tokenizer", str(tmp_path / "missing.json"), "--prompt", "hi", check=False)
    assert r.returncode == 3
    assert "missing.json" in r.stderr.decode()
    # A malformed tokenizer: the refusal names the JSON path, on the runner's own line.
    bad = tmp_path / "bad.json"
    bad.write_text('{"pre_tokenizer": {"type": "ByteLevel"}, "model": {"vocab": {"a": 0}, "merges": ["a b"]}}')
    r = run(llm_runner, "--model", pte, "--tokenizer", str(bad), "--prompt", "hi", check=False)
    assert r.returncode == 3
    assert (
        f'llm_runner: tokenizer {bad} refused: InvalidArgument: tokenizer.json: model.merges[0]: "b" missing from '
        'model.vocab (merging "a" and "b")'
    ) in r.stderr.decode()
    not_a_program = tmp_path / "junk.pte"
    not_a_program.write_bytes(b"\0" * 64)
    r = run(llm_runner, "--model", str(not_a_program), "--prompt-ids", "1", check=False)
    assert r.returncode == 3 and "junk.pte" in r.stderr.decode()


def test_usage_errors_exit_2(llm_runner, model):
    _, pte = model
    assert run(llm_runner, "--model", pte, check=False).returncode == 2
    assert run(llm_runner, "--model", pte, "--prompt", "hi", check=False).returncode == 2  # no tokenizer
    assert run(llm_runner, "--model", pte, "--prompt-ids", "1 x", check=False).returncode == 2
    assert run(llm_runner, "--model", pte, "--prompt-ids", "1", "--temperature", "-1", check=False).returncode == 2
