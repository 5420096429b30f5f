"""A tokenizer file the C++ loaders (examples/llm/tokenizer) refuse raises RuntimeError in Python with the loader's
own message: what is wrong and where (a JSON byte offset and line:column, a JSON path with the field and the limit,
a protobuf field's number, wire type and byte offset). The C++ tests (tokenizer_errors_test, json_test) check every
message; these check that the messages reach Python whole."""

import os

import pytest

from tests.llm.test_tokenizer_parity import ember_tokenizer  # noqa: F401 (the fixture)

GOOD = {
    "pre_tokenizer": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
}


def _refusal(tok, data):
    with pytest.raises(RuntimeError) as e:
        tok.load_bytes(data)
    return str(e.value)


def _json(**model):
    import json

    doc = json.loads(json.dumps(GOOD))
    doc["model"].update(model)
    return json.dumps(doc).encode()


def test_json_syntax_errors_name_the_byte_line_and_column(ember_tokenizer):  # noqa: F811
    assert _refusal(ember_tokenizer, b'{"model":\n  {"vocab": [1 2]}}') == (
        "InvalidArgument: tokenizer.json: JSON: expected ',' or ']' at byte 25 (line 2, column 16)"
    )
    deep = b'{"model": ' + b"[" * 200000 + b"]" * 200000 + b"}"
    assert "more than 128 nested arrays and objects" in _refusal(ember_tokenizer, deep)


def test_semantic_errors_name_the_json_path_and_limit(ember_tokenizer):  # noqa: F811
    assert _refusal(ember_tokenizer, _json(merges=["a b", "a c"])) == (
        'InvalidArgument: tokenizer.json: model.merges[1]: "c" missing from model.vocab (merging "a" and "c")'
    )
    assert "model.vocab[\"b\"]: id 4000000000 is outside [0, 65539)" in _refusal(
        ember_tokenizer, _json(vocab={"a": 0, "b": 4000000000, "ab": 2})
    )


def test_protobuf_errors_name_the_field_wire_type_and_offset(ember_tokenizer, tmp_path):  # noqa: F811
    # One piece whose text field is cut short; then a key of an invalid wire type.
    assert _refusal(ember_tokenizer, b"\x0a\x04\x0a\x05ab") == (
        "InvalidArgument: protobuf ModelProto.pieces[0]: field 1 (wire type 2, length-delimited) at byte 2: "
        "length 5 runs past the end (2 bytes left)"
    )
    path = os.path.join(tmp_path, "tokenizer.model")
    with open(path, "wb") as f:
        f.write(b"\x0a\x03\x0a\x01a\x4f")
    with pytest.raises(RuntimeError, match=r"field 9 at byte 5 has wire type 7, which is not supported"):
        ember_tokenizer.load(path)
