"""Run .pte programs on Ember's C++ runtime from Python, with torch tensors in and out.

    from ember import runtime
    program = runtime.load("model.pte")          # a path, or the bytes of a program
    program.methods                               # ["forward", ...]
    outputs = program.run("forward", [x])         # list of torch tensors
    runtime.load("model.pte", kernels="portable") # the same on portable kernels only
    program.method_meta("forward")                # inputs, outputs, planned pools, bookkeeping bytes
    runtime.load_bundled("model.bpte").verify()   # a bundled program's test cases, run and compared

The extension is built by Bazel (`bazel build //runtime/python:_ember_runtime.so`, or `_ember_runtime_portable.so`
for kernels="portable"); this module builds it on first use when it is missing. EMBER_RUNTIME_LIB points at
another build of the default one; EMBER_RUNTIME_LIB_DIR at a folder holding another build of both (for example
the AddressSanitizer one, tools/sanitize.sh).
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
from typing import Dict, List, Sequence, Union

import torch

from schema import scalar_types

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# kernels= -> the extension holding them: "default" is what --//kernels:optimized picked (optimized, unless off).
_EXTENSIONS = {"default": "_ember_runtime.so", "portable": "_ember_runtime_portable.so"}
_libs: Dict[str, object] = {}

# ScalarType number <-> torch dtype for the types the runtime computes on (schema/scalar_types.yaml).
_DTYPES = {t.number: t.torch_dtype() for t in scalar_types.SCALAR_TYPES if t.cpp and t.torch_dtype() is not None}
_CODES = {v: k for k, v in _DTYPES.items()}


def _extension(kernels: str = "default"):
    if kernels not in _EXTENSIONS:
        raise ValueError(f"kernels={kernels!r}: choose one of {sorted(_EXTENSIONS)}")
    if kernels in _libs:
        return _libs[kernels]
    name = _EXTENSIONS[kernels]
    path = (kernels == "default" and os.environ.get("EMBER_RUNTIME_LIB")) or os.path.join(
        os.environ.get("EMBER_RUNTIME_LIB_DIR") or os.path.join(_ROOT, "bazel-bin", "runtime", "python"), name)
    target = f"//runtime/python:{name}"
    if not os.path.exists(path):
        r = subprocess.run(["bazel", "build", target], cwd=_ROOT, capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(path):
            raise RuntimeError(f"the Ember runtime extension is not built and `bazel build {target}` failed:\n"
                               f"{r.stderr[-2000:]}")
    # Both extensions define the module _ember_runtime; each is loaded from its own file, outside sys.modules.
    spec = importlib.util.spec_from_file_location("_ember_runtime", path)
    lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lib)
    _libs[kernels] = lib
    return lib


class Program:
    def __init__(self, data: bytes, kernels: str = "default"):
        self._program = _extension(kernels).Program(data)
        self._methods: Dict[str, object] = {}

    @property
    def methods(self) -> List[str]:
        return list(self._program.methods())

    def method_meta(self, method: str = "forward") -> dict:
        return self._program.method_meta(method)

    def run(self, method: str, inputs: Sequence[torch.Tensor],
            instruction_limit: int = 0) -> List[Union[torch.Tensor, int, float, bool]]:
        """Runs `method` on `inputs` (checked against the program's dtypes and shapes); returns new tensors, and
        Python numbers for scalar outputs (a constant method's value).

        `instruction_limit`: in a method with loops (map, scan, while_loop), at most this many instructions per
        run, after which the run fails (OutOfResources) instead of looping for ever; 0 means no limit."""
        if method not in self._methods:
            self._methods[method] = self._program.load_method(method)
        self._methods[method].set_instruction_limit(int(instruction_limit))
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"inputs of '{method}' must be a list or tuple of tensors, got a {type(inputs).__name__}")
        packed = []
        for i, x in enumerate(inputs):
            if not isinstance(x, torch.Tensor):
                raise TypeError(f"input {i} of '{method}' is a {type(x).__name__}; pass torch tensors")
            if x.dtype not in _CODES:
                raise TypeError(f"input {i} of '{method}' has dtype {x.dtype}, which .pte programs cannot carry")
            if x.layout != torch.strided or x.device.type == "meta":
                raise TypeError(f"input {i} of '{method}' is a {x.layout} tensor on {x.device}; pass a dense tensor "
                                f"with data (x.to_dense(), or materialize it)")
            x = x.detach().contiguous().cpu()
            data = x.reshape(-1).view(torch.uint8).numpy() if x.numel() else bytes()  # reshape: 0-d cannot view
            packed.append((data, _CODES[x.dtype], list(x.shape)))
        outputs = []
        for i, result in enumerate(self._methods[method].run(packed)):
            if isinstance(result, (bool, int, float)):  # a scalar output: a constant method's value, a size
                outputs.append(result)
                continue
            data, code, shape = result
            if code not in _DTYPES:
                raise RuntimeError(f"output {i} of '{method}' has ScalarType code {code}, which has no torch dtype here")
            outputs.append(torch.frombuffer(bytearray(data), dtype=_DTYPES[code]).reshape(shape) if data
                           else torch.empty(shape, dtype=_DTYPES[code]))
        return outputs


def load(source: Union[str, os.PathLike, bytes], kernels: str = "default") -> Program:
    """A program from a path or bytes, on the default kernels or (kernels="portable") portable ones only."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return Program(bytes(source), kernels)
    with open(source, "rb") as f:
        return Program(f.read(), kernels)


class BundledProgram:
    """A .bpte (a program with test cases, ExecuTorch's "BP08"), checked whole on load by the C++ runtime.

        bundle = runtime.load_bundled("model.bpte")
        for case in bundle.verify():          # every case run on this runtime, outputs compared in C++
            print(case["method"], case["case"], case["passed"], case["worst_error"], case["worst_index"])
        bundle.program.run("forward", [x])    # the embedded program, as runtime.load would give it
    """

    def __init__(self, data: bytes, kernels: str = "default"):
        self._data = bytes(data)
        self._kernels = kernels
        self._lib = _extension(kernels)
        self.program_bytes = self._lib.bundled_program_bytes(self._data)
        self._program = None

    @property
    def program(self) -> Program:
        if self._program is None:
            self._program = Program(self.program_bytes, self._kernels)
        return self._program

    def verify(self, atol: float = None, rtol: float = None, method: str = None) -> List[dict]:
        """Runs every test case (or `method`'s) and compares its outputs with the bundled ones: an element
        passes when |actual - expected| <= atol + rtol * |expected| (the bundle's own tolerances unless given).
        Returns one dict per case: method, case, passed, worst_error with worst_output/worst_index and the
        actual/expected values there, failed_elements of elements, mismatch (another dtype or shape), atol, rtol."""
        for name, v in (("atol", atol), ("rtol", rtol)):
            if v is not None and not (isinstance(v, (int, float)) and 0 <= v <= 1e300):
                raise ValueError(f"{name} must be a number in [0, 1e300], got {v!r}")
        return list(self._lib.verify_bundled(self._data, None if atol is None else float(atol),
                                             None if rtol is None else float(rtol), method))


def load_bundled(source: Union[str, os.PathLike, bytes], kernels: str = "default") -> BundledProgram:
    """A bundled program (.bpte) from a path or bytes; see BundledProgram."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return BundledProgram(bytes(source), kernels)
    with open(source, "rb") as f:
        return BundledProgram(f.read(), kernels)
