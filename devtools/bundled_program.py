"""bundle(): a program with its test cases inside (a .bpte, ExecuTorch's bundled program format "BP08").

    from devtools.bundled_program import bundle
    prog = exir.to_edge(torch.export.export(model, (x,))).to_executorch()
    b = bundle(prog, [(x,), (x2,)], expected=model, atol=1e-5, rtol=1e-4)   # eager computes the outputs
    b.save("model.bpte")                 # then: runner_verify model.bpte --verify, or ember.runtime.load_bundled

`inputs` is a list of test cases for "forward" (each a tuple of a method's inputs), or {method: [cases]}.
`expected` is the outputs of each case in the same shape, or a module whose methods compute them (eager).
Every case is checked against the program's own method signatures before anything is written, so a bundle
that does not fit its program fails here, not on the device.
"""

from __future__ import annotations

import os
from typing import Any, Callable, List, Mapping, Optional, Sequence, Union

import torch

from exir.serialize.bpte import BundledProgram, MethodTestSuite, TestCase, deserialize_bpte, serialize_bpte
from exir.serialize.pte import deserialize_pte
from schema import program as S
from schema import scalar_types


class BundleError(ValueError):
    """The test cases do not fit the program; the message names the method, case and value."""


class BundledProgramFile:
    def __init__(self, bundle: BundledProgram):
        self.bundle = bundle
        self._buffer: Optional[bytes] = None

    @property
    def buffer(self) -> bytes:
        if self._buffer is None:
            self._buffer = serialize_bpte(self.bundle)
        return self._buffer

    def save(self, path: Union[str, os.PathLike]) -> None:
        with open(path, "wb") as f:
            f.write(self.buffer)


def _as_list(x: Any) -> List[Any]:
    if isinstance(x, (tuple, list)):
        return list(x)
    return [x]


def _program_bytes(program: Any) -> bytes:
    if isinstance(program, (bytes, bytearray, memoryview)):
        return bytes(program)
    if isinstance(program, (str, os.PathLike)):
        with open(program, "rb") as f:
            return f.read()
    buffer = getattr(program, "buffer", None)
    if isinstance(buffer, (bytes, bytearray)):
        return bytes(buffer)
    raise BundleError(
        f"program must be what to_executorch() returned, the bytes of a .pte or its path; got a "
        f"{type(program).__name__}"
    )


def _check_value(v: Any, value: S.EValue, values: List[S.EValue], what: str) -> None:
    kind = type(value.val)
    if kind is S.Tensor:
        if not isinstance(v, torch.Tensor):
            raise BundleError(f"{what} must be a tensor (the program says so), got a {type(v).__name__}")
        spec = value.val
        info = scalar_types.by_torch(v.dtype)
        if info is None or info.pte != spec.scalar_type.name:
            raise BundleError(
                f"{what} has dtype {v.dtype}; the program wants {spec.scalar_type.name}: convert it "
                f"(x.to(...)) before bundling"
            )
        dynamic = spec.shape_dynamism != S.TensorShapeDynamism.STATIC
        shape = list(v.shape)
        if (
            len(shape) != len(spec.sizes)
            or (not dynamic and shape != list(spec.sizes))
            or (dynamic and any(s > b for s, b in zip(shape, spec.sizes)))
        ):
            bound = "within the bounds " if dynamic else ""
            raise BundleError(f"{what} has shape {shape}; the program wants {bound}{list(spec.sizes)}")
    elif kind in (S.Int, S.Double, S.Bool):
        want = {S.Int: int, S.Double: float, S.Bool: bool}[kind]
        if (
            isinstance(v, torch.Tensor)
            or not isinstance(v, want if want is not float else (int, float))
            or (want is int and isinstance(v, bool))
        ):
            raise BundleError(f"{what} must be a Python {want.__name__} (the program returns one), got {v!r}")


def bundle(
    program: Any,
    inputs: Union[Sequence[Sequence[Any]], Mapping[str, Sequence[Sequence[Any]]]],
    expected: Union[None, torch.nn.Module, Callable, Sequence[Any], Mapping[str, Sequence[Any]]] = None,
    atol: float = 1e-5,
    rtol: float = 1e-4,
) -> BundledProgramFile:
    """A bundled program: `program` (to_executorch's result, .pte bytes or path) with test cases.

    inputs: [case, ...] for "forward", each case a tuple of the method's inputs; or {method: [case, ...]}.
    expected: the expected outputs, one entry per case ({method: [...]} when inputs is a dict); or a module (or
      callable for "forward") that computes them eagerly. An output element passes when
      |actual - expected| <= atol + rtol * |expected| (stored in the bundle, per method).
    """
    data = _program_bytes(program)
    pte = deserialize_pte(data)
    plans = {p.name: p for p in pte.program.execution_plan}
    if not isinstance(inputs, Mapping):
        inputs = {"forward": inputs}
    if expected is None:
        raise BundleError(
            "expected outputs are needed: pass expected=[outputs per case], or expected=model to compute them eagerly"
        )
    if not (atol >= 0 and rtol >= 0):
        raise BundleError(f"atol and rtol must be non-negative, got atol={atol}, rtol={rtol}")
    suites = []
    for method, cases in inputs.items():
        if method not in plans:
            raise BundleError(f"the program has no method '{method}' (it has {sorted(plans)})")
        plan = plans[method]
        cases = list(cases)
        if not cases:
            raise BundleError(f"method '{method}': no test cases given")
        # Inputs first: an eager model would fail on a wrong input with a message about itself, not the bundle.
        for c, args in enumerate(cases):
            args = _as_list(args)
            if len(args) != len(plan.inputs):
                raise BundleError(
                    f"method '{method}' case {c}: {len(args)} inputs given, the method takes {len(plan.inputs)}"
                )
            for i, (v, idx) in enumerate(zip(args, plan.inputs)):
                _check_value(v, plan.values[idx], plan.values, f"method '{method}' case {c} input {i}")
        if isinstance(expected, Mapping):
            if method not in expected:
                raise BundleError(f"expected has no entry for method '{method}'")
            want = list(expected[method])
        elif isinstance(expected, (list, tuple)):
            want = list(expected)
        else:
            fn = (
                expected
                if not isinstance(expected, torch.nn.Module) or method == "forward"
                else getattr(expected, method)
            )
            with torch.no_grad():
                want = [fn(*_as_list(c)) for c in cases]
        if len(want) != len(cases):
            raise BundleError(f"method '{method}': {len(cases)} cases but {len(want)} expected outputs")
        tests = []
        for c, (args, outs) in enumerate(zip(cases, want)):
            args, outs = _as_list(args), _as_list(outs)
            if len(outs) != len(plan.outputs):
                raise BundleError(
                    f"method '{method}' case {c}: {len(outs)} expected outputs, the method returns {len(plan.outputs)}"
                )
            for i, (v, idx) in enumerate(zip(outs, plan.outputs)):
                _check_value(v, plan.values[idx], plan.values, f"method '{method}' case {c} expected output {i}")
            tests.append(
                TestCase(
                    [a.detach() if isinstance(a, torch.Tensor) else a for a in args],
                    [o.detach() if isinstance(o, torch.Tensor) else o for o in outs],
                )
            )
        suites.append(MethodTestSuite(method, tests, float(atol), float(rtol)))
    return BundledProgramFile(BundledProgram(program=data, suites=suites))


def load(source: Union[str, os.PathLike, bytes]) -> BundledProgram:
    """Reads a .bpte (Ember's or ExecuTorch's) into its program bytes and test suites."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return deserialize_bpte(bytes(source))
    with open(source, "rb") as f:
        return deserialize_bpte(f.read())
