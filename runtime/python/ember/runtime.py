"""Run .pte programs on Ember's C++ runtime from Python, with torch tensors in and out.

    from ember import runtime
    program = runtime.load("model.pte")          # a path, or the bytes of a program
    program.methods                               # ["forward", ...]
    outputs = program.run("forward", [x])         # list of torch tensors
    program.method_meta("forward")                # inputs, outputs, planned pools, bookkeeping bytes

The extension is built by Bazel (`bazel build //runtime/python:_ember_runtime.so`); this module builds it on
first use when it is missing. EMBER_RUNTIME_LIB points at another build of it.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
from typing import Dict, List, Sequence, Union

import torch

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_TARGET = "//runtime/python:_ember_runtime.so"
_lib = None

# The .pte ScalarType numbering is PyTorch's.
_DTYPES = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64, 5: torch.float16,
           6: torch.float32, 7: torch.float64, 11: torch.bool, 15: torch.bfloat16, 27: torch.uint16,
           28: torch.uint32, 29: torch.uint64}
_CODES = {v: k for k, v in _DTYPES.items()}


def _extension():
    global _lib
    if _lib is not None:
        return _lib
    path = os.environ.get("EMBER_RUNTIME_LIB") or os.path.join(_ROOT, "bazel-bin", "runtime", "python",
                                                                "_ember_runtime.so")
    if not os.path.exists(path):
        r = subprocess.run(["bazel", "build", _TARGET], cwd=_ROOT, capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(path):
            raise RuntimeError(f"the Ember runtime extension is not built and `bazel build {_TARGET}` failed:\n"
                               f"{r.stderr[-2000:]}")
    spec = importlib.util.spec_from_file_location("_ember_runtime", path)
    _lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(_lib)
    return _lib


class Program:
    def __init__(self, data: bytes):
        self._program = _extension().Program(data)
        self._methods: Dict[str, object] = {}

    @property
    def methods(self) -> List[str]:
        return list(self._program.methods())

    def method_meta(self, method: str = "forward") -> dict:
        return self._program.method_meta(method)

    def run(self, method: str, inputs: Sequence[torch.Tensor]) -> List[torch.Tensor]:
        """Runs `method` on `inputs` (checked against the program's dtypes and shapes); returns new tensors."""
        if method not in self._methods:
            self._methods[method] = self._program.load_method(method)
        packed = []
        for i, x in enumerate(inputs):
            if not isinstance(x, torch.Tensor):
                raise TypeError(f"input {i} of '{method}' is a {type(x).__name__}; pass torch tensors")
            if x.dtype not in _CODES:
                raise TypeError(f"input {i} of '{method}' has dtype {x.dtype}, which .pte programs cannot carry")
            x = x.detach().contiguous().cpu()
            packed.append((x.view(torch.uint8).numpy() if x.numel() else bytes(), _CODES[x.dtype], list(x.shape)))
        outputs = []
        for data, code, shape in self._methods[method].run(packed):
            outputs.append(torch.frombuffer(bytearray(data), dtype=_DTYPES[code]).reshape(shape) if data
                           else torch.empty(shape, dtype=_DTYPES[code]))
        return outputs


def load(source: Union[str, os.PathLike, bytes]) -> Program:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return Program(bytes(source))
    with open(source, "rb") as f:
        return Program(f.read())
