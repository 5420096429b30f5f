"""Running flatc (Debian's flatbuffers-compiler, installed by ./setup.sh) between JSON and binary.

Each call writes the schemas (program.fbs, the scalar_type.fbs generated from the contract, and the one asked for)
next to its input.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from schema.fbs import PROGRAM_FBS, write_fbs
from schema.resources import packaged_binary


class FlatcError(RuntimeError):
    pass


def _flatc() -> str:
    # The wheel carries the flatc its programs were checked with; a checkout uses the machine's.
    path = packaged_binary("flatc") or shutil.which("flatc")
    path = path or ("/usr/bin/flatc" if os.path.exists("/usr/bin/flatc") else None)
    if path is None:
        raise FlatcError("flatc not found: install the Debian package flatbuffers-compiler (./setup.sh does)")
    return path


def encode(text: str, schema: str, what: str, size_prefixed: bool = False) -> bytes:
    """JSON `text` as a binary flatbuffer of `schema` (a .fbs path, which may include scalar_type.fbs); `what`
    names the thing in errors ("the program", "the bundle")."""
    with tempfile.TemporaryDirectory() as d:
        write_fbs(d)  # program.fbs and scalar_type.fbs, which the other schemas include
        fbs = os.path.join(d, os.path.basename(schema))
        if not os.path.exists(fbs):
            shutil.copyfile(schema, fbs)
        src = os.path.join(d, "data.json")
        with open(src, "w") as f:
            f.write(text)
        flags = ["--size-prefixed"] if size_prefixed else []
        r = subprocess.run([_flatc(), "--binary", *flags, "-o", d, fbs, src], capture_output=True, text=True)
        if r.returncode != 0:
            raise FlatcError(f"flatc could not encode {what}: {r.stderr.strip() or r.stdout.strip()}")
        # flatc names the output after the input, with the schema's file_extension.
        out = [n for n in os.listdir(d) if n.startswith("data.") and n != "data.json"]
        with open(os.path.join(d, out[0]), "rb") as f:
            return f.read()


def json_to_binary(text: str) -> bytes:
    return encode(text, PROGRAM_FBS, "the program")


def decode(data: bytes, schema: str, what: str, error: type = FlatcError) -> str:
    """A binary flatbuffer of `schema` as strict JSON; bytes that do not decode raise `error`, naming `what`, the
    root table ("a Program")."""
    with tempfile.TemporaryDirectory() as d:
        write_fbs(d)
        fbs = os.path.join(d, os.path.basename(schema))
        if not os.path.exists(fbs):
            shutil.copyfile(schema, fbs)
        src = os.path.join(d, "input.bin")
        with open(src, "wb") as f:
            f.write(data)
        r = subprocess.run(
            [_flatc(), "--json", "--raw-binary", "--strict-json", "-o", d, fbs, "--", src],
            capture_output=True,
            text=True,
        )
        out = os.path.join(d, "input.json")
        if r.returncode != 0 or not os.path.exists(out):
            detail = (r.stderr.strip() or r.stdout.strip() or f"exit code {r.returncode}").splitlines()[-1]
            raise error(f"the flatbuffer does not decode as {what}: {detail}")
        with open(out) as f:
            return f.read()


def binary_to_json(data: bytes) -> str:
    return decode(data, PROGRAM_FBS, "a Program")
