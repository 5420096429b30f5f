"""Partitioning, lowering and serialization of delegates (ahead of time only; tests/runtime/test_delegation.py
runs the programs): the DelegateCall's layout, the blob inline or as a segment, the memory plan around it."""

import pytest
import torch

from exir import ExecutorchBackendConfig
from exir.backend import (
    BackendDetails,
    CompileSpec,
    DelegationError,
    DelegationSpec,
    PartitionResult,
    Partitioner,
    to_edge_transform_and_lower,
)
from backends.ember_portable import EmberPortablePartitioner
from exir.serialize import deserialize_pte
from schema import program as S


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x, y):
        return self.fc2(torch.relu(self.fc1(x))) + y


def _export():
    torch.manual_seed(0)
    inputs = (torch.randn(2, 8), torch.randn(2, 4))
    return torch.export.export(MLP().eval(), inputs), inputs


def _instructions(program):
    return [i.instr_args for i in program.execution_plan[0].chains[0].instructions]


def test_whole_model_becomes_one_delegate_call_with_a_segment_blob():
    ep, _ = _export()
    specs = [CompileSpec("mode", b"\x01\x02")]
    prog = to_edge_transform_and_lower(ep, partitioner=[EmberPortablePartitioner(compile_specs=specs)]).to_executorch()
    pte = deserialize_pte(prog.buffer)
    plan = pte.program.execution_plan[0]
    calls = _instructions(pte.program)
    assert [type(c) for c in calls] == [S.DelegateCall]
    assert plan.operators == []
    (d,) = plan.delegates
    assert d.id == "EmberPortable"
    assert d.processed.location == S.DataLocation.SEGMENT
    assert [(c.key, c.value) for c in d.compile_specs] == [("mode", b"\x01\x02")]
    # ExecuTorch's argument layout: the delegate's inputs, then its outputs, all planned tensors.
    args = calls[0].args
    assert args[:2] == plan.inputs and args[2:] == plan.outputs
    for a in args:
        assert plan.values[a].val.allocation_info is not None
    # The segment is the sub-program: a .pte whose method holds the partition's kernel calls.
    inner = deserialize_pte(pte.segment(d.processed.index)).program
    names = sorted(f"{o.name}.{o.overload}" for o in inner.execution_plan[0].operators)
    assert names == ["aten::add.out", "aten::addmm.out", "aten::relu.out"]
    assert "EmberPortable (5 calls" in prog.memory_report() or "EmberPortable (4 calls" in prog.memory_report()


def test_inline_blob_when_segments_are_not_extracted():
    ep, _ = _export()
    edge = to_edge_transform_and_lower(ep, partitioner=[EmberPortablePartitioner()])
    prog = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    program = deserialize_pte(prog.buffer).program
    (d,) = program.execution_plan[0].delegates
    assert d.processed.location == S.DataLocation.INLINE and d.processed.index == 0
    assert deserialize_pte(program.backend_delegate_data[0].data).program.execution_plan[0].name == "forward"
    assert len(program.segments) == 1  # the constant segment only


def test_partial_partition_keeps_the_rest_on_kernels_and_plans_around_the_call():
    ep, _ = _export()
    prog = to_edge_transform_and_lower(ep, partitioner=[EmberPortablePartitioner(ops={"aten.relu.default"})])
    program = deserialize_pte(prog.to_executorch().buffer).program
    plan = program.execution_plan[0]
    kinds = [type(c).__name__ for c in _instructions(program)]
    assert kinds.count("DelegateCall") == 1 and kinds.count("KernelCall") >= 3
    relu = next(c for c in _instructions(program) if isinstance(c, S.DelegateCall))
    # Its input and output are planned like any operator's, in pool 1, and do not overlap while both live.
    (inp, out) = [plan.values[a].val for a in relu.args]
    assert inp.allocation_info.memory_id == out.allocation_info.memory_id == 1
    nbytes = 2 * 16 * 4
    a, b = inp.allocation_info.memory_offset_low, out.allocation_info.memory_offset_low
    assert a + nbytes <= b or b + nbytes <= a


def test_a_tag_without_a_spec_is_refused():
    class Bad(Partitioner):
        def __init__(self):
            super().__init__(DelegationSpec("EmberPortable"))

        def partition(self, ep):
            for n in ep.graph_module.graph.nodes:
                if n.op == "call_function":
                    n.meta["delegation_tag"] = "orphan"
            return PartitionResult(ep, {})

    ep, _ = _export()
    with pytest.raises(DelegationError, match="tagged nodes 'orphan' but gave no DelegationSpec"):
        to_edge_transform_and_lower(ep, partitioner=[Bad()])


def test_an_unknown_backend_is_named_at_partition_time():
    class Elsewhere(EmberPortablePartitioner):
        def __init__(self):
            super().__init__()
            self.delegation_spec = DelegationSpec("NoSuchBackend")

    ep, _ = _export()
    with pytest.raises(KeyError, match="no ahead-of-time backend 'NoSuchBackend'"):
        to_edge_transform_and_lower(ep, partitioner=[Elsewhere()])


def test_preprocess_must_return_bytes():
    from exir.backend import register_backend

    @register_backend
    class Broken(BackendDetails):
        backend_id = "BrokenForTest"

        @classmethod
        def preprocess(cls, partition, compile_specs):
            return 42

    class P(EmberPortablePartitioner):
        def __init__(self):
            super().__init__()
            self.delegation_spec = DelegationSpec("BrokenForTest")

    ep, _ = _export()
    edge = to_edge_transform_and_lower(ep, partitioner=[P()])
    with pytest.raises(DelegationError, match="Broken.preprocess returned int"):
        edge.to_executorch()
