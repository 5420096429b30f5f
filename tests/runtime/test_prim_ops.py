"""Prim ops (symbolic-shape arithmetic) on the runtime: their results flow into later kernels' int lists."""

import pytest
import torch

from exir.serialize import serialize_pte
from schema import program as S


def _tensor(sizes, offset):
    return S.Tensor(
        scalar_type=S.ScalarType.FLOAT,
        sizes=sizes,
        dim_order=list(range(len(sizes))),
        allocation_info=S.AllocationDetails.from_offset(1, offset),
    )


def _program(size_expr_ops):
    """x[2, 3] -> full([n], 7.0) where n is computed at run time by `size_expr_ops` from sym_size(x, 1)."""
    values = [
        S.EValue(_tensor([2, 3], 0)),  # 0: x
        S.EValue(S.Int(1)),  # 1: dim
        S.EValue(S.Int(0)),  # 2: sym_size result (0 until the op runs)
        S.EValue(S.Int(2)),  # 3: factor
        S.EValue(S.Int(0)),  # 4: arithmetic result
        S.EValue(S.IntList([4])),  # 5: [n], boxed over value 4
        S.EValue(S.Double(7.0)),  # 6: fill value
        S.EValue(_tensor([6], 32)),  # 7: out
    ]
    ops = [
        S.Operator("aten::sym_size", "int"),
        S.Operator(f"executorch_prim::{size_expr_ops}", "Scalar"),
        S.Operator("aten::full", "out"),
    ]
    instrs = [
        S.Instruction(S.KernelCall(0, [0, 1, 2])),
        S.Instruction(S.KernelCall(1, [2, 3, 4])),
        S.Instruction(S.KernelCall(2, [5, 6, 7, 7])),
    ]
    plan = S.ExecutionPlan(
        name="forward",
        values=values,
        inputs=[0],
        outputs=[7],
        chains=[S.Chain(instructions=instrs)],
        operators=ops,
        non_const_buffer_sizes=[0, 64],
    )
    return serialize_pte(S.Program(execution_plan=[plan]))


def test_sym_size_times_two_sizes_a_tensor(runtime):
    out = runtime.load(_program("mul")).run("forward", [torch.zeros(2, 3)])[0]
    assert out.tolist() == [7.0] * 6


def test_wrong_runtime_size_is_an_error_not_a_crash(runtime):
    # 3 + 2 = 5 elements, but the planned output holds 6: the kernel refuses the shape with a message.
    with pytest.raises(RuntimeError, match=r"instruction 2 \(aten::full.out\) failed"):
        runtime.load(_program("add")).run("forward", [torch.zeros(2, 3)])
