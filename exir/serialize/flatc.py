"""Running flatc (Debian's flatbuffers-compiler, installed by ./setup.sh) between JSON and binary.

Each call writes the schema (program.fbs and the scalar_type.fbs generated from the contract) next to its input.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from schema.fbs import write_fbs


class FlatcError(RuntimeError):
    pass


def _flatc() -> str:
    path = shutil.which("flatc") or ("/usr/bin/flatc" if os.path.exists("/usr/bin/flatc") else None)
    if path is None:
        raise FlatcError("flatc not found: install the Debian package flatbuffers-compiler (./setup.sh does)")
    return path


def json_to_binary(text: str) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "program.json")
        with open(src, "w") as f:
            f.write(text)
        r = subprocess.run([_flatc(), "--binary", "-o", d, write_fbs(d), src], capture_output=True, text=True)
        if r.returncode != 0:
            raise FlatcError(f"flatc could not encode the program: {r.stderr.strip() or r.stdout.strip()}")
        # flatc names the output after the schema's file_extension.
        with open(os.path.join(d, "program.pte"), "rb") as f:
            return f.read()


def binary_to_json(data: bytes) -> str:
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "input.pte")
        with open(src, "wb") as f:
            f.write(data)
        r = subprocess.run([_flatc(), "--json", "--raw-binary", "--strict-json", "-o", d, write_fbs(d), "--", src],
                           capture_output=True, text=True)
        out = os.path.join(d, "input.json")
        if r.returncode != 0 or not os.path.exists(out):
            detail = (r.stderr.strip() or r.stdout.strip() or f"exit code {r.returncode}").splitlines()[-1]
            raise FlatcError(f"the flatbuffer does not decode as a Program: {detail}")
        with open(out) as f:
            return f.read()
