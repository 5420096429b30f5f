"""Constrained decoding (examples/llm/grammar) end to end: a random-weight Llama run by //examples/llm:llm_runner
with --json-schema / --grammar writes output that parses and validates against its schema (or matches its grammar)
for every seed, greedy and sampled; grammar_tool's random allowed-token walks over open-ended schemas give only
text whose complete sequences validate; hostile grammars and schemas are refused with line/column or a JSON
pointer and the runner's exit codes."""

import json
import os
import re
import subprocess

import pytest

from tests.conftest import ROOT, bazel_build
from tests.llm import grammar_support as gs

MAX_SEQ_LEN = 192


@pytest.fixture(scope="module")
def binaries():
    bazel_build("//examples/llm:llm_runner", "//examples/llm/grammar:grammar_tool")
    bin_dir = os.path.join(ROOT, "bazel-bin", "examples", "llm")
    return os.path.realpath(os.path.join(bin_dir, "llm_runner")), os.path.realpath(
        os.path.join(bin_dir, "grammar", "grammar_tool")
    )


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    pytest.importorskip("tokenizers")
    return gs.train_tokenizer(str(tmp_path_factory.mktemp("tok") / "tokenizer.json"), 1024, 600_000)


@pytest.fixture(scope="module")
def model(tmp_path_factory, tokenizer):
    """A seeded random 2-layer Llama over the tokenizer's vocabulary (EOS = id 0)."""
    from tests.llm import tiny_models

    with open(tokenizer) as f:
        vocab = len(json.load(f)["model"]["vocab"])
    hf = tiny_models.llama(0, vocab_size=vocab, bos_token_id=0, eos_token_id=0, max_position_embeddings=MAX_SEQ_LEN)
    return tiny_models.export(hf, MAX_SEQ_LEN, str(tmp_path_factory.mktemp("llm") / "tiny_llama.pte"))


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def generate(runner, model, tokenizer, flag, path, temperature, seed):
    r = subprocess.run(
        [runner, "--model", model, "--tokenizer", tokenizer, "--prompt", "Data: ", "--max-new-tokens", "160"]
        + [flag, path, "--temperature", str(temperature), "--seed", str(seed)],
        capture_output=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr.decode()
    err = r.stderr.decode()
    assert "stopped at EOS" in err or "the grammar is complete" in err, err
    return r.stdout.decode("utf-8").removesuffix("\n"), err


@pytest.mark.parametrize("name", sorted(gs.BOUNDED_SCHEMAS))
def test_runner_output_validates(binaries, model, tokenizer, tmp_path, name):
    schema = gs.BOUNDED_SCHEMAS[name]
    path = write(tmp_path, f"{name}.json", json.dumps(schema))
    texts = set()
    for temperature, seed in [(0, 0), (1.0, 1), (1.0, 2), (2.0, 3), (2.0, 4)]:
        text, err = generate(binaries[0], model, tokenizer, "--json-schema", path, temperature, seed)
        value = json.loads(text, object_pairs_hook=gs.no_duplicate_keys)
        assert gs.errors(value, schema) == [], (text, err)
        assert re.search(r"grammar: \d+ masks, [\d.]+ us per mask", err), err
        texts.add(text)
    assert len(texts) >= 3  # sampling explores: the checks are not on one output


GBNF_CHECKS = {
    "csv": lambda t: re.fullmatch(
        r'(?:[a-z]+|"[^"\n]*")(?:,(?:[a-z]+|"[^"\n]*"))*(?:\n(?:[a-z]+|"[^"\n]*")(?:,(?:[a-z]+|"[^"\n]*"))*){0,3}', t
    ),
    "words": lambda t: re.fullmatch(r"(?:the|a) [a-zA-Z\u00e0-\u00ff]{1,12}[.!?]?", t),
}


@pytest.mark.parametrize("name", sorted(GBNF_CHECKS))
def test_runner_output_matches_gbnf(binaries, model, tokenizer, tmp_path, name):
    path = write(tmp_path, f"{name}.gbnf", gs.GBNF_GRAMMARS[name])
    for temperature, seed in [(0, 0), (1.0, 1), (2.0, 2)]:
        r = subprocess.run(
            [binaries[0], "--model", model, "--tokenizer", tokenizer, "--prompt", "x", "--max-new-tokens", "120"]
            + ["--grammar", path, "--temperature", str(temperature), "--seed", str(seed)],
            capture_output=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr.decode()
        text = r.stdout.decode("utf-8").removesuffix("\n")
        err = r.stderr.decode()
        if "incomplete" in err:
            continue  # the unbounded csv cells may run to --max-new-tokens
        assert GBNF_CHECKS[name](text), (text, err)


@pytest.mark.parametrize("name", sorted(gs.OPEN_SCHEMAS))
def test_random_walks_validate(binaries, tokenizer, tmp_path, name):
    """Uniformly random allowed tokens (no model): every mask equals what the matcher alone says of each token
    (--verify: no trie, no caches); every sequence that ended with EOS validates; the rest are prefixes the next
    mask still allows continuing."""
    schema = gs.OPEN_SCHEMAS[name]
    path = write(tmp_path, f"{name}.json", json.dumps(schema))
    r = subprocess.run(
        [binaries[1], "--tokenizer", tokenizer, "--json-schema", path, "--sequences", "40", "--max-steps", "60"]
        + ["--verify"],
        capture_output=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr.decode()
    complete = 0
    for line in r.stdout.decode().splitlines():
        seq = json.loads(line)
        text = seq["text"].encode("latin-1").decode("utf-8", errors="strict" if seq["complete"] else "ignore")
        if seq["complete"]:
            complete += 1
            value = json.loads(text, object_pairs_hook=gs.no_duplicate_keys)
            assert gs.errors(value, schema) == [], text
        else:
            assert int(seq["masks"][-1], 16) != 0, text  # a dead end would be a matcher bug
    assert complete >= 1


@pytest.mark.parametrize(
    "flag,text,expected",
    [
        (
            "--grammar",
            'root ::= "a" item\nitem ::= [0-9\n',
            "line 2, column 10 (byte 27), rule 'item': character class not closed with ']'",
        ),
        ("--grammar", 'root ::= list\nlist ::= list "," "x" | "x"\n', "rule 'list' is left-recursive"),
        ("--grammar", 'root ::= "x"{1,99999}', "repetition count above 10000"),
        ("--grammar", "root ::= missing", "rule 'missing' is used but never defined"),
        (
            "--json-schema",
            '{"type":"object","properties":{"a":{"type":"string","format":"email"}}}',
            "/properties/a/format: keyword 'format' is not supported",
        ),
        (
            "--json-schema",
            '{"type":"array","items":{"type":"integer","minimum":5,"maximum":1}}',
            "/items: maximum is below minimum",
        ),
        ("--json-schema", '{"type":"strin"}', "/type: unknown type 'strin'"),
        ("--json-schema", "[" * 300, "the schema is not valid JSON"),
    ],
)
def test_hostile_input_is_refused(binaries, model, tokenizer, tmp_path, flag, text, expected):
    path = write(tmp_path, "bad", text)
    r = subprocess.run(
        [binaries[0], "--model", model, "--tokenizer", tokenizer, "--prompt", "x", flag, path],
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 3, r.stderr.decode()
    assert expected in r.stderr.decode()


def test_usage_refusals(binaries, model, tokenizer, tmp_path):
    path = write(tmp_path, "g.gbnf", 'root ::= "x"')
    r = subprocess.run([binaries[0], "--model", model, "--prompt-ids", "1 2", "--grammar", path], capture_output=True)
    assert r.returncode == 2 and b"needs --tokenizer" in r.stderr
    r = subprocess.run(
        [binaries[0], "--model", model, "--tokenizer", tokenizer, "--prompt", "x"]
        + ["--grammar", path, "--json-schema", path],
        capture_output=True,
    )
    assert r.returncode == 2


@pytest.fixture(scope="module")
def sp_tokenizer(tmp_path_factory):
    """A SentencePiece BPE model with Llama-2's settings (byte fallback, no normalization, spaces as '▁')."""
    spm = pytest.importorskip("sentencepiece")
    prefix = str(tmp_path_factory.mktemp("sp") / "sp")
    lines = [line for line in gs.stdlib_text(300_000) for line in line.splitlines() if line.strip()]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines[:6000] + gs.json_samples(3000)),
        model_prefix=prefix,
        vocab_size=800,
        model_type="bpe",
        byte_fallback=True,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        split_digits=True,
        character_coverage=0.995,
        minloglevel=2,
        num_threads=1,
    )
    return prefix + ".model"


@pytest.mark.parametrize("name", ["record", "person"])
def test_sentencepiece_vocabulary(binaries, sp_tokenizer, tmp_path, name):
    """The token bytes of a SentencePiece model ('▁' as a space, <0xNN> byte pieces, control tokens never
    allowed): random allowed-token walks give only text that validates once complete."""
    schema = {**gs.BOUNDED_SCHEMAS, **gs.OPEN_SCHEMAS}[name]
    path = write(tmp_path, f"{name}.json", json.dumps(schema))
    r = subprocess.run(
        [binaries[1], "--tokenizer", sp_tokenizer, "--json-schema", path, "--sequences", "30", "--max-steps", "80"]
        + ["--verify"],
        capture_output=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr.decode()
    complete = 0
    for line in r.stdout.decode().splitlines():
        seq = json.loads(line)
        if seq["complete"]:
            complete += 1
            text = seq["text"].encode("latin-1").decode("utf-8")
            assert gs.errors(json.loads(text, object_pairs_hook=gs.no_duplicate_keys), schema) == [], text
    assert complete >= 1
