"""Batches of OpInfo samples as one program: exported with torch.export, lowered with exir, run on both builds.

Many samples share one program (one submodule each, its own inputs and outputs): exir's export costs about as much
per program as per op, so a batch of 16 costs little more than one. When a batch fails at any stage, each of its
samples is retried alone, so a failure is always attributed to the samples that cause it.

Ops stay whole where Ember has their kernel: every functional ATen overload in torch.export's default
decomposition table whose out= variant is in a kernel manifest (roll, tril, stack, hardswish, silu, glu, pads,
pixel_shuffle, var.dim, ...) is dropped from the table and allowed in the edge program, as tests/kernels'
`keep=` does op by op, so the sample reaches that kernel rather than the ops it decomposes into. Views are not
kept (exir lowers them to copies or aliases).

Each sample's kernels are read from the edge program: the nodes under its submodule (nn_module_stack), mapped to
their out= variants as exir's lowering maps them (views to their *_copy ops), and checked against the .pte's
operator table.
"""

from __future__ import annotations

import functools
import os
from typing import List, Optional, Sequence, Set, Tuple

import torch

import exir
from exir.lowering.out_variants import out_variant
from tests.opinfo.samples import Sample, flat_outputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANIFESTS = {lib: os.path.join(ROOT, "kernels", lib, "kernels.yaml") for lib in ("portable", "optimized")}

# exir's own error types: a refusal that names its cause. Any other exception raised inside exir is a failure.
EXIR_ERRORS = (
    "KernelMissingError",
    "OpSetError",
    "UnsupportedFeatureError",
    "EmitError",
    "LoweringError",
    "ArenaError",
    "DynamicShapeError",
    "OutVariantError",
    "PlanError",
    "MemoryBudgetError",
    "PteFormatError",
)


@functools.lru_cache(maxsize=None)
def manifest_ops(lib: str) -> Tuple[str, ...]:
    """The operators ('aten::add.out') of one kernel library's manifest, in manifest order."""
    from codegen.manifest import load_manifest

    decls = load_manifest(MANIFESTS[lib], namespace=f"ember::{lib}", library=f"kernels/{lib}")
    return tuple(dict.fromkeys(d.op for d in decls))


def op_key(op) -> str:
    """'aten::add.out' for an OpOverload, as a .pte's operator table and the manifests name it."""
    name, overload = op._schema.name, op._overloadname
    return name + (f".{overload}" if overload and overload != "default" else "")


@functools.lru_cache(maxsize=None)
def kept_ops() -> Tuple[torch._ops.OpOverload, ...]:
    """Functional overloads the default decompositions would rewrite although a manifest has their kernel."""
    have = set(manifest_ops("portable")) | set(manifest_ops("optimized"))
    keep = []
    for op in _DEFAULT_DECOMPOSITIONS():
        if not isinstance(op, torch._ops.OpOverload) or any(a.is_out for a in op._schema.arguments):
            continue
        if any(r.alias_info is not None for r in op._schema.returns) or op._schema.is_mutable:
            continue  # views (t, transpose, split, unbind, ...) and in-place ops
        if op.name().split("::")[-1].split(".")[0].endswith("_copy"):
            continue  # the *_copy ops only appear where exir makes them
        try:
            key = op_key(out_variant(op))
        except Exception:
            continue
        if key in have:
            keep.append(op)
    return tuple(keep)


_DEFAULT_DECOMPOSITIONS = torch.export.default_decompositions


def _decompositions():
    table = _DEFAULT_DECOMPOSITIONS()
    for op in kept_ops():
        table.pop(op, None)
    return table


class One(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return tuple(flat_outputs(self.fn(*args)))


class Batch(torch.nn.Module):
    """Samples side by side: submodule s{i} computes sample i from its own inputs."""

    def __init__(self, batch: Sequence[Sample]):
        super().__init__()
        self.counts = [len(s.inputs) for s in batch]
        for i, s in enumerate(batch):
            setattr(self, f"s{i}", One(s.fn))

    def forward(self, *args):
        outs, at = [], 0
        for i, n in enumerate(self.counts):
            outs.extend(getattr(self, f"s{i}")(*args[at : at + n]))
            at += n
        return tuple(outs)


class StageError(Exception):
    """A sample (or batch) stopped at `stage`: 'export' (torch.export refused), 'exir' (a named exir refusal),
    'fail' (anything else: exir crashed, the runtime refused or failed, or the outputs differ)."""

    def __init__(self, stage: str, reason: str, kernels=()):
        super().__init__(reason)
        self.stage, self.reason, self.kernels = stage, reason, set(kernels)


def _short(e: BaseException, limit: int = 300) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:limit]}"


def _sample_of(node) -> Optional[int]:
    stack = node.meta.get("nn_module_stack") or {}
    for path, _ in stack.values():
        head = path.split(".")[0]
        if head.startswith("s") and head[1:].isdigit():
            return int(head[1:])
        if head.startswith("L['self'].s"):
            return int(head[len("L['self'].s") :].split(".")[0].split("[")[0])
    return None


def _kernel_keys(op) -> List[str]:
    if not isinstance(op, torch._ops.OpOverload):
        return []
    try:
        return [op_key(out_variant(op))]
    except Exception:
        return [op_key(op)]


def lower(batch: Sequence[Sample]):
    """(program, per-sample kernel sets) for a batch; raises StageError('export' | 'exir' | 'fail')."""
    module = Batch(batch).eval()
    inputs = tuple(t for s in batch for t in s.inputs)
    try:
        ep = torch.export.export(module, inputs, strict=False)
    except Exception as e:  # torch's own refusal: data-dependent shapes, unsupported outputs, ...
        raise StageError("export", _short(e)) from None
    allowed = [n for op in kept_ops() for n in (op.name(), str(op))]
    torch.export.default_decompositions = _decompositions  # read by exir.to_edge
    try:
        edge = exir.to_edge(ep, exir.EdgeCompileConfig(allowed_ops=allowed))
    except Exception as e:
        reached = {k for n in ep.graph.nodes if n.op == "call_function" for k in _kernel_keys(n.target)}
        raise StageError(
            "exir" if type(e).__name__ in EXIR_ERRORS else "fail", "to_edge: " + _short(e), reached
        ) from None
    finally:
        torch.export.default_decompositions = _DEFAULT_DECOMPOSITIONS
    per: List[Set[str]] = [set() for _ in batch]
    for node in edge.exported_program().graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        i = _sample_of(node)
        keys = _kernel_keys(node.target)
        for j in [i] if i is not None and i < len(batch) else range(len(batch)):
            per[j].update(keys)
    try:
        prog = edge.to_executorch(exir.ExecutorchBackendConfig(fold_constants=False, alias_views=False))
    except Exception as e:
        raise StageError(
            "exir" if type(e).__name__ in EXIR_ERRORS else "fail", "to_executorch: " + _short(e), set().union(*per)
        ) from None
    in_pte = {
        f"{o.name}.{o.overload}" if o.overload and o.overload != "default" else o.name
        for plan in prog.program.execution_plan
        for o in plan.operators
    }
    # Only kernels the program really calls (getitem, sym_size and views made aliases call none).
    per = [{k for k in ks if k in in_pte} for ks in per]
    return prog, per, in_pte


def eager(sample: Sample, seed: int = 0) -> List[torch.Tensor]:
    torch.manual_seed(seed)
    return flat_outputs(sample.fn(*[t.clone() for t in sample.inputs]))
