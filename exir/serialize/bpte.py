"""Bundled programs (.bpte, ExecuTorch's "BP08"): a .pte with test cases, <-> bytes.

The tables are schema/bundled_program.fbs; flatc encodes and decodes them through JSON, as exir/serialize/pte.py
does for programs. A tensor value is stored contiguous, in its dtype's bytes, with its sizes and dim order.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import List, Optional, Union

import torch

from exir.serialize.flatc import FlatcError, decode, encode
from schema import format_versions, scalar_types
from schema._yaml import SCHEMA_DIR

BUNDLED_FBS = os.path.join(SCHEMA_DIR, "bundled_program.fbs")
FILE_IDENTIFIER = format_versions.BPTE.identifier
# What the writer stamps (ExecuTorch 1.5.1's, devtools/bundled_program/version.py); the window read is
# schema/format_versions.yaml.
SCHEMA_VERSION = format_versions.BPTE.writes
# ExecuTorch's verify defaults, and what a file without Ember's tolerance fields means.
DEFAULT_ATOL = 1e-8
DEFAULT_RTOL = 1e-5

Value = Union[torch.Tensor, int, float, bool]


class BpteFormatError(ValueError):
    """The bytes are not a well-formed bundled program; the message says what is wrong."""


@dataclasses.dataclass
class TestCase:
    inputs: List[Value]
    expected_outputs: List[Value]


@dataclasses.dataclass
class MethodTestSuite:
    method_name: str
    test_cases: List[TestCase]
    atol: float = DEFAULT_ATOL
    rtol: float = DEFAULT_RTOL


@dataclasses.dataclass
class BundledProgram:
    program: bytes  # the whole .pte
    suites: List[MethodTestSuite]
    version: int = SCHEMA_VERSION

    def suite(self, method: str) -> MethodTestSuite:
        for s in self.suites:
            if s.method_name == method:
                return s
        raise KeyError(
            f"the bundle has no test suite for method '{method}' (it has {[s.method_name for s in self.suites]})"
        )


def _value_to_obj(v: Value, what: str) -> dict:
    if isinstance(v, torch.Tensor):
        info = scalar_types.by_torch(v.dtype)
        if info is None or info.pte is None:
            raise BpteFormatError(f"{what}: dtype {v.dtype} cannot be stored in a bundled program")
        t = v.detach().cpu().contiguous()
        data = t.reshape(-1).view(torch.uint8).tolist() if t.numel() else []
        return {
            "val_type": "Tensor",
            "val": {"scalar_type": info.pte, "sizes": list(t.shape), "data": data, "dim_order": list(range(t.dim()))},
        }
    # bool before int: a Python bool is an int.
    if isinstance(v, bool):
        return {"val_type": "Bool", "val": {"bool_val": v}}
    if isinstance(v, int):
        return {"val_type": "Int", "val": {"int_val": v}}
    if isinstance(v, float):
        if not math.isfinite(v):
            raise BpteFormatError(f"{what}: the scalar {v} has no JSON spelling for flatc; pass it as a tensor")
        return {"val_type": "Double", "val": {"double_val": v}}
    raise BpteFormatError(f"{what}: a {type(v).__name__}; bundled values are tensors, ints, floats or bools")


def _obj_to_value(o: dict, what: str) -> Value:
    kind, val = o.get("val_type"), o.get("val", {})
    if kind == "Tensor":
        name = val.get("scalar_type", "BYTE")
        info = next((t for t in scalar_types.SCALAR_TYPES if t.pte == name), None)
        dtype = info.torch_dtype() if info else None
        if dtype is None:
            raise BpteFormatError(f"{what}: scalar type {name} has no torch dtype")
        sizes = [int(s) for s in val.get("sizes", [])]
        data = bytes(val.get("data", []))
        numel = math.prod(sizes)
        if len(data) != numel * info.size:
            raise BpteFormatError(f"{what}: {name}{sizes} needs {numel * info.size} bytes of data, has {len(data)}")
        t = torch.frombuffer(bytearray(data), dtype=dtype) if data else torch.empty(0, dtype=dtype)
        t = t.reshape(sizes)
        order = [int(d) for d in val.get("dim_order", [])] or list(range(len(sizes)))
        if order != list(range(len(sizes))):
            # Stored in dim order: lay the elements out physically, then present them logically.
            if sorted(order) != list(range(len(sizes))):
                raise BpteFormatError(f"{what}: dim_order {order} is not a permutation of {len(sizes)} dims")
            physical = torch.frombuffer(bytearray(data), dtype=dtype).reshape([sizes[d] for d in order])
            inverse = [order.index(d) for d in range(len(order))]
            t = physical.permute(inverse).contiguous()
        return t
    if kind == "Int":
        return int(val.get("int_val", 0))
    if kind == "Bool":
        return bool(val.get("bool_val", False))
    if kind == "Double":
        return float(val.get("double_val", 0.0))
    raise BpteFormatError(f"{what}: unknown value kind {kind!r}")


def serialize_bpte(bundle: BundledProgram) -> bytes:
    obj = {
        "version": bundle.version,
        "method_test_suites": [
            {
                "method_name": s.method_name,
                "test_cases": [
                    {
                        "inputs": [
                            _value_to_obj(v, f"{s.method_name} case {c} input {i}") for i, v in enumerate(case.inputs)
                        ],
                        "expected_outputs": [
                            _value_to_obj(v, f"{s.method_name} case {c} expected output {i}")
                            for i, v in enumerate(case.expected_outputs)
                        ],
                    }
                    for c, case in enumerate(s.test_cases)
                ],
                "atol": float(s.atol),
                "rtol": float(s.rtol),
            }
            for s in bundle.suites
        ],
        "program": list(bundle.program),
    }
    data = encode(json.dumps(obj, separators=(",", ":")), BUNDLED_FBS, "the bundle")
    if data[4:8] != FILE_IDENTIFIER:
        raise FlatcError(f"flatc wrote identifier {data[4:8]!r}, expected {FILE_IDENTIFIER!r}")
    return data


def deserialize_bpte(data: bytes) -> BundledProgram:
    """Parses a .bpte (Ember's or ExecuTorch's). Raises BpteFormatError naming the first problem found."""
    data = bytes(data)
    if len(data) < 8:
        raise BpteFormatError(f"not a bundled program: {len(data)} bytes, fewer than a root offset and identifier take")
    problem = format_versions.BPTE.identifier_problem(data[4:8])
    if problem:
        raise BpteFormatError(problem)
    obj = json.loads(decode(data, BUNDLED_FBS, "a BundledProgram", error=BpteFormatError))
    problem = format_versions.BPTE.version_problem(int(obj.get("version", 0)))
    if problem:
        raise BpteFormatError(problem)
    suites = []
    for s in obj.get("method_test_suites", []):
        name = s.get("method_name", "")
        cases = []
        for c, case in enumerate(s.get("test_cases", [])):
            cases.append(
                TestCase(
                    inputs=[
                        _obj_to_value(v, f"{name} case {c} input {i}") for i, v in enumerate(case.get("inputs", []))
                    ],
                    expected_outputs=[
                        _obj_to_value(v, f"{name} case {c} expected output {i}")
                        for i, v in enumerate(case.get("expected_outputs", []))
                    ],
                )
            )
        suites.append(
            MethodTestSuite(name, cases, float(s.get("atol", DEFAULT_ATOL)), float(s.get("rtol", DEFAULT_RTOL)))
        )
    return BundledProgram(program=bytes(obj.get("program", [])), suites=suites, version=int(obj.get("version", 0)))


def program_offset(data: bytes) -> Optional[int]:
    """Where the embedded .pte starts in a .bpte's bytes (for checks of its 32-byte alignment), or None."""
    import struct

    # BundledProgram's root table -> its vtable -> field 2 (program): the vector's length word, then its bytes.
    (root,) = struct.unpack_from("<I", data, 0)
    (vt_rel,) = struct.unpack_from("<i", data, root)
    vtable = root - vt_rel
    (vt_size,) = struct.unpack_from("<H", data, vtable)
    slot = 4 + 2 * 2
    if slot + 2 > vt_size:
        return None
    (field,) = struct.unpack_from("<H", data, vtable + slot)
    if field == 0:
        return None
    (rel,) = struct.unpack_from("<I", data, root + field)
    return root + field + rel + 4


def main(argv=None) -> int:
    """`python -m exir.serialize.bpte extract IN.bpte -o OUT.pte`: the program inside a bundle (for tools that
    read .pte files, such as selective_build.select)."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m exir.serialize.bpte")
    ap.add_argument("command", choices=["extract"])
    ap.add_argument("bpte")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    try:
        with open(args.bpte, "rb") as f:
            program = deserialize_bpte(f.read()).program
    except (OSError, BpteFormatError, FlatcError) as e:
        print(f"bpte: {args.bpte}: {e}", file=sys.stderr)
        return 1
    with open(args.output, "wb") as f:
        f.write(program)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
