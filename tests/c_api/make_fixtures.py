"""Writes NAME.pte and NAME.io for the C API's C test (tests/c_api/c_api_test.c): the zoo model exported
through exir, and the forward method's inputs with the outputs eager PyTorch computes for them (seeded, so the
same on every run). For a model with dynamic shapes the inputs are a set other than the export example, so the
test runs the program at a shape it was not traced at.

NAME.io: b"EMBERIO1", uint32 inputs, uint32 outputs, then per tensor (inputs first): int32 dtype (the .pte's
ScalarType number), int32 rank, int32 sizes[rank], uint64 byte count, the bytes (C-contiguous). Little-endian."""

import argparse
import os
import struct
import sys

import torch

import exir
from zoo import dynamic
from zoo.models import export_methods

_DTYPES = {torch.float32: 6, torch.int64: 4, torch.int32: 3, torch.uint8: 0, torch.bool: 11}


def _tensor_record(t: torch.Tensor) -> bytes:
    t = t.detach().contiguous()
    data = t.numpy().tobytes()
    head = struct.pack("<ii", _DTYPES[t.dtype], t.dim()) + struct.pack(f"<{t.dim()}i", *t.shape)
    return head + struct.pack("<Q", len(data)) + data


def write_fixture(name: str, out: str) -> None:
    if name in dynamic.MODELS:
        programs, _, module = dynamic.export_methods(name)
        inputs = dynamic.MODELS[name].inputs()[2]
    else:
        programs, inputs, module = export_methods(name)
        inputs = inputs["forward"]
    exir.to_edge(programs).to_executorch().save(os.path.join(out, f"{name}.pte"))
    with torch.no_grad():
        outputs = module(*inputs)
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    with open(os.path.join(out, f"{name}.io"), "wb") as f:
        f.write(b"EMBERIO1" + struct.pack("<II", len(inputs), len(outputs)))
        for t in list(inputs) + list(outputs):
            f.write(_tensor_record(t))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("names", nargs="+")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for name in args.names:
        write_fixture(name, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
