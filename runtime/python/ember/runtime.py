"""Run .pte programs on Ember's C++ runtime from Python, with torch tensors in and out.

    from ember import runtime
    program = runtime.load("model.pte")          # a path, or the bytes of a program
    program.methods                               # ["forward", ...]
    outputs = program.run("forward", [x])         # list of torch tensors
    runtime.load("model.pte", kernels="portable") # the same on portable kernels only
    program.method_meta("forward")                # inputs, outputs, planned pools, bookkeeping bytes
    outputs, trace = program.run("forward", [x], profile=True)   # per-instruction times, as ETDump
    trace.save("model.etdp")                      # python -m devtools.profile model.pte model.etdp
    runtime.load_bundled("model.bpte").verify()   # a bundled program's test cases, run and compared
    runtime.load("model.pte", data_files=["weights.ptd"])   # constants kept in .ptd files (docs/external_data.md)
    # program.run from several threads at once: each call on a copy of the method (docs/threads.md)

Installed from the wheel, the extensions are the package's own (ember/_lib, docs/wheel.md) and nothing is built.
In a checkout the extension is built by Bazel (`bazel build //runtime/python:_ember_runtime.so`, or
`_ember_runtime_portable.so` for kernels="portable"); this module builds it on first use when it is missing.
EMBER_RUNTIME_LIB points at another build of the default one; EMBER_RUNTIME_LIB_DIR at a folder holding another
build of both (for example the AddressSanitizer one, tools/sanitize.sh).

profile=True runs on a third build of the default extension, with the runtime's event tracer compiled in
(`bazel build --config=profiling //runtime/python:_ember_runtime_profiling.so`, built on first use; EMBER_RUNTIME_PROFILING_LIB
points at another); the other two have no tracing code at all.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import weakref
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch

from ember import _tools
from schema import scalar_types

_ROOT = _tools.REPO_ROOT
# kernels= -> the extension holding them: "default" is what --//kernels:optimized picked (optimized, unless off).
_EXTENSIONS = {"default": "_ember_runtime.so", "portable": "_ember_runtime_portable.so"}
_libs: Dict[str, object] = {}
_PROFILING = "profiling"  # the key of the traced build in _libs

# ScalarType number <-> torch dtype for the types the runtime computes on (schema/scalar_types.yaml).
_DTYPES = {t.number: t.torch_dtype() for t in scalar_types.SCALAR_TYPES if t.cpp and t.torch_dtype() is not None}
_CODES = {v: k for k, v in _DTYPES.items()}


def _load_module(path: str):
    # Each extension's module is named after its file (runtime/python/BUILD.bazel): Python keeps one extension module
    # per name in a process, so under one shared name the second extension loaded would be the first one again.
    spec = importlib.util.spec_from_file_location(os.path.basename(path).split(".")[0], path)
    lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lib)
    return lib


def _profiling_extension():
    """The default extension built with --config=profiling (its own output directory, so both stay cached)."""
    if _PROFILING in _libs:
        return _libs[_PROFILING]
    path = os.environ.get("EMBER_RUNTIME_PROFILING_LIB")
    if not path:
        path = _tools.find_extension("//runtime/python:_ember_runtime_profiling.so", ["--config=profiling"])
    lib = _load_module(path)
    if not hasattr(lib.Method, "profile_start"):
        raise RuntimeError(f"{path} was built without the event tracer; build it with --config=profiling")
    _libs[_PROFILING] = lib
    return lib


class Trace:
    """One profiled call of run(): `etdump` is the ETDump file's bytes (ExecuTorch's ED00 format: ExecuTorch's
    Inspector reads it, and so does `python -m devtools.profile`); `events` how many were recorded and `dropped` how many
    did not fit in the trace buffer (raise run()'s profile_events when it is not 0). With run(profile_outputs=...),
    `debug_buffer` holds each kernel's output tensors, which the ETDump's debug events point into
    (devtools.etdump.outputs(trace.etdump, trace.debug_buffer) reads them back), and `dropped_outputs` counts the
    tensors that did not fit."""

    def __init__(self, etdump: bytes, events: int, dropped: int, debug_buffer: bytes = b"", dropped_outputs: int = 0):
        self.etdump, self.events, self.dropped = etdump, events, dropped
        self.debug_buffer, self.dropped_outputs = debug_buffer, dropped_outputs

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes the ETDump, and the debug buffer (if any) beside it as PATH + ".debug" (what ExecuTorch's
        Inspector takes as debug_buffer_path)."""
        with open(path, "wb") as f:
            f.write(self.etdump)
        if self.debug_buffer:
            with open(os.fspath(path) + ".debug", "wb") as f:
                f.write(self.debug_buffer)

    def __repr__(self) -> str:
        extra = f", {len(self.debug_buffer)} bytes of outputs" if self.debug_buffer else ""
        return f"Trace({self.events} events, {self.dropped} dropped, {len(self.etdump)} bytes of ETDump{extra})"


def _extension(kernels: str = "default"):
    if kernels not in _EXTENSIONS:
        raise ValueError(f"kernels={kernels!r}: choose one of {sorted(_EXTENSIONS)}")
    if kernels in _libs:
        return _libs[kernels]
    name = _EXTENSIONS[kernels]
    path = (kernels == "default" and os.environ.get("EMBER_RUNTIME_LIB")) or (
        os.environ.get("EMBER_RUNTIME_LIB_DIR") and os.path.join(os.environ["EMBER_RUNTIME_LIB_DIR"], name)
    )
    if not path:
        path = _tools.find_extension(f"//runtime/python:{name}")
    lib = _load_module(path)
    _libs[kernels] = lib
    return lib


class Program:
    """A loaded program: from `data` (bytes, copied into the runtime), or from the file at `path` (mapped, as the
    runner loads it: weights are file-backed pages, never copied)."""

    def __init__(
        self,
        data: Optional[bytes],
        kernels: str = "default",
        threads: int = 1,
        path: Optional[str] = None,
        copies: Optional[int] = None,
        data_files: Sequence[Union[str, os.PathLike, "DataFile"]] = (),
    ):
        if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= 64:
            raise ValueError(
                f"threads={threads!r}: give a whole number of threads from 1 to 64 (the calling thread "
                f"included; 1 runs every kernel on it)"
            )
        if copies is None:
            copies = os.cpu_count() or 1
        if not isinstance(copies, int) or isinstance(copies, bool) or not 1 <= copies <= 1024:
            raise ValueError(
                f"copies={copies!r}: give a whole number from 1 to 1024 (the most calls of one method "
                f"that run at once, each on a loaded copy of its own)"
            )
        ext = _extension(kernels)
        self._program = (
            ext.Program.from_file(path, threads, copies) if path is not None else ext.Program(data, threads, copies)
        )
        if isinstance(data_files, (str, os.PathLike, DataFile)):
            data_files = [data_files]  # one file given bare
        self.data_files = [f if isinstance(f, DataFile) else data_file(f, kernels) for f in data_files]
        for f in self.data_files:
            if f.kernels != kernels:
                raise ValueError(f"{f.path} was opened for kernels={f.kernels!r}; this program runs on {kernels!r}")
        if self.data_files:
            self._program.set_data_files([f._file for f in self.data_files])
        self._input_orders: Dict[str, list] = {}
        self._data, self._path, self._kernels = data, path, kernels
        self._traced = None  # the same program in the profiling extension, made on the first run(profile=True)
        self._traced_methods: Dict[str, object] = {}
        # Profiled runs share one traced copy per method, and a trace spans start, run and stop: one at a time.
        self._profile_lock = threading.Lock()

    @property
    def methods(self) -> List[str]:
        return list(self._program.methods())

    def method_meta(self, method: str = "forward") -> dict:
        return self._program.method_meta(method)

    def run(
        self,
        method: str,
        inputs: Sequence[torch.Tensor],
        instruction_limit: int = 0,
        profile: bool = False,
        profile_events: int = 0,
        profile_memory: bool = False,
        profile_outputs: int = 0,
    ):
        """Runs `method` on `inputs` (checked against the program's dtypes and shapes); returns new tensors, and
        Python numbers for scalar outputs (a constant method's value). Safe from any number of threads at once: each
        call runs on a copy of the method of its own, with the GIL released (load()'s `copies`; docs/threads.md).

        `instruction_limit`: in a method with loops (map, scan, while_loop), at most this many instructions per
        run, after which the run fails (OutOfResources) instead of looping for ever; 0 means no limit.

        `profile=True`: returns (outputs, Trace) instead, the run timed per instruction by the runtime's event
        tracer (a build of the extension that has it; kernels="default" only). `profile_events` bounds the trace
        buffer (default: one record per instruction, plus one per allocator and one for the run; a loop needs more).
        `profile_memory=True` adds the run's allocation events to the ETDump (bytes per allocator: the method
        allocator, the temp allocator, each planned pool), which `python -m devtools.profile` reports; ExecuTorch
        1.5.1's Inspector cannot read a trace that has them. `profile_outputs=N` is debug mode: each kernel's output
        tensors are also kept, in a buffer of N bytes (Trace.debug_buffer; a tensor that does not fit is counted in
        Trace.dropped_outputs)."""
        if profile:
            with self._profile_lock:
                return self._run_profiled(
                    method, inputs, instruction_limit, profile_events, profile_memory, profile_outputs
                )
        if method not in self._input_orders:
            self._input_orders[method] = self._program.input_dim_orders(method)
        packed = self._pack(method, inputs, self._input_orders[method])
        return self._unpack(method, self._program.run(method, packed, int(instruction_limit)))

    def copies(self, method: str = "forward") -> Tuple[int, int]:
        """(copies of `method` loaded so far, the most that may be): calls running at once each take a copy of
        their own; a method with mutable buffers (state carried between calls) has one, so its calls take turns."""
        return tuple(self._program.copies(method))

    def _run_profiled(
        self,
        method: str,
        inputs,
        instruction_limit: int,
        profile_events: int,
        profile_memory: bool,
        profile_outputs: int,
    ):
        if self._kernels != "default":
            raise ValueError(
                f"profile=True runs on the default kernels; this program was loaded with "
                f"kernels={self._kernels!r}: load it again without kernels= to profile it"
            )
        if self._traced is None:
            if self._data is None:  # loaded from a file: the profiling extension reads it on first use
                with open(self._path, "rb") as f:
                    self._data = f.read()
            self._traced = _profiling_extension().Program(self._data)
            if self.data_files:
                self._traced_files = [_profiling_extension().DataFile(f.path) for f in self.data_files]
                self._traced.set_data_files(self._traced_files)
        if method not in self._traced_methods:
            self._traced_methods[method] = self._traced.load_method(method)
        m = self._traced_methods[method]
        meta = self._traced.method_meta(method)
        allocators = 1 + (meta["scratch_bytes"] != 0) + len(meta["planned_pools"])
        # In debug mode a kernel may return several tensors, each a record; twice the instructions covers most.
        per_instruction = 2 if profile_outputs else 1
        capacity = int(profile_events) or per_instruction * meta["num_instructions"] + allocators + 1
        if capacity < 1:
            raise ValueError(f"profile_events must be at least 1, got {profile_events}")
        if int(profile_outputs) < 0:
            raise ValueError(f"profile_outputs is a byte count (0: no outputs kept), got {profile_outputs}")
        packed = self._pack(method, inputs, m.input_dim_orders())
        m.set_instruction_limit(int(instruction_limit))
        m.profile_start(capacity, int(profile_outputs))
        try:
            outputs = self._unpack(method, m.run(packed))
        finally:
            etdump, events, dropped, debug_buffer, dropped_outputs = m.profile_stop(bool(profile_memory))
        return outputs, Trace(etdump, events, dropped, debug_buffer, dropped_outputs)

    @staticmethod
    def _pack(method: str, inputs, orders) -> list:
        """(bytes, dtype code, shape) per input, the bytes in the input's dim order, as the extension takes them."""
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"inputs of '{method}' must be a list or tuple of tensors, got a {type(inputs).__name__}")
        packed = []
        for i, x in enumerate(inputs):
            if not isinstance(x, torch.Tensor):
                raise TypeError(f"input {i} of '{method}' is a {type(x).__name__}; pass torch tensors")
            if x.dtype not in _CODES:
                raise TypeError(f"input {i} of '{method}' has dtype {x.dtype}, which .pte programs cannot carry")
            if x.layout != torch.strided or x.device.type == "meta":
                raise TypeError(
                    f"input {i} of '{method}' is a {x.layout} tensor on {x.device}; pass a dense tensor "
                    f"with data (x.to_dense(), or materialize it)"
                )
            shape = list(x.shape)
            x = x.detach().cpu()
            order = orders[i] if i < len(orders) else []
            if len(order) == x.dim() and order != sorted(order):
                x = x.permute(order)  # the program holds this input in another dim order (channels-last)
            x = x.contiguous()
            data = x.reshape(-1).view(torch.uint8).numpy() if x.numel() else bytes()  # reshape: 0-d cannot view
            packed.append((data, _CODES[x.dtype], shape))
        return packed

    @staticmethod
    def _unpack(method: str, results) -> list:
        """Torch tensors (and Python numbers) from the extension's outputs, each over a bytes copy of its own."""
        outputs = []
        for i, result in enumerate(results):
            if isinstance(result, (bool, int, float)):  # a scalar output: a constant method's value, a size
                outputs.append(result)
                continue
            data, code, shape, order = result
            if code not in _DTYPES:
                raise RuntimeError(
                    f"output {i} of '{method}' has ScalarType code {code}, which has no torch dtype here"
                )
            if not data:
                outputs.append(torch.empty(shape, dtype=_DTYPES[code]))
                continue
            if len(order) == len(shape) and order != sorted(order):
                # Bytes in the output's dim order: viewed in that order, then permuted back, so the tensor has the
                # program's shape and eager's strides (channels-last stays channels-last).
                stored = torch.frombuffer(bytearray(data), dtype=_DTYPES[code]).reshape([shape[d] for d in order])
                outputs.append(stored.permute([order.index(d) for d in range(len(order))]))
            else:
                outputs.append(torch.frombuffer(bytearray(data), dtype=_DTYPES[code]).reshape(shape))
        return outputs


class DataFile:
    """A .ptd (external tensors, ExecuTorch's FlatTensor), mapped once and checked whole when opened. Every program
    loaded with it, and every method of each, reads its weights in place from the one mapping."""

    def __init__(self, path: str, kernels: str = "default"):
        self.path, self.kernels = path, kernels
        self._file = _extension(kernels).DataFile(path)

    def keys(self) -> List[str]:
        return list(self._file.keys())

    def read(self, key: str) -> bytes:
        """The bytes stored under `key` (a copy)."""
        return self._file.read(key)

    @property
    def segment_bytes(self) -> int:
        return self._file.segment_bytes


# Open data files, so that programs loaded with the same path share one mapping while any of them lives.
_data_files: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()
_data_files_lock = threading.Lock()


def data_file(path: Union[str, os.PathLike], kernels: str = "default") -> DataFile:
    """The .ptd at `path`, mapped; the same object for the same unchanged file while it is in use."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no data file at {path!r}")
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, kernels)
    with _data_files_lock:
        f = _data_files.get(key)
        if f is None:
            f = DataFile(path, kernels)
            _data_files[key] = f
        return f


def load(
    source: Union[str, os.PathLike, bytes],
    kernels: str = "default",
    threads: int = 1,
    copies: Optional[int] = None,
    data_files: Sequence[Union[str, os.PathLike, DataFile]] = (),
) -> Program:
    """A program from a path (mapped, as the runner does: weights are never copied) or bytes (copied), on the
    default kernels or (kernels="portable") portable ones only.

    `threads`: kernels/optimized splits its work over this many threads, the calling one included, from a pool the
    program owns; results are bit for bit those of one thread. The kernels' scratch is planned for them
    (method_meta()["threaded_scratch_bytes"]: depthwise convolutions and attention take a slice per thread).

    `copies`: run() is safe from any number of Python threads. Calls running at once each execute on a loaded copy
    of the method of their own (its planned memory, scratch and kernel state; the program's constants are shared),
    with the GIL released; a copy is loaded only when every loaded one is busy, and at most `copies` of each method
    (default: the CPU count), after which a caller waits for one to be free. A method with mutable buffers (a KV
    cache) keeps one copy, so its calls take turns on its one state. docs/threads.md.

    `data_files`: the .ptd files (paths or DataFile) holding the tensors the program keeps outside itself
    (exported with ExecutorchBackendConfig.external_constants, or by ExecuTorch), searched in order by name when a
    method loads. A path already open for another live program is the same mapping (data_file()): a base model's
    weights shared by several adapter programs are in memory once. docs/external_data.md."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return Program(bytes(source), kernels, threads, copies=copies, data_files=data_files)
    path = os.fspath(source)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no program file at {path!r}")
    return Program(None, kernels, threads, path=path, copies=copies, data_files=data_files)


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
        return list(
            self._lib.verify_bundled(
                self._data, None if atol is None else float(atol), None if rtol is None else float(rtol), method
            )
        )


def load_bundled(source: Union[str, os.PathLike, bytes], kernels: str = "default") -> BundledProgram:
    """A bundled program (.bpte) from a path or bytes; see BundledProgram."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return BundledProgram(bytes(source), kernels)
    with open(source, "rb") as f:
        return BundledProgram(f.read(), kernels)
