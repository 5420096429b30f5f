"""Shared by the constrained-decoding tests and bench.llm_grammar: a byte-level BPE tokenizer.json trained offline
(Python's standard library sources plus seeded compact JSON, so JSON punctuation has merged tokens), the schemas
and grammars they run, and a small JSON Schema validator for the keywords examples/llm/grammar supports."""

import json
import os
import random
import sysconfig

EOS_TOKEN = "<|endoftext|>"  # id 0, as SmolLM's


def json_samples(n: int, seed: int = 0):
    rng = random.Random(seed)
    words = ["name", "age", "id", "tags", "value", "items", "type", "x", "y", "flag", "a", "b", "c", "ok", "list"]

    def value(depth):
        k = rng.randrange(7 if depth < 3 else 4)
        if k == 0:
            return rng.randint(-1000, 1000)
        if k == 1:
            return rng.choice(words) + ("é" if rng.random() < 0.1 else "")
        if k == 2:
            return rng.choice([True, False, None])
        if k == 3:
            return round(rng.uniform(-100, 100), rng.randrange(1, 4))
        if k in (4, 5):
            return {rng.choice(words): value(depth + 1) for _ in range(rng.randrange(1, 4))}
        return [value(depth + 1) for _ in range(rng.randrange(0, 4))]

    return [json.dumps(value(0), separators=(",", ":"), ensure_ascii=rng.random() < 0.5) for _ in range(n)]


def stdlib_text(max_bytes: int):
    """Python sources of the running interpreter's standard library, in a fixed order, up to max_bytes."""
    root = sysconfig.get_paths()["stdlib"]
    out, total = [], 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("site-packages", "test", "tests", "__pycache__"))
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as f:
                text = f.read()
            out.append(text)
            total += len(text)
            if total >= max_bytes:
                return out
    return out


def train_tokenizer(path: str, vocab_size: int, corpus_bytes: int) -> str:
    """Trains (deterministically) and saves a byte-level BPE tokenizer.json with EOS_TOKEN as id 0."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS_TOKEN],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    corpus = stdlib_text(corpus_bytes) + json_samples(max(2000, corpus_bytes // 2000))
    tok.train_from_iterator(corpus, trainer)
    assert tok.token_to_id(EOS_TOKEN) == 0
    tok.save(path)
    return path


# Schemas whose every sentence is finite (bounded strings, arrays and integers): a random model must finish them.
BOUNDED_SCHEMAS = {
    "person": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 8},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "tags": {"type": "array", "items": {"enum": ["a", "b", "ok", 3]}, "maxItems": 3},
            "admin": {"type": "boolean"},
        },
        "required": ["name", "age"],
        "additionalProperties": False,
    },
    "points": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "x": {"type": "integer", "minimum": -50, "maximum": 50},
                "ok": {"type": ["boolean", "null"]},
            },
            "required": ["x", "ok"],
        },
        "minItems": 1,
        "maxItems": 3,
    },
    "choice": {
        "anyOf": [
            {"type": "string", "maxLength": 4},
            {"type": "integer", "minimum": -9, "maximum": 9},
            {"type": "null"},
            {"const": {"k": [1, "é"]}},
        ]
    },
    "nested": {
        "type": "object",
        "properties": {
            "a": {
                "type": "object",
                "properties": {
                    "b": {
                        "type": "array",
                        "items": {
                            "type": "array",
                            "items": {"type": "integer", "minimum": 0, "maximum": 99},
                            "maxItems": 2,
                        },
                        "maxItems": 2,
                    }
                },
                "required": ["b"],
            },
            "c": {"const": "done"},
        },
        "required": ["a", "c"],
    },
    "text": {"type": "string", "minLength": 2, "maxLength": 6},
}

# Open-ended schemas (unbounded strings, numbers, arrays, any values): for step-by-step checks.
OPEN_SCHEMAS = {
    "any": {},
    "record": {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "score": {"type": "number"},
            "label": {"type": "string"},
            "extra": {"type": "object", "additionalProperties": {"type": "number"}},
            "list": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        },
        "required": ["id", "label"],
    },
    "measures": {"type": "array", "items": {"type": "number", "minimum": -3, "maximum": 12}},
}

GBNF_GRAMMARS = {
    "arith": 'root ::= expr\nexpr ::= term (("+" | "-") term)*\nterm ::= num | "(" expr ")"\nnum ::= [1-9] [0-9]{0,3}\n',
    "csv": 'root ::= row ("\\n" row){0,3}\nrow ::= cell ("," cell)*\ncell ::= [a-z]+ | "\\"" [^"\\n]* "\\""\n',
    "words": 'root ::= ("the" | "a") " " [a-zA-Z\\u00e0-\\u00ff]{1,12} ("." | "!" | "?")?\n',
}


def errors(v, s, at="$"):
    """What in value v breaks schema s (empty: valid). Only the keywords examples/llm/grammar supports."""
    if s is True or s == {}:
        return []
    out = []
    if "const" in s:
        return [] if same(v, s["const"]) else [f"{at}: {v!r} is not the const {s['const']!r}"]
    if "enum" in s:
        return [] if any(same(v, e) for e in s["enum"]) else [f"{at}: {v!r} not in enum"]
    if "anyOf" in s:
        return [] if any(not errors(v, sub, at) for sub in s["anyOf"]) else [f"{at}: {v!r} matches no anyOf branch"]
    types = s.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(is_type(v, t) for t in types):
            return [f"{at}: {v!r} is not of type {types}"]
    if isinstance(v, str):
        if len(v) < s.get("minLength", 0) or len(v) > s.get("maxLength", 1 << 60):
            out.append(f"{at}: length {len(v)} outside minLength/maxLength")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if "minimum" in s and v < s["minimum"] or "maximum" in s and v > s["maximum"]:
            out.append(f"{at}: {v} outside minimum/maximum")
    if isinstance(v, list):
        if len(v) < s.get("minItems", 0) or len(v) > s.get("maxItems", 1 << 60):
            out.append(f"{at}: {len(v)} items outside minItems/maxItems")
        for i, item in enumerate(v):
            out += errors(item, s.get("items", {}), f"{at}[{i}]")
    if isinstance(v, dict):
        props = s.get("properties", {})
        for r in s.get("required", []):
            if r not in v:
                out.append(f"{at}: required {r!r} missing")
        extra = s.get("additionalProperties", False)
        for k, item in v.items():
            if k in props:
                out += errors(item, props[k], f"{at}.{k}")
            elif extra is False:
                out.append(f"{at}: property {k!r} not allowed")
            else:
                out += errors(item, {} if extra is True else extra, f"{at}.{k}")
    return out


def is_type(v, t):
    return {
        "null": v is None,
        "boolean": isinstance(v, bool),
        "integer": isinstance(v, int) and not isinstance(v, bool),
        "number": isinstance(v, (int, float)) and not isinstance(v, bool),
        "string": isinstance(v, str),
        "array": isinstance(v, list),
        "object": isinstance(v, dict),
    }[t]


def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b and type(a) is type(b) if isinstance(a, (list, dict, str)) else a == b


def no_duplicate_keys(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), f"duplicate keys {keys}"
    return dict(pairs)
