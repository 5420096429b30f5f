"""Each format's version window (schema/format_versions.yaml) through the Python API: the runtime (C++) and the
Python readers refuse a file of another ExecuTorch format version by name, or a version field outside the window,
with the same message, and read a file whose tables carry fields a newer schema appended."""

import json
import os
import re

import pytest
import torch

import exir
import exir.serialize.pte as pte_module
from devtools import etdump
from devtools.bundled_program import bundle
from exir.serialize import bpte, ptd
from exir.serialize.flatc import encode
from exir.serialize.pte import PteFormatError, deserialize_pte
from schema import format_versions as fv
from schema._yaml import SCHEMA_DIR


@pytest.fixture(scope="module")
def linear():
    torch.manual_seed(3)
    model = torch.nn.Linear(4, 3).eval()
    x = torch.randn(2, 4)
    return model, x


def _edge(model, x):
    return exir.to_edge(torch.export.export(model, (x,))).to_executorch()


def _with_identifier(data: bytes, identifier: bytes, at: int = 4) -> bytes:
    return data[:at] + identifier + data[at + 4 :]


@pytest.mark.parametrize(
    "identifier, message",
    [
        (
            b"ET13",
            "the .pte was written in a newer ExecuTorch format, 'ET13'; Ember reads ET12 with Program.version 0..0",
        ),
        (b"ET11", "the .pte was written in an older ExecuTorch format, 'ET11'; Ember reads ET12"),
        (b"TFL3", "not a .pte: identifier at byte 4 is 'TFL3' (54464c33), expected 'ET12'"),
    ],
)
def test_pte_identifier_refused_by_name(runtime, linear, identifier, message):
    data = _with_identifier(_edge(*linear).buffer, identifier)
    with pytest.raises(RuntimeError, match=re.escape(message)):
        runtime.load(data)
    with pytest.raises(PteFormatError, match=re.escape(message)):
        deserialize_pte(data)


def test_pte_newer_program_version_refused_by_name(runtime, linear):
    prog = _edge(*linear)
    assert deserialize_pte(prog.buffer).program.version == fv.PTE.writes  # the exporter stamps what it claims
    newer = _edge(*linear)
    newer.program.version = fv.PTE.max_version + 1
    message = "the .pte has Program.version 1, newer than Ember reads: ET12 with Program.version 0..0"
    with pytest.raises(RuntimeError, match=re.escape(message)):
        runtime.load(newer.buffer)
    with pytest.raises(PteFormatError, match=re.escape(message)):
        deserialize_pte(newer.buffer)


def _append_fields(schema_text: str, table: str, fields: str) -> str:
    start = schema_text.index(f"table {table} {{")
    end = schema_text.index("\n}", start)
    return schema_text[:end] + "\n" + fields + schema_text[end:]


def test_pte_with_fields_a_newer_schema_appended_loads(runtime, linear, tmp_path, monkeypatch):
    """A newer exporter may append fields to any table without changing the identifier or version: the runtime's
    verifier and readers skip the vtable slots they do not know, so the file loads and runs the same."""
    with open(os.path.join(SCHEMA_DIR, "program.fbs")) as f:
        text = f.read()
    text = _append_fields(text, "Program", "  future_note: string;\n  future_count: ulong;")
    text = _append_fields(text, "Tensor", "  future_flag: bool;")
    newer_fbs = tmp_path / "program_next.fbs"
    newer_fbs.write_text(text)

    def newer_binary(program_json: str) -> bytes:
        obj = json.loads(program_json)
        obj.update(future_note="appended by a newer exporter", future_count=7)
        for plan in obj["execution_plan"]:
            for v in plan["values"]:
                if v.get("val_type") == "Tensor":
                    v["val"]["future_flag"] = True
        return encode(json.dumps(obj), str(newer_fbs), "the program")

    model, x = linear
    plain = _edge(model, x).buffer
    monkeypatch.setattr(pte_module, "json_to_binary", newer_binary)
    extended = _edge(model, x).buffer
    monkeypatch.undo()
    assert deserialize_pte(extended).program_bytes > deserialize_pte(plain).program_bytes  # the fields are there
    got = runtime.load(extended).run("forward", [x])[0]
    torch.testing.assert_close(got, runtime.load(plain).run("forward", [x])[0])
    assert deserialize_pte(extended).program.version == 0


def _tiny_ptd(tmp_path):
    path = tmp_path / "w.ptd"
    path.write_bytes(ptd.serialize_ptd([ptd.PtdEntry("w", bytes(16), ptd.TensorLayout(6, [4], [0]))]))
    return path


@pytest.mark.parametrize(
    "identifier, message",
    [
        (
            b"FT02",
            "the .ptd was written in a newer ExecuTorch format, 'FT02'; Ember reads FT01 with FlatTensor.version 0..0",
        ),
        (b"FT00", "the .ptd was written in an older ExecuTorch format, 'FT00'"),
        (b"ET12", "not a .ptd: identifier at byte 4 is 'ET12' (45543132), expected 'FT01'"),
    ],
)
def test_ptd_identifier_refused_by_name(runtime, tmp_path, identifier, message):
    path = _tiny_ptd(tmp_path)
    path.write_bytes(_with_identifier(path.read_bytes(), identifier))
    with pytest.raises(RuntimeError, match=re.escape(message)):
        runtime.DataFile(str(path))
    with pytest.raises(ptd.PtdFormatError, match=re.escape(message)):
        ptd.deserialize_ptd(path.read_bytes())


def test_ptd_newer_version_refused_by_name(runtime, tmp_path, monkeypatch):
    monkeypatch.setattr(ptd, "VERSION", fv.PTD.max_version + 1)
    path = _tiny_ptd(tmp_path)
    monkeypatch.undo()
    message = "the .ptd has FlatTensor.version 1, newer than Ember reads: FT01 with FlatTensor.version 0..0"
    with pytest.raises(RuntimeError, match=re.escape(message)):
        runtime.DataFile(str(path))
    with pytest.raises(ptd.PtdFormatError, match=re.escape(message)):
        ptd.deserialize_ptd(path.read_bytes())
    assert ptd.deserialize_ptd(_tiny_ptd(tmp_path).read_bytes()).version == fv.PTD.writes


def test_bundled_program_window(runtime, linear):
    """runtime.load_bundled (runtime/bundled) and exir's reader: BP08 at the version the writer stamps verifies;
    BP09 and a newer BundledProgram.version are refused by name."""
    model, x = linear
    bundled = bundle(_edge(model, x), [(x,)], expected=model, atol=1e-5, rtol=1e-4).bundle
    data = bpte.serialize_bpte(bundled)
    assert bpte.deserialize_bpte(data).version == fv.BPTE.writes
    assert all(r["passed"] for r in runtime.load_bundled(data).verify())
    message = "the bundled program was written in a newer ExecuTorch format, 'BP09'; Ember reads BP08"
    with pytest.raises(RuntimeError, match=re.escape(message)):
        runtime.load_bundled(_with_identifier(data, b"BP09"))
    with pytest.raises(bpte.BpteFormatError, match=re.escape(message)):
        bpte.deserialize_bpte(_with_identifier(data, b"BP09"))
    bundled.version = fv.BPTE.max_version + 1
    newer = bpte.serialize_bpte(bundled)
    message = "the bundled program has BundledProgram.version 3, newer than Ember reads: BP08 with BundledProgram.version 0..2"
    with pytest.raises(RuntimeError, match=re.escape(message)):
        runtime.load_bundled(newer)
    with pytest.raises(bpte.BpteFormatError, match=re.escape(message)):
        bpte.deserialize_bpte(newer)


def test_etdump_window():
    """devtools.etdump reads ED00 at version 0 (what Ember's writer and ExecuTorch's ETDumpGen stamp) and refuses
    another ED digit pair or a newer ETDump.version by name."""
    fbs = os.path.join(SCHEMA_DIR, "etdump.fbs")

    def trace(version: int) -> bytes:
        obj = {"version": version, "run_data": [{"name": "forward", "events": []}]}
        return encode(json.dumps(obj), fbs, "an ETDump", size_prefixed=True)

    assert len(etdump.parse(trace(fv.ETDUMP.writes))) == 1
    with pytest.raises(
        etdump.EtdumpError, match=re.escape("the ETDump was written in a newer ExecuTorch format, 'ED01'")
    ):
        etdump.parse(_with_identifier(trace(0), b"ED01", at=8))
    message = "the ETDump has ETDump.version 1, newer than Ember reads: ED00 with ETDump.version 0..0"
    with pytest.raises(etdump.EtdumpError, match=re.escape(message)):
        etdump.parse(trace(fv.ETDUMP.max_version + 1))
