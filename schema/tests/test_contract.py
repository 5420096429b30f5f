"""The format contract against the outside facts it encodes (PyTorch's numbering, flatc, the registered torch ops)
and against every user that reads it (manifests, codegen, exir's serializer)."""

import os
import re
import struct
import subprocess

import pytest
import torch

from schema import argument_codes, extended_header, fbs, format_versions, operators, scalar_types
from schema._yaml import ContractError


def _c10_number(dtype: torch.dtype) -> int:
    # TorchScript stores a dtype constant as its c10::ScalarType number.
    graph = torch._C.Graph()
    return graph.insertConstant(dtype).node().i("value")


@pytest.mark.parametrize("info", scalar_types.SCALAR_TYPES, ids=lambda t: t.name)
def test_scalar_types_are_pytorchs(info):
    dtype = info.torch_dtype()
    assert dtype is not None, f"torch has no dtype torch.{info.torch}"
    assert _c10_number(dtype) == info.number
    assert dtype.itemsize == info.size
    assert scalar_types.by_torch(dtype) is info


def test_pte_enum_is_the_contracts():
    assert scalar_types.ScalarType.FLOAT == 6 and scalar_types.ScalarType.UINT64 == 29
    assert scalar_types.pte_scalar_type(torch.bfloat16) == scalar_types.ScalarType.BFLOAT16
    assert "COMPLEXFLOAT" not in scalar_types.ScalarType.__members__
    text = fbs.scalar_type_fbs()
    assert "  FLOAT = 6,\n" in text and "Complex" not in text.split("enum")[1]


@pytest.mark.parametrize(
    "dtype, message",
    [
        (torch.complex64, r"torch.complex64 \(ScalarType ComplexFloat\) cannot be exported: .* no complex types"),
        (torch.bits8, r"torch.bits8 \(ScalarType Bits8\) has no .pte scalar type"),
    ],
)
def test_dtypes_a_pte_cannot_hold_are_named(dtype, message):
    with pytest.raises(scalar_types.NotInFormat, match=message):
        scalar_types.pte_scalar_type(dtype)


def test_unknown_names_say_which_exist():
    with pytest.raises(ContractError, match="unknown ScalarType 'Float32'; the names are Byte, Char"):
        scalar_types.by_name("Float32")
    assert scalar_types.mask(["Float", "Long"]) == 1 << 6 | 1 << 4


def _flatc_vtable_slots(header: str) -> dict:
    """{table: [field names by vtable slot]} from flatc's generated C++ (its VT_ enums)."""
    import re

    tables = {}
    for name, body in re.findall(
        r"struct (\w+) FLATBUFFERS_FINAL_CLASS : private flatbuffers::Table \{(.*?)\n\};", header, re.S
    ):
        offsets = {int(v): f.lower() for f, v in re.findall(r"VT_(\w+) = (\d+)", body)}
        tables[name] = [offsets.get(o, "?") for o in range(4, max(offsets, default=2) + 2, 2)]
    return tables


def test_verifier_table_has_flatcs_slots(tmp_path):
    """The runtime's flatbuffer verifier walks program.fbs as generate.py reads it (program_schema.h): the same
    tables, with every field in the vtable slot flatc gives it (a union's type byte in the slot before it)."""
    path = fbs.write_fbs(str(tmp_path))
    subprocess.run(
        ["flatc", "--cpp", "--scoped-enums", "-o", str(tmp_path), path, os.path.join(str(tmp_path), "scalar_type.fbs")],
        check=True,
        capture_output=True,
    )
    flatc = _flatc_vtable_slots((tmp_path / "program_generated.h").read_text())
    schema = fbs.program_schema()
    assert {t: [s.field for s in slots] for t, slots in schema.tables.items()} == flatc
    assert schema.root == "Program" and schema.unions["InstructionArguments"][0] == "KernelCall"
    from schema import generate

    header = generate.program_schema_h()
    assert "kUnion | 0,  // val: KernelTypes" in header and "kNesting = 5;" in header


def test_verifier_table_refuses_what_it_cannot_describe():
    base = "table T { a: int; }\nroot_type T;\n"
    with pytest.raises(ContractError, match=r"T.b has type \[string\], which the runtime's verifier table"):
        fbs.parse_schema(base.replace("a: int;", "a: int; b: [string];"))
    with pytest.raises(ContractError, match="T.a has attribute required"):
        fbs.parse_schema(base.replace("a: int;", "a: int (required);"))
    with pytest.raises(ContractError, match="struct S"):
        fbs.parse_schema("struct S { x: int; }\n" + base)
    from schema import generate

    loop = fbs.parse_schema("table T { a: U; }\ntable U { t: T; }\nroot_type T;\n")
    with pytest.raises(ContractError, match="table T contains itself"):
        generate._nesting(loop, "T")


def test_flatc_compiles_the_schema(tmp_path):
    path = fbs.write_fbs(str(tmp_path))
    r = subprocess.run(
        ["flatc", "--cpp", "--scoped-enums", "-o", str(tmp_path), path, os.path.join(str(tmp_path), "scalar_type.fbs")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    header = (tmp_path / "scalar_type_generated.h").read_text()
    assert "FLOAT8E4M3FNUZ = 26" in header
    assert fbs.FILE_IDENTIFIER == b"ET12"


def test_serialized_header_is_at_the_contracts_offsets():
    from exir.serialize import serialize_pte
    from schema import program as S

    data = serialize_pte(S.Program(version=0), [b"\1" * 5])
    o = extended_header.FIELD_OFFSETS
    assert data[4:8] == fbs.FILE_IDENTIFIER
    assert data[o["magic"] : o["magic"] + 4] == extended_header.MAGIC
    (length,) = struct.unpack_from("<I", data, o["length"])
    (program_size, base, size) = struct.unpack_from("<QQQ", data, o["program_size"])
    assert length == extended_header.LENGTH == 32
    assert program_size < base == 4096 and size == 5 and data[base : base + size] == b"\1" * 5


def test_registered_ops_have_the_contracts_schemas():
    import exir.lowering.convolution_clamp  # noqa: F401  (registers ember::convolution_clamp)
    import exir.lowering.convolution_general  # noqa: F401  (registers ember::convolution_general)
    import exir.lowering.convolution_silu  # noqa: F401  (registers ember::convolution_silu)
    import exir.lowering.safe_softmax  # noqa: F401  (registers ember::safe_softmax)
    import kernels.quantized.ops  # noqa: F401  (registers ember_quantized::*, quantized_decomposed::*.out)
    import kernels.portable.llm_ops  # noqa: F401  (registers ember_llm::*)

    for op in operators.OPERATORS:
        packet = getattr(getattr(torch.ops, op.namespace), op.name)
        assert str(packet.out._schema) == f"{op.namespace}::{op.out}"
        # For PyTorch's own functional ops this checks the contract's copy of PyTorch's schema.
        assert str(packet.default._schema) == f"{op.namespace}::{op.functional}"


def test_out_schema_keeps_keyword_arguments_first():
    op = operators.find("quantized_decomposed::dequantize_per_tensor.out")
    assert op.out.endswith("ScalarType dtype, *, ScalarType? out_dtype=None, Tensor(a!) out) -> Tensor(a!)")
    assert operators.find("ember::nothing") is None


def test_every_manifest_argument_has_a_code():
    from codegen.gen_registration import arg_signature
    from codegen.manifest import load_manifest

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    seen = set()
    for lib in ("portable", "optimized", "quantized", "prim_ops"):
        for d in load_manifest(os.path.join(root, "kernels", lib, "kernels.yaml"), namespace="x", library=lib):
            sig, _ = arg_signature(d)
            seen |= set(sig)
    assert seen <= set(argument_codes.BY_CODE)
    assert {"T", "t", "s", "i", "I", "L"} <= seen


@pytest.mark.parametrize("window", format_versions.FORMATS.values(), ids=lambda w: w.key)
def test_format_windows_name_their_schemas_identifiers(window):
    fbs_file = {"pte": "program.fbs", "ptd": "flat_tensor.fbs", "bpte": "bundled_program.fbs", "etdump": "etdump.fbs"}
    with open(os.path.join(os.path.dirname(fbs.PROGRAM_FBS), fbs_file[window.key])) as f:
        declared = re.search(r'^file_identifier\s+"(\w{4})"\s*;', f.read(), re.M).group(1)
    assert window.identifier == declared.encode()
    assert window.min_version <= window.writes <= window.max_version
    assert window.identifier_problem(window.identifier) is None
    assert window.version_problem(window.writes) is None


def test_format_window_messages_name_the_file_and_window():
    pte = format_versions.PTE
    assert pte.identifier_problem(b"ET13") == (
        "the .pte was written in a newer ExecuTorch format, 'ET13'; Ember reads ET12 with Program.version 0..0"
    )
    assert "an older ExecuTorch format, 'ET11'" in pte.identifier_problem(b"ET11")
    assert pte.identifier_problem(b"ETab") == "not a .pte: identifier at byte 4 is 'ETab' (45546162), expected 'ET12'"
    assert (
        pte.version_problem(4)
        == "the .pte has Program.version 4, newer than Ember reads: ET12 with Program.version 0..0"
    )


def test_generated_header_holds_each_window():
    from schema.generate import format_versions_h

    text = format_versions_h()
    assert 'kPte = {".pte", {\'E\', \'T\', \'1\', \'2\'}, "Program.version", 0, 0, 0};' in text
    assert 'kBpte = {"bundled program", {\'B\', \'P\', \'0\', \'8\'}, "BundledProgram.version", 0, 2, 2};' in text
