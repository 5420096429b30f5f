"""Writes the seeds of grammar_fuzz and server_request_fuzz (tests/fuzz/corpus/grammar, corpus/server_request):
every grammar and schema the constrained-decoding tests run, the request bodies the server tests send, and hostile
ones. A grammar seed is one byte ('b': GBNF, 's': a JSON Schema) then the text; a request seed one byte ('c': chat,
'p': completions) then the body.

    .venv/bin/python -m tests.fuzz.make_llm_seeds
"""

import argparse
import hashlib
import json
import os

from tests.llm import grammar_support as gs

HERE = os.path.dirname(os.path.abspath(__file__))

# examples/llm/grammar/test/grammar_test.cc's and tests/llm/test_grammar.py's grammars, and hostile ones.
GBNF = [
    'root ::= obj\nobj ::= "{" (pair ("," pair)*)? "}"\npair ::= [a-z]+ ":" (obj | [0-9]{1,3})\n',
    'root ::= ("a" | [^\\x00-\\x7F] | x)* "!"?\nx ::= "(" root ")"\n',
    'root ::= "a" item\nitem ::= [0-9\n',
    'root ::= list\nlist ::= list "," "x" | "x"\n',
    'root ::= "x"{1,99999}',
    "root ::= missing",
    'root ::= ("a"?)*',
    'root ::= a\na ::= b "x"\nb ::= a | ""\n',
    "root ::= " + "(" * 70 + '"a"' + ")" * 70,
    'root ::= ("ab"{0,10000}){0,10000}',
    'root ::= [\\u00e0-\\u00ff\\U0001F600-\\U0001F64F] . [^\\n"]\n',
    'root ::= "\\xff\\u00e9"',
    'root ::= "\xc3"',
    'root ::= [\xe4\xb8-\xad]',
    'root ::= "a" # comment\n  | "b"\n',
    'root ::= ws ( "x" ws ){2,5}\nws ::= [ \\t\\n]*\n',
]

SCHEMAS = [
    {
        "type": "object",
        "properties": {
            "a": {
                "type": "array",
                "items": {
                    "anyOf": [{"type": "integer", "minimum": -3, "maximum": 70}, {"type": "string", "maxLength": 2}]
                },
            }
        },
        "required": ["a"],
    },
    {"type": "object", "properties": {"a": {"type": "string", "format": "email"}}},
    {"type": "array", "items": {"type": "integer", "minimum": 5, "maximum": 1}},
    {"type": "strin"},
    {
        "type": "array",
        "maxItems": 10000,
        "items": {"type": "array", "maxItems": 10000, "items": {"type": "string", "maxLength": 10000}},
    },
    {"type": "number", "minimum": -9e18, "maximum": 9e18},
    {"type": "integer", "minimum": -1234567, "maximum": 98765432101},
    {"type": ["string", "null", "integer"], "minLength": 3},
    {"type": "object", "additionalProperties": {"type": "boolean"}, "required": ["k", "ü"]},
    {"enum": ["a", 1, None, True, {"x": [1.5]}]},
    {"const": "é\n\"\\"},
]


def grammar_seeds():
    seeds = [b"b" + t.encode() for t in list(gs.GBNF_GRAMMARS.values()) + GBNF]
    schemas = list(gs.BOUNDED_SCHEMAS.values()) + list(gs.OPEN_SCHEMAS.values()) + SCHEMAS
    seeds += [b"s" + json.dumps(s, ensure_ascii=False).encode() for s in schemas]
    seeds += [b"s" + b"[" * 300, b's{"type":"string","maxLength":1e400}', b"s" + '{"properties":{"a":{}}'.encode()]
    # Walk choices after a NUL: a rollback (>= 224) between steps.
    seeds += [b"b" + gs.GBNF_GRAMMARS["arith"].encode() + b"\x00\x05\x11\xf0\x07\x03\xe1\x09"]
    seeds += [b"s" + json.dumps(gs.OPEN_SCHEMAS["record"]).encode() + b"\x00\x01\x02\xff\x03\x04\x05"]
    return seeds


PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 5},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 1},
    },
    "required": ["name", "age"],
}

TOOLS = [
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

USER = [{"role": "user", "content": "x"}]

# tests/llm/test_llm_server.py's requests (what the openai client sends for them) and hostile ones.
CHAT = [
    {
        "model": "m",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello model"}],
        "max_tokens": 10,
        "temperature": 0,
    },
    {"model": "m", "messages": USER, "max_tokens": 10, "temperature": 0, "stream": True},
    {"model": "m", "messages": [{"role": "robot", "content": "x"}]},
    {
        "model": "m",
        "messages": [{"role": "user", "content": "a person"}],
        "max_tokens": 40,
        "temperature": 1.0,
        "seed": 3,
        "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}},
    },
    {"model": "m", "messages": USER, "max_tokens": 40, "seed": 1, "response_format": {"type": "json_object"}},
    {
        "model": "m",
        "messages": USER,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "n", "schema": {"type": "string", "pattern": "a+"}},
        },
    },
    {
        "model": "m",
        "messages": [{"role": "user", "content": "add 2 and 3"}],
        "tools": TOOLS,
        "tool_choice": "required",
        "max_tokens": 120,
        "seed": 1,
    },
    {
        "model": "m",
        "messages": [{"role": "user", "content": "add 2 and 3"}],
        "tools": TOOLS,
        "tool_choice": {"type": "function", "function": {"name": "greet"}},
        "max_tokens": 120,
        "seed": 2,
        "stream": True,
    },
    {
        "messages": [
            {"role": "developer", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"x\":1}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "3"},
        ],
        "tools": TOOLS,
    },
    {
        "messages": USER,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "f",
                    "parameters": {"type": "array", "maxItems": 10000, "items": {"type": "string", "maxLength": 10000}},
                },
            }
        ],
        "tool_choice": "required",
    },
    {"messages": USER, "tools": [{"type": "web"}]},
    {"messages": USER, "tool_choice": "required"},
    {"messages": USER, "stop": ["a", 3], "top_p": 0, "n": 2, "logprobs": True},
    {"messages": [{"role": "user", "content": [{"type": "image_url"}]}], "max_completion_tokens": 0},
    {"messages": [], "stream_options": {"include_usage": True}},
]

COMPLETIONS = [
    {"model": "whatever", "prompt": [1, 5, 7, 9, 11], "max_tokens": 12, "temperature": 0},
    {
        "model": "m",
        "prompt": "hello world edge",
        "max_tokens": 20,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    },
    {"model": "m", "prompt": "token", "max_tokens": 16, "temperature": 1.0, "top_p": 0.5, "seed": 5},
    {"model": "m", "prompt": "kernel tensor", "max_tokens": 24, "temperature": 0, "stop": ["abc", "\x00never"]},
    {"model": "m", "prompt": "x", "n": 2},
    {"model": "m", "prompt": "x", "max_tokens": 10000},
    {"prompt": ["one"], "seed": -1, "echo": False, "best_of": 1, "logit_bias": {}, "suffix": ""},
    {"prompt": [-1, 2.5], "temperature": 3},
]


def server_seeds():
    seeds = [b"c" + json.dumps(b).encode() for b in CHAT] + [b"p" + json.dumps(b).encode() for b in COMPLETIONS]
    seeds += [
        b'p{"prompt": "x", "max_tokens": }',
        b"p" + b"\xff\xfe" * 8,
        b"c" + b"[" * 200,
        b"c[1]",
        b'c{"messages":[{"role":"user","content":"\\ud800"}]}',
        b'p{"prompt":"x","seed":1e300}',
    ]
    return seeds


def write(directory, seeds):
    os.makedirs(directory, exist_ok=True)
    for s in seeds:
        with open(os.path.join(directory, hashlib.sha1(s).hexdigest()), "wb") as f:
            f.write(s)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(HERE, "corpus"))
    args = p.parse_args()
    write(os.path.join(args.out, "grammar"), grammar_seeds())
    write(os.path.join(args.out, "server_request"), server_seeds())


if __name__ == "__main__":
    main()
