"""PyTorch's OpInfo samples as one-op functions over tensors: what the sweep exports, runs and compares.

An OpInfo sample is `op(sample.input, *sample.args, **sample.kwargs)`; its tensors (anywhere in input, args or
kwargs, lists included) become the program's inputs, everything else (ints, dims, strings, dtypes) is a constant
of the exported function. Samples are generated with a fixed seed per (OpInfo, dtype), so a sample's index is
stable for a given torch version (2.13.0 here): expectations and results name samples by index.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import unittest
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.utils import _pytree as pytree

# The dtypes swept: Ember's computed scalar types. Complex OpInfo dtypes are counted as refused (Ember has no
# complex type); unsigned 16-64 bit and float8 types are not in OpInfo's CPU lists for the ops swept.
DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.bool,
]
DTYPE_NAMES = {
    torch.float32: "f32",
    torch.float64: "f64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.uint8: "u8",
    torch.int8: "i8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.bool: "bool",
}
BY_NAME = {v: k for k, v in DTYPE_NAMES.items()}
# Dtype classes (the CI tier runs a sample or two of each class an OpInfo supports).
CLASSES = {
    "float": [torch.float32, torch.float64],
    "half": [torch.float16, torch.bfloat16],
    "int": [torch.int32, torch.int64, torch.int16, torch.int8, torch.uint8],
    "bool": [torch.bool],
}


def op_db():
    """torch's OpInfo database. Its module imports `expecttest` (a test-runner helper, not installed here) for
    its TestCase base class only: a stand-in with unittest's TestCase is enough to read the samples."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        stub = types.ModuleType("expecttest")
        stub.TestCase = unittest.TestCase
        sys.modules["expecttest"] = stub
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db as db
    return db


def full_name(op) -> str:
    """The OpInfo's name with its variant (`max.reduction_with_dim`), as PyTorch's test ids spell it."""
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def by_name() -> Dict[str, Any]:
    return {full_name(op): op for op in op_db()}


def cpu_dtypes(op) -> Tuple[List[torch.dtype], List[torch.dtype]]:
    """(dtypes swept, complex dtypes refused) of OpInfo `op` on CPU, in DTYPES order."""
    supported = op.supported_dtypes("cpu")
    return [d for d in DTYPES if d in supported], sorted((d for d in supported if d.is_complex), key=str)


@dataclasses.dataclass
class Sample:
    opinfo: str
    dtype: torch.dtype
    index: int
    fn: Callable  # fn(*tensors) -> the op's result
    inputs: List[torch.Tensor]
    text: str  # a short description for reports

    @property
    def key(self) -> str:
        return f"{self.opinfo}/{DTYPE_NAMES[self.dtype]}/{self.index}"


def _describe(v) -> str:
    if isinstance(v, torch.Tensor):
        return f"{DTYPE_NAMES.get(v.dtype, str(v.dtype))}{list(v.shape)}"
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_describe(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner})"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={_describe(x)}" for k, x in v.items()) + "}"
    return repr(v)


def samples(op, dtype: torch.dtype, seed: int = 0) -> List[Sample]:
    """Every OpInfo sample of `op` at `dtype` on CPU, as functions of their tensors (contiguous copies)."""
    torch.manual_seed(seed)
    out = []
    for i, s in enumerate(op.sample_inputs("cpu", dtype, requires_grad=False)):
        leaves, spec = pytree.tree_flatten((s.input, s.args, s.kwargs))
        where = [j for j, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
        tensors = [leaves[j].detach().clone().contiguous() for j in where]

        def fn(*ts, _leaves=leaves, _where=where, _spec=spec, _op=op.op):
            vals = list(_leaves)
            for j, t in zip(_where, ts):
                vals[j] = t
            inp, args, kwargs = pytree.tree_unflatten(vals, _spec)
            return _op(inp, *args, **kwargs)

        text = (
            _describe(s.input)
            + ("" if not s.args else " " + _describe(list(s.args))[1:-1])
            + ("" if not s.kwargs else " " + _describe(s.kwargs))
        )
        out.append(Sample(full_name(op), dtype, i, fn, tensors, text))
    return out


def flat_outputs(result) -> Optional[List[torch.Tensor]]:
    """The tensors of an op's result in pytree order, or None when it returns anything else (a Python number,
    None inside a tuple is dropped)."""
    leaves = [x for x in pytree.tree_leaves(result) if x is not None]
    if not leaves or not all(isinstance(x, torch.Tensor) for x in leaves):
        return None
    return leaves
