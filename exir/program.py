"""to_executorch: edge programs -> lowered, planned, emitted and serialized .pte program.

ep = torch.export.export(model, example_inputs)
prog = exir.to_edge(ep).to_executorch()
prog.save("model.pte"); print(prog.memory_report())
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Union

import torch

from exir.backend.named_data import NamedDataStoreOutput, merge_named_data
from exir.backend.to_backend import SPECS as DELEGATION_SPECS, lower_delegates
from exir.emit import ConstantPool, emit_method
from exir.emit.emitter import ExternalConstants
from exir.lowering.ir import DelegateCall
from exir.kernel_check import KernelTarget, check as check_kernels
from exir.kernel_check import KernelMissingError  # noqa: F401  (exir's lazy __getattr__ exports it from here)
from exir.lowering import MethodGraph, TensorValue, lower_method
from exir.lowering.alias import alias_views
from exir.lowering.fold import DEFAULT_FOLD_FREE_BYTES, DEFAULT_FOLD_GROWTH
from exir.lowering.fuse_activation import fuse_activations
from exir.lowering.max_pool import drop_unread_pool_indices
from exir.lowering.winograd import use_winograd
from exir.lowering.fuse_batch_norm import fuse_batch_norm
from exir.lowering.convolution_general import route_general_convolutions
from exir.lowering.safe_softmax import fuse_safe_softmax
from exir.lowering.in_place import update_buffers_in_place
from exir.lowering.lifetimes import MemIdPolicy, assign_mem_ids, default_mem_id, lifetimes
from exir.memory_planning import Allocation, compare_algorithms, plan_memory, verify_plan
from exir.serialize import serialize_pte
from exir.serialize.ptd import PtdEntry, TensorLayout, serialize_ptd
from schema import format_versions
from schema import program as S


class MemoryBudgetError(RuntimeError):
    """A planned pool is larger than the target memory declared for it."""


@dataclasses.dataclass
class MemoryPlanningConfig:
    # Algorithms to try (see exir.memory_planning); the smallest plan wins. None means all of them.
    algorithms: Optional[Sequence[str]] = None
    alignment: int = 16
    # Which pool (memory id >= 1) each planned tensor goes to; see exir.lowering.lifetimes.TensorInfo.
    mem_id: MemIdPolicy = default_mem_id
    # Bytes the target has for each pool (mem_id -> bytes). A plan that does not fit fails the export.
    pool_limits: Mapping[int, int] = dataclasses.field(default_factory=dict)
    # Name of each pool for messages ("SRAM", "DDR").
    pool_names: Mapping[int, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class ExecutorchBackendConfig:
    memory_planning: MemoryPlanningConfig = dataclasses.field(default_factory=MemoryPlanningConfig)
    fold_constants: bool = True
    fold_free_bytes: int = DEFAULT_FOLD_FREE_BYTES
    fold_growth: float = DEFAULT_FOLD_GROWTH
    fuse_batch_norm: bool = True
    # Convolution + relu/hardtanh/clamp as one `ember::convolution_clamp.out` call (exir.lowering.fuse_activation),
    # attention's seven-pass masked softmax as one `ember::safe_softmax.out` (exir.lowering.safe_softmax), and max
    # pools whose indices nothing reads as `ember::max_pool2d.out` (exir.lowering.max_pool).
    # Off by default: ExecuTorch's runtime has no such operators, and by default an Ember program runs on both.
    fuse_activations: bool = False
    # Dense 3x3 stride-1 convolutions as Winograd F(4x4, 3x3) (exir.lowering.winograd): 2.25 multiply-adds per
    # output and channel pair instead of 9, filters stored transformed (4x their bytes), outputs within about 1e-5
    # of their magnitude of the direct convolution's. Off by default: ExecuTorch has no such operator.
    winograd: bool = False
    alias_views: bool = True
    # Refuse, naming them with their source lines, operators and dtypes the target runtime has no kernel for
    # (exir.kernel_check). `kernels` describes that runtime: default, the default build's libraries.
    check_kernels: bool = True
    kernels: Optional[KernelTarget] = None
    # Each instruction's source line in the program (Chain.stacktrace): selective_build.check then names it.
    # Off by default: it costs bytes on the device.
    emit_stacktrace: bool = False
    segment_alignment: int = 4096
    constant_tensor_alignment: int = 16
    # Delegate blobs as segments of their own after the flatbuffer (ExecuTorch's default), or inline in
    # Program.backend_delegate_data (False).
    extract_delegate_segments: bool = True
    # Program-data separation: constants kept out of the .pte, in .ptd files (ExecuTorch's FlatTensor) that the
    # runtime maps and resolves by name when a method loads (docs/external_data.md). True: every named constant
    # (parameters and buffers, and constants folded from them, named "lin.weight:permute") into one file tagged
    # "_default_external_constant". Or a function from a constant's name to the tag of its file, or None to keep
    # it in the .pte: e.g. a LoRA model's base weights to a shared "base" file, its adapters inline.
    external_constants: Union[bool, Callable[[str], Optional[Union[str, bool]]]] = False
    # Alignment of each tensor in a .ptd (ExecuTorch's FlatTensorConfig default).
    external_segment_alignment: int = 128


@dataclasses.dataclass
class PoolReport:
    mem_id: int
    planned_bytes: int
    lower_bound_bytes: int
    by_algorithm: Dict[str, int]
    # Methods with bounded dynamic dimensions: the most bytes live at once when every dynamic dimension is at
    # its smallest (what a small input really touches; the plan itself holds the bounds).
    smallest_live_bytes: Optional[int] = None

    @property
    def efficiency(self) -> float:
        return 1.0 if self.planned_bytes == 0 else self.lower_bound_bytes / self.planned_bytes


@dataclasses.dataclass
class MethodReport:
    name: str
    algorithm: str
    num_instructions: int
    pools: List[PoolReport]
    # Convolution + activation pairs that became one call (ExecutorchBackendConfig.fuse_activations).
    fused_activations: int = 0
    # Bounded dynamic inputs, as "x: float32[1..128, 16]".
    dynamic_inputs: List[str] = dataclasses.field(default_factory=list)
    # Delegate calls, as "EmberPortable (5 calls, 1234 B blob)".
    delegates: List[str] = dataclasses.field(default_factory=list)
    # Convolutions rewritten as ember::winograd_conv2d (ExecutorchBackendConfig.winograd).
    winograd_convolutions: int = 0


class ExecutorchProgramManager:
    def __init__(
        self,
        program: S.Program,
        constants: ConstantPool,
        initial_values: ConstantPool,
        graphs: Dict[str, MethodGraph],
        plan_offsets: Dict[str, Dict[int, tuple]],
        reports: Dict[str, MethodReport],
        config: ExecutorchBackendConfig,
        delegate_blobs: Sequence[bytes] = (),
        named_data=None,
    ):
        self.program = program
        self._constants = constants
        self._initial_values = initial_values
        self.method_graphs = graphs
        # method -> {id(root tensor): (mem_id, offset)}, for the reference interpreter and reports.
        self.plan_offsets = plan_offsets
        self.reports = reports
        self.config = config
        self._delegate_blobs = list(delegate_blobs)
        # Bytes delegates refer to by key (exir.backend.named_data.NamedDataStoreOutput), or None.
        self._named_data = named_data
        self._buffer: Optional[bytes] = None
        self._data_files: Optional[Dict[str, bytes]] = None

    @property
    def methods(self) -> List[str]:
        return [p.name for p in self.program.execution_plan]

    @property
    def buffer(self) -> bytes:
        if self._buffer is None:
            self._buffer = serialize_pte(
                self.program,
                self._constants.blobs[1:],
                mutable_blobs=self._initial_values.blobs[1:],
                delegate_blobs=(self._delegate_blobs if self.config.extract_delegate_segments else []),
                segment_alignment=self.config.segment_alignment,
                constant_tensor_alignment=self.config.constant_tensor_alignment,
                named_data=[(k, v, self._named_data.alignment.get(k, 1)) for k, v in self._named_data.pte_data.items()]
                if self._named_data
                else (),
            )
        return self._buffer

    @property
    def data_files(self) -> Dict[str, bytes]:
        """The .ptd files of external constants (ExecutorchBackendConfig.external_constants), by tag; empty when
        every constant is in the .pte."""
        if self._data_files is None:
            external = self._constants.external
            files = external.files if external is not None else {}
            self._data_files = {
                tag: serialize_ptd(
                    [
                        PtdEntry(name, raw, TensorLayout(st, sizes, order))
                        for name, (raw, st, sizes, order) in sorted(entries.items())
                    ],
                    segment_alignment=self.config.external_segment_alignment,
                )
                for tag, entries in files.items()
            }
        return self._data_files

    def write_tensor_data_to_file(self, directory: str) -> List[str]:
        """Writes each .ptd as <directory>/<tag>.ptd (ExecuTorch's naming); returns the paths."""
        paths = []
        for tag, data in self.data_files.items():
            path = os.path.join(directory, f"{tag}.ptd")
            with open(path, "wb") as f:
                f.write(data)
            paths.append(path)
        return paths

    def save(self, path: str, etrecord: bool = False) -> None:
        """Writes the .pte, and beside it the .ptd files of external constants; with etrecord=True also the source
        map profiles use (devtools/etrecord.py)."""
        with open(path, "wb") as f:
            f.write(self.buffer)
        self.write_tensor_data_to_file(os.path.dirname(os.path.abspath(path)))
        if etrecord:
            from devtools import etrecord as _etrecord

            _etrecord.write(self, path)

    @property
    def constant_bytes(self) -> int:
        return self._constants.nbytes

    def memory_report(self) -> str:
        lines = []
        for r in self.reports.values():
            fused = f" ({r.fused_activations} convolution + activation pairs fused)" if r.fused_activations else ""
            if r.winograd_convolutions:
                fused += f" ({r.winograd_convolutions} convolutions as Winograd F(m x m, 3x3))"
            lines.append(f"method {r.name}: {r.num_instructions} instructions{fused}, plan by {r.algorithm}")
            if r.dynamic_inputs:
                lines.append(f"  dynamic inputs, planned at their bounds: {'; '.join(r.dynamic_inputs)}")
            for d in r.delegates:
                lines.append(f"  delegate call: {d}")
            for p in r.pools:
                algos = ", ".join(f"{k} {v}" for k, v in sorted(p.by_algorithm.items()))
                at = " at the bounds" if r.dynamic_inputs else ""
                lines.append(
                    f"  pool {p.mem_id}: {p.planned_bytes} B planned{at}, lower bound {p.lower_bound_bytes} B "
                    f"({100 * p.efficiency:.1f}% efficient); {algos}"
                )
                if p.smallest_live_bytes is not None:
                    lines.append(f"    at the smallest shapes, {p.smallest_live_bytes} B are live at most")
        lines.append(f"constants: {self.constant_bytes} B")
        return "\n".join(lines)


# XNNPACK reads (never writes) a little past the end of the tensors it is given: its kernels load whole vectors,
# and the last one of a tensor may run past its end (XNN_EXTRA_BYTES: 16 in Debian's 2022 library, more in newer
# ones). Inside an arena those bytes belong to a neighbour and are harmless, but a tensor planned at the end of its
# pool would make XNNPACK read past the arena. So in a method that calls an XNNPACK delegate every planned buffer
# gets this many spare bytes after it, as ExecuTorch's planner does when its program has an XNNPACK delegate
# (the same 64 bytes, so an Ember program is safe on ExecuTorch's runtime and its newer XNNPACK too).
XNNPACK_EXTRA_PADDING = 64


def _calls_xnnpack(graph: MethodGraph) -> bool:
    return any(isinstance(c, DelegateCall) and c.backend_id == "XnnpackBackend" for c in graph.calls)


def _plan(graph: MethodGraph, cfg: MemoryPlanningConfig):
    spans = lifetimes(graph)
    assign_mem_ids(graph, spans, cfg.mem_id)
    pad = XNNPACK_EXTRA_PADDING if _calls_xnnpack(graph) else 0
    allocs = [
        Allocation(
            id=i,
            size=lt.root.nbytes + pad,
            first=lt.first,
            last=lt.last,
            mem_id=lt.root.mem_id,
            alignment=cfg.alignment,
        )
        for i, lt in enumerate(spans)
    ]
    kwargs = {"pool_alignment": cfg.alignment}
    if cfg.algorithms is not None:
        kwargs["algorithms"] = tuple(cfg.algorithms)
    plan = plan_memory(allocs, **kwargs)
    verify_plan(allocs, plan)
    offsets = {id(lt.root): (lt.root.mem_id, plan.offsets[i]) for i, lt in enumerate(spans)}
    by_algo = compare_algorithms(allocs)
    smallest = _peak_live(spans, _smallest_nbytes) if any(t.dynamic for t in graph.tensors()) else {}
    pools = [
        PoolReport(
            mem_id,
            size,
            plan.lower_bounds.get(mem_id, 0),
            {a: sizes.get(mem_id, 0) for a, sizes in by_algo.items()},
            smallest.get(mem_id),
        )
        for mem_id, size in sorted(plan.pool_sizes.items())
    ]
    return offsets, plan, pools


def _smallest_nbytes(t: TensorValue) -> int:
    if not t.dynamic or t.lower_shape is None:
        return t.nbytes
    n = 1
    for s in t.lower_shape:
        n *= s
    return n * torch.empty((), dtype=t.dtype).element_size()


def _peak_live(spans, size_of) -> Dict[int, int]:
    """Per memory id, the most bytes live at one step, each tensor counted at size_of(tensor)."""
    steps = max((lt.last for lt in spans), default=0) + 2
    live: Dict[int, List[int]] = {}
    for lt in spans:
        row = live.setdefault(lt.root.mem_id, [0] * steps)
        for step in range(lt.first, lt.last + 1):
            row[step] += size_of(lt.root)
    return {mem_id: max(row) for mem_id, row in live.items()}


def _describe_dynamic(t: TensorValue) -> str:
    dims = [f"{lo}..{hi}" if lo != hi else str(hi) for lo, hi in zip(t.lower_shape or t.shape, t.shape)]
    return f"{t.name}: {str(t.dtype).replace('torch.', '')}[{', '.join(dims)}]"


def _check_budget(method: str, pools: List[PoolReport], cfg: MemoryPlanningConfig) -> None:
    for p in pools:
        limit = cfg.pool_limits.get(p.mem_id)
        if limit is not None and p.planned_bytes > limit:
            name = cfg.pool_names.get(p.mem_id, f"pool {p.mem_id}")
            raise MemoryBudgetError(
                f"method '{method}' needs {p.planned_bytes} bytes in {name} (memory id {p.mem_id}) but the target "
                f"has {limit}: {p.planned_bytes - limit} bytes over. Move tensors to another pool with "
                f"MemoryPlanningConfig(mem_id=...), shrink the model, or quantize it."
            )


def to_executorch(edge, config: Optional[ExecutorchBackendConfig] = None) -> ExecutorchProgramManager:
    config = config or ExecutorchBackendConfig()
    constants, initial_values = ConstantPool(), ConstantPool()
    if config.external_constants is not False:
        constants.external = ExternalConstants(config.external_constants)
    plans, graphs, offsets_by_method, reports, fused, winograd = [], {}, {}, {}, {}, {}
    for name in edge.methods:
        ep = edge.exported_program(name)
        graph = lower_method(
            name,
            ep,
            fold_constants=config.fold_constants,
            fold_free_bytes=config.fold_free_bytes,
            fold_growth=config.fold_growth,
        )
        specs = ep.graph_module.meta.get(DELEGATION_SPECS)
        if specs:
            # Partitions a Partitioner tagged (exir.backend): lowered first, so the passes below and the memory
            # planner see each as one call over its inputs and outputs.
            lower_delegates(graph, specs)
        # A buffer updated by index_put/slice_scatter is written in place, without a copy and a write-back (a KV
        # cache would otherwise be copied twice per call).
        update_buffers_in_place(graph)
        if config.fuse_batch_norm:
            fuse_batch_norm(graph)
        # After batch norm is folded: conv -> BN -> ReLU6 only then reads as conv -> ReLU6.
        fused[name] = fuse_activations(graph) if config.fuse_activations else 0
        if config.fuse_activations:
            fuse_safe_softmax(graph)
            drop_unread_pool_indices(graph)
        # After the activations are fused: conv + ReLU is then one call, which keeps its clamp.
        winograd[name] = use_winograd(graph) if config.winograd else 0
        # Transposed and 3-d convolutions get their own operator, so other runtimes do not link their loops.
        route_general_convolutions(graph)
        if config.alias_views:
            alias_views(graph)
        graphs[name] = graph
    if config.check_kernels:
        # Every method at once, so one export names every missing kernel.
        check_kernels(graphs, config.kernels)
    for name, values in getattr(edge, "constant_methods", {}).items():
        graphs[name] = MethodGraph(name=name, inputs=[], outputs=list(values), calls=[])
    delegate_blobs: List[bytes] = []
    named_data = NamedDataStoreOutput()
    for name in graphs:
        graph = graphs[name]
        offsets, plan, pools = _plan(graph, config.memory_planning)
        _check_budget(name, pools, config.memory_planning)
        plans.append(
            emit_method(
                graph,
                offsets,
                plan.pool_sizes,
                constants,
                initial_values,
                stacktrace=config.emit_stacktrace,
                delegate_blobs=delegate_blobs,
                inline_delegates=not config.extract_delegate_segments,
            )
        )
        offsets_by_method[name] = offsets
        for c in graph.calls:
            if isinstance(c, DelegateCall) and c.named_data is not None:
                merge_named_data(named_data, c.named_data, f"method '{name}', delegate {c.backend_id}: ")
        reports[name] = MethodReport(
            name,
            plan.algorithm,
            len(graph.calls),
            pools,
            fused.get(name, 0),
            [_describe_dynamic(t) for t in graph.inputs if t.dynamic],
            [
                f"{c.backend_id} ({c.num_calls} calls, {len(c.processed)} B blob)"
                for c in graph.calls
                if isinstance(c, DelegateCall)
            ],
            winograd.get(name, 0),
        )
    inline = [] if config.extract_delegate_segments else [S.BackendDelegateInlineData(data=b) for b in delegate_blobs]
    program = S.Program(
        version=format_versions.PTE.writes,
        execution_plan=plans,
        constant_buffer=[],
        backend_delegate_data=inline,
        segments=[],
        constant_segment=S.SubsegmentOffsets(segment_index=0, offsets=[]),
        mutable_data_segments=[],
        named_data=[],
    )
    return ExecutorchProgramManager(
        program,
        constants,
        initial_values,
        graphs,
        offsets_by_method,
        reports,
        config,
        delegate_blobs,
        named_data if named_data.pte_data else None,
    )
