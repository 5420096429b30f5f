"""Ember's token masks against xgrammar's (the peer; .venv-xgrammar from tools/setup_xgrammar_venv.sh, skipped
without it): for the same tokenizer (a byte-level BPE trained here offline) and grammar, grammar_tool generates
token sequences step by step (uniformly random allowed tokens, fixed seeds) and xgrammar replays them
(tests/llm/xgrammar_compare.py), comparing the allowed-token bitmask before every token.

Three comparisons:
- GBNF grammars, given to both parsers as text (xgrammar's Grammar.from_ebnf).
- Ember's compiled grammar of every schema given to xgrammar as EBNF: the matchers and masks alone.
- Schemas given to each engine's own JSON Schema compiler (xgrammar: any_whitespace=False, separators=(",", ":"),
  strict_mode=True), for the schemas whose languages the two define alike. Where they differ by design (see
  bench/results/2026-11-28-grammar.md: xgrammar's length-bounded strings allow raw control characters and no
  escapes, its number ranges cap fractions at 6 digits, its any-value arrays and objects use ", "), only the second
  comparison applies. xgrammar also lets a string hold UTF-8-encoded surrogates (bytes ED A0..BF), which are not
UTF-8 and which Ember refuses: steps where that is the whole difference are counted apart, not as mismatches."""

import json
import os
import subprocess

import pytest

from tests.conftest import ROOT, bazel_build
from tests.llm import grammar_support as gs

XGR_PYTHON = os.path.join(ROOT, ".venv-xgrammar", "bin", "python3")
COMPARE = os.path.join(ROOT, "tests", "llm", "xgrammar_compare.py")
SAME_LANGUAGE = ["person_open", "points", "nested", "record", "choice_open"]
EXTRA_SCHEMAS = {
    # The bounded schemas with their strings unbounded (the shape whose language both define alike).
    "person_open": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "tags": {"type": "array", "items": {"enum": ["a", "b", "ok", 3]}, "maxItems": 3},
            "admin": {"type": "boolean"},
        },
        "required": ["name", "age"],
        "additionalProperties": False,
    },
    "choice_open": {
        "anyOf": [
            {"type": "string"},
            {"type": "integer", "minimum": -9, "maximum": 9},
            {"type": "null"},
            {"const": {"k": [1, "é"]}},
        ]
    },
}
ALL_SCHEMAS = {**gs.BOUNDED_SCHEMAS, **gs.OPEN_SCHEMAS, **EXTRA_SCHEMAS}

pytestmark = pytest.mark.skipif(
    not os.path.exists(XGR_PYTHON),
    reason="no .venv-xgrammar: run tools/setup_xgrammar_venv.sh to check against xgrammar",
)


@pytest.fixture(scope="module")
def tool():
    bazel_build("//examples/llm/grammar:grammar_tool")
    return os.path.realpath(os.path.join(ROOT, "bazel-bin", "examples", "llm", "grammar", "grammar_tool"))


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    pytest.importorskip("tokenizers")
    return gs.train_tokenizer(str(tmp_path_factory.mktemp("tok") / "tokenizer.json"), 1024, 600_000)


def compare(tool, tokenizer, tmp_path, flag, path, peer_flag, peer_path, sequences=12, steps=48):
    seqs = tmp_path / "seqs.jsonl"
    with open(seqs, "w") as out:
        subprocess.run(
            [tool, "--tokenizer", tokenizer, flag, path, "--sequences", str(sequences), "--max-steps", str(steps)]
            + ["--seed", "7"],
            stdout=out,
            check=True,
            timeout=300,
        )
    r = subprocess.run(
        [XGR_PYTHON, COMPARE, tokenizer, str(seqs), peer_flag, peer_path], capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["steps"] > sequences
    return result


@pytest.mark.parametrize("name", sorted(gs.GBNF_GRAMMARS))
def test_gbnf_masks_equal(tool, tokenizer, tmp_path, name):
    path = tmp_path / f"{name}.gbnf"
    path.write_text(gs.GBNF_GRAMMARS[name])
    result = compare(tool, tokenizer, tmp_path, "--grammar", str(path), "--ebnf", str(path))
    assert result["mismatches"] == 0, result


@pytest.mark.parametrize("name", sorted(ALL_SCHEMAS))
def test_compiled_schema_masks_equal(tool, tokenizer, tmp_path, name):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(ALL_SCHEMAS[name]))
    gbnf = tmp_path / f"{name}.gbnf"
    with open(gbnf, "w") as out:
        subprocess.run([tool, "--json-schema", str(path), "--print-grammar"], stdout=out, check=True)
    result = compare(tool, tokenizer, tmp_path, "--json-schema", str(path), "--ebnf", str(gbnf))
    assert result["mismatches"] == 0, result


@pytest.mark.parametrize("name", SAME_LANGUAGE)
def test_schema_masks_equal_xgrammar_compiler(tool, tokenizer, tmp_path, name):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(ALL_SCHEMAS[name]))
    result = compare(tool, tokenizer, tmp_path, "--json-schema", str(path), "--json-schema", str(path))
    assert result["mismatches"] == 0, result
