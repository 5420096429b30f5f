"""The binary family of portable kernels against eager PyTorch: comparisons, bitwise and logical ops, division
with Python's sign rules, atan2/maximum/minimum/pow, clamp with tensor bounds, rsub and masked_fill.

Each program holds many ops (one export per dtype case keeps this file to seconds): every output is compared with
eager at the per-dtype tolerances of test_portable_ops.py (float32 1e-5 relative, float64 1e-10, float16 and
bfloat16 one ulp, integers and Bool exact; NaN where eager has NaN). Overloads export never emits (rsub.Scalar,
masked_fill.Scalar and div.Scalar_mode decompose, shifts are not core ATen) are reached by rewriting a
placeholder call in the edge graph, or listed in allowed_ops. Argument errors the exporter would refuse first
(shapes, rounding modes, dim orders) are covered in kernels/test/binary_ops_test.cc.
"""

import pytest
import torch

import exir

g = torch.Generator().manual_seed(1515)


def rnd(*shape, dtype=torch.float32, lo=-3.0, hi=3.0):
    return (torch.rand(*shape, generator=g) * (hi - lo) + lo).to(dtype)


def ints(*shape, dtype=torch.int32, lo=-9, hi=10):
    return torch.randint(lo, hi, shape, generator=g, dtype=torch.int64).to(dtype)


def nonzero(*shape, dtype=torch.int32, hi=6):
    x = ints(*shape, dtype=torch.int64, lo=1, hi=hi)
    sign = torch.randint(0, 2, shape, generator=g) * 2 - 1
    return (x * sign).to(dtype)


def ties(*shape, dtype=torch.float32):
    """Small integers as floats, so comparisons see equal elements."""
    return ints(*shape, lo=-2, hi=3).to(dtype)


def with_nan(x):
    x = x.clone()
    x.view(-1)[::5] = float("nan")
    return x


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


CONFIG = exir.ExecutorchBackendConfig(fold_constants=False, alias_views=False)
SHIFTS = [
    "aten::bitwise_left_shift.Tensor",
    "aten::bitwise_left_shift.Tensor_Scalar",
    "aten::bitwise_right_shift.Tensor",
    "aten::bitwise_right_shift.Tensor_Scalar",
]
PLACEHOLDERS = (torch.ops.aten.lt.Tensor, torch.ops.aten.lt.Scalar)


def _rewrite(edge, replacements):
    """Replaces the graph's placeholder calls (aten.lt, in order) with `replacements`: (op, args from the
    placeholder's args[, kwargs]). The emitter then writes that op's out variant, which export never emits."""
    ep = edge._programs["forward"]
    nodes = [n for n in ep.graph.nodes if n.op == "call_function" and n.target in PLACEHOLDERS]
    assert len(nodes) == len(replacements)
    for node, (op, make_args, *kwargs) in zip(nodes, replacements):
        node.target = op
        node.args = tuple(make_args(node.args))
        node.kwargs = kwargs[0] if kwargs else {}
        vals = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in node.args]
        fake_mode = next(v for v in vals if isinstance(v, torch.Tensor)).fake_mode
        with fake_mode:
            node.meta["val"] = op(*vals, **node.kwargs)
    ep.graph_module.recompile()


def run(runtime, fn, inputs, replacements=()):
    module = Fn(fn).eval()
    edge = exir.to_edge(torch.export.export(module, tuple(inputs)), exir.EdgeCompileConfig(allowed_ops=SHIFTS))
    if replacements:
        _rewrite(edge, replacements)
    prog = edge.to_executorch(CONFIG)
    return runtime.load(prog.buffer, kernels="portable").run("forward", list(inputs))


def _tolerance(dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return {"atol": 1e-2, "rtol": 1e-2}
    if dtype == torch.float64:
        return {"atol": 1e-10, "rtol": 1e-10}
    if dtype.is_floating_point:
        return {"atol": 1e-5, "rtol": 1e-5}
    return {"atol": 0, "rtol": 0}


def check(got, want):
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype and a.shape == b.shape, (
            f"output {k}: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
        )
        torch.testing.assert_close(a, b, equal_nan=True, msg=lambda m: f"output {k}: {m}", **_tolerance(b.dtype))


def compare_all(a, b):
    return (a == b, a != b, a < b, a <= b, a > b, a >= b, a == 1, a != 1, a < 1, a <= 2.5, a > 0.5, a >= 1)


def bitwise_all(a, b):
    return (
        a & b,
        a | b,
        a ^ b,
        a & 3,
        a | 2,
        a ^ 1,
        torch.logical_and(a, b),
        torch.logical_or(a, b),
        torch.logical_xor(a, b),
    )


def shifts(a, b):
    return (
        torch.bitwise_left_shift(a, b),
        torch.bitwise_right_shift(a, b),
        torch.bitwise_left_shift(a, 3),
        torch.bitwise_right_shift(a, 2),
        torch.bitwise_right_shift(a, -1),
    )


def arith_all(a, b):
    return (
        torch.atan2(a, b),
        torch.maximum(a, b),
        torch.minimum(a, b),
        torch.fmod(a, b),
        torch.fmod(a, 1.5),
        torch.remainder(a, b),
        torch.remainder(a, -1.5),
        torch.div(a, b, rounding_mode="floor"),
        torch.div(a, b, rounding_mode="trunc"),
        torch.div(a, b),
        torch.floor_divide(a, b),
        torch.pow(a.abs(), b),
        torch.pow(2.0, b),
    )


def int_arith_all(a, b):
    return (
        torch.atan2(a, b),
        torch.maximum(a, b),
        torch.minimum(a, b),
        torch.fmod(a, b),
        torch.fmod(a, 4),
        torch.remainder(a, b),
        torch.remainder(a, -4),
        torch.div(a, b, rounding_mode="floor"),
        torch.div(a, b, rounding_mode="trunc"),
        torch.div(a, b),
        a // b,
        torch.pow(a, b),
        torch.pow(2, b),
        torch.pow(a, b.abs() % 4),
        torch.fmod(a, 2.5),
        torch.remainder(a, 2.5),
    )


def clamps(x, lo, hi):
    return (torch.clamp(x, lo, hi), torch.clamp(x, min=lo), torch.clamp(x, max=hi), torch.clamp(x, hi, lo))


CASES = {
    # comparisons: broadcasting, ties, NaN, every dtype class, mixed dtypes promoting (int8 with uint8 to int16)
    "compare_float": (compare_all, [with_nan(ties(2, 3, 4)), ties(3, 1)]),
    "compare_double": (compare_all, [ties(4, 3, dtype=torch.float64), ties(3, dtype=torch.float64)]),
    "compare_half": (compare_all, [ties(5, 2, dtype=torch.float16), rnd(2, dtype=torch.float16)]),
    "compare_bfloat16": (compare_all, [with_nan(ties(6, dtype=torch.bfloat16)), ties(6, dtype=torch.bfloat16)]),
    "compare_int": (compare_all, [ints(3, 4, lo=-2, hi=3), ints(4, lo=-2, hi=3)]),
    "compare_int8_uint8": (compare_all, [ints(2, 5, dtype=torch.int8), ints(5, dtype=torch.uint8, lo=0)]),
    "compare_int64_float": (compare_all, [ints(6, dtype=torch.int64, lo=-2, hi=3), ties(6)]),
    "compare_bool": (compare_all, [ints(7, lo=0, hi=2).bool(), ints(7, lo=0, hi=2).bool()]),
    # bitwise and logical
    "bitwise_int": (bitwise_all, [ints(3, 4, lo=-100, hi=100), ints(4, lo=-100, hi=100)]),
    "bitwise_int8_uint8": (bitwise_all, [ints(6, dtype=torch.int8), ints(6, dtype=torch.uint8, lo=0, hi=255)]),
    "bitwise_int64": (
        bitwise_all,
        [ints(5, dtype=torch.int64, lo=-(2**40), hi=2**40), ints(5, dtype=torch.int64, lo=-(2**40), hi=2**40)],
    ),
    "bitwise_bool": (bitwise_all, [ints(8, lo=0, hi=2).bool(), ints(2, 8, lo=0, hi=2).bool()]),
    "logical_mixed": (
        lambda a, b, c: (torch.logical_and(a, b), torch.logical_or(a, c), torch.logical_xor(b, c)),
        [with_nan(ints(10, lo=-1, hi=2).float()), ints(10, lo=-1, hi=2), ints(10, lo=0, hi=2).bool()],
    ),
    # shifts by negative and too-large amounts behave as PyTorch's CPU kernels
    "shift_int8": (shifts, [ints(12, dtype=torch.int8, lo=-128, hi=128), ints(12, dtype=torch.int8, lo=-2, hi=10)]),
    "shift_uint8": (shifts, [ints(12, dtype=torch.uint8, lo=0, hi=256), ints(12, dtype=torch.uint8, lo=0, hi=10)]),
    "shift_int32": (shifts, [ints(3, 12, lo=-1000, hi=1000), ints(12, lo=-2, hi=35)]),
    "shift_int64": (
        shifts,
        [ints(12, dtype=torch.int64, lo=-(2**40), hi=2**40), ints(12, dtype=torch.int64, lo=-2, hi=66)],
    ),
    # division with Python's sign rules, atan2, maximum/minimum with NaN, pow
    "arith_float": (
        arith_all,
        [with_nan(rnd(2, 3, 4)), rnd(3, 1, lo=0.5, hi=2.0) * torch.tensor([[1.0], [-1.0], [1.0]])],
    ),
    "arith_float_zero": (arith_all, [rnd(6), torch.tensor([0.0, -0.0, 1.0, -2.0, 0.5, 0.0])]),
    "arith_double": (arith_all, [rnd(5, 4, dtype=torch.float64), rnd(4, dtype=torch.float64, lo=0.5, hi=2.0)]),
    "arith_half": (arith_all, [rnd(8, dtype=torch.float16), rnd(8, dtype=torch.float16, lo=0.5, hi=2.0)]),
    "arith_bfloat16": (arith_all, [rnd(8, dtype=torch.bfloat16), -rnd(8, dtype=torch.bfloat16, lo=0.5, hi=2.0)]),
    "arith_int": (int_arith_all, [ints(3, 5, lo=-20, hi=20), nonzero(5)]),
    "arith_int8": (int_arith_all, [ints(9, dtype=torch.int8, lo=-20, hi=20), nonzero(9, dtype=torch.int8)]),
    "arith_int64": (int_arith_all, [ints(9, dtype=torch.int64, lo=-20, hi=20), nonzero(9, dtype=torch.int64)]),
    "arith_int_float_promotes": (
        lambda a, b: (torch.maximum(a, b), torch.remainder(a, b), a // b, torch.pow(a, b)),
        [ints(6), rnd(6, lo=0.5, hi=2.0)],
    ),
    "minmax_bool": (
        lambda a, b: (torch.maximum(a, b), torch.minimum(a, b)),
        [ints(6, lo=0, hi=2).bool(), ints(6, lo=0, hi=2).bool()],
    ),
    # clamp with tensor bounds: broadcasting, one-sided, min > max, NaN anywhere
    "clamp_float": (clamps, [with_nan(rnd(3, 4)), with_nan(rnd(4, lo=-2, hi=0)), rnd(3, 1, lo=0, hi=2)]),
    "clamp_int": (clamps, [ints(2, 5), ints(5, lo=-5, hi=0), ints(2, 1, lo=0, hi=5)]),
    # Bool (the OpInfo sweep's clamp_min/clamp_max samples: the kernel refused Bool although its manifest lists it)
    # (one-sided: eager's two-sided clamp refuses Bool)
    "clamp_bool": (
        lambda x, lo, hi: (torch.clamp(x, min=lo), torch.clamp(x, max=hi)),
        [rnd(2, 4) > 0, rnd(4) > 0, rnd(2, 1) > 0],
    ),
    "clamp_half": (
        clamps,
        [
            rnd(6, dtype=torch.float16),
            rnd(6, dtype=torch.float16, lo=-2, hi=0),
            rnd(6, dtype=torch.float16, lo=0, hi=2),
        ],
    ),
    "clamp_int_float_bounds": (clamps, [ints(6), rnd(6, lo=-3, hi=0), rnd(6, lo=0, hi=3)]),
    # 0-dim operands (made in the graph: c[0]), which promote only across categories, and empty tensors
    "zero_dim": (
        lambda a, c: (a < c[0], a + c[0], torch.remainder(a, c[0]), torch.maximum(a, c[0]), a & c[0]),
        [ints(3, 4), torch.tensor([3], dtype=torch.int64)],
    ),
    "zero_dim_float_with_int": (
        lambda a, c: (a < c[0], torch.maximum(a, c[0]), torch.div(a, c[0], rounding_mode="floor")),
        [ints(5), torch.tensor([2.5], dtype=torch.float64)],
    ),
    "empty": (lambda a, b: (a == b, torch.fmod(a, b), torch.maximum(a, b), torch.clamp(a, b, b)), [rnd(0, 3), rnd(3)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_binary_matches_eager(runtime, name):
    fn, inputs = CASES[name]
    want = fn(*inputs)
    check(run(runtime, fn, inputs), want)


def _placeholder(a, b, c=None):
    return (torch.ops.aten.lt.Tensor(a, b), torch.ops.aten.lt.Scalar(a, 1.0), torch.ops.aten.lt.Scalar(a, 2))


REWRITTEN = {
    # the three placeholders become: rsub with alpha, div with a scalar and a rounding mode, masked_fill
    "float": (
        [rnd(3, 4), rnd(4) > 0],
        [
            (torch.ops.aten.masked_fill.Scalar, lambda a: (a[0], a[1], -1.5)),
            (torch.ops.aten.rsub.Scalar, lambda a: (a[0], 2.0, 0.5)),
            (torch.ops.aten.div.Scalar_mode, lambda a: (a[0], -0.75), {"rounding_mode": "floor"}),
        ],
    ),
    "int": (
        [ints(2, 5, lo=-20, hi=20), ints(2, 1, lo=0, hi=2).bool()],
        [
            (torch.ops.aten.masked_fill.Scalar, lambda a: (a[0], a[1], 7)),
            (torch.ops.aten.rsub.Scalar, lambda a: (a[0], 3, 2)),
            (torch.ops.aten.div.Scalar_mode, lambda a: (a[0], -3), {"rounding_mode": "floor"}),
        ],
    ),
    "int_trunc_float_fill": (
        [ints(7, lo=-20, hi=20), ints(7, lo=0, hi=2).bool()],
        [
            (torch.ops.aten.masked_fill.Scalar, lambda a: (a[0], a[1], 2.7)),
            (torch.ops.aten.rsub.Scalar, lambda a: (a[0], 2.5)),
            (torch.ops.aten.div.Scalar_mode, lambda a: (a[0], 4), {"rounding_mode": "trunc"}),
        ],
    ),
    "half": (
        [rnd(6, dtype=torch.float16), rnd(1) > 0],
        [
            (torch.ops.aten.masked_fill.Scalar, lambda a: (a[0], a[1], 0.1)),
            (torch.ops.aten.rsub.Scalar, lambda a: (a[0], 1)),
            (torch.ops.aten.div.Scalar_mode, lambda a: (a[0], 3.0), {"rounding_mode": "trunc"}),
        ],
    ),
    "bool": (
        [ints(5, lo=0, hi=2).bool(), ints(5, lo=0, hi=2).bool()],
        [
            (torch.ops.aten.masked_fill.Scalar, lambda a: (a[0], a[1], True)),
            (torch.ops.aten.bitwise_xor.Scalar, lambda a: (a[0], True)),
            (torch.ops.aten.div.Scalar_mode, lambda a: (a[0], 2), {"rounding_mode": None}),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(REWRITTEN))
def test_rewritten_overloads_match_eager(runtime, name):
    inputs, replacements = REWRITTEN[name]
    want = tuple(
        op(*args(tuple(inputs) if k == 0 else (inputs[0], None)), **(kwargs[0] if kwargs else {}))
        for k, (op, args, *kwargs) in enumerate(replacements)
    )
    got = run(runtime, _placeholder, inputs, replacements)
    check(got, want)


@pytest.mark.parametrize(
    "fn, op",
    [
        (lambda a, b: a // b, "div.out_mode"),
        (lambda a, b: torch.div(a, b, rounding_mode="trunc"), "div.out_mode"),
        (lambda a, b: torch.remainder(a, b), "remainder.Tensor_out"),
        (lambda a, b: torch.fmod(a, b), "fmod.Tensor_out"),
    ],
)
def test_integer_division_by_zero_is_refused(runtime, fn, op):
    a, b = ints(4), torch.tensor([1, 2, 0, 3], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a, b)  # eager raises too
    with pytest.raises(RuntimeError, match=op.split(".")[0]):
        run(runtime, fn, [a, b])
