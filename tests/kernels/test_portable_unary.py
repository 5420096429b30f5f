"""Portable kernels for unary math, parametric activations, creation/fill/alias copies and random numbers, against
eager PyTorch: one-op programs exported with exir and run on the C++ runtime (portable kernels only).

Tolerances as in test_portable_ops.py: float32 1e-5 relative, float64 1e-10, float16/bfloat16 one unit in the last
place (compared through float32 at 1e-2 relative, which one bfloat16 ulp meets), integers and Bool exact.

Several overloads never survive to_edge's core ATen decompositions (glu, logit, ones, zeros, fill, arange with
only `end`, detach, _conj_physical): `_export(keep=...)` drops them from the decomposition table and lists them in
EdgeCompileConfig.allowed_ops, so the real exporter emits them and their own kernels run. Argument errors a valid
export cannot produce are driven through hand-built programs (exir.serialize), as tests/runtime/test_prim_ops.py
does; kernels/test/portable_unary_test.cc covers the rest in C++ (lift_fresh_copy, which export always folds
away, among them).
"""

import math
import re

import pytest
import torch
import torch.nn.functional as F

import exir
from exir.serialize import serialize_pte
from schema import program as S

aten = torch.ops.aten
g = torch.Generator().manual_seed(4321)

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def rnd(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def ints(*shape, dtype=torch.int32, lo=-10, hi=10):
    if dtype == torch.uint8:
        lo = 0
    return torch.randint(lo, hi, tuple(shape), generator=g, dtype=torch.int64).to(dtype)


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _export(fn, inputs, keep=(), monkeypatch=None):
    """The program for `fn` with `keep` (ATen overloads) left undecomposed and allowed."""
    if keep:
        real = torch.export.default_decompositions

        def table():
            t = real()
            for op in keep:
                if op in t:
                    del t[op]
            return t

        monkeypatch.setattr(torch.export, "default_decompositions", table)
    ep = torch.export.export(Fn(fn).eval(), tuple(inputs))
    allowed = [n for op in keep for n in (op.name(), str(op))]
    edge = exir.to_edge(ep, exir.EdgeCompileConfig(allowed_ops=allowed))
    if keep:
        called = {n.target for n in edge.exported_program().graph.nodes if n.op == "call_function"}
        assert set(keep) <= called, f"{set(keep) - called} did not reach the program"
        monkeypatch.undo()
    # Fold nothing: constants would hide the kernel under test behind the exporter.
    return edge.to_executorch(exir.ExecutorchBackendConfig(fold_constants=False, alias_views=False))


def run(runtime, fn, inputs, keep=(), monkeypatch=None):
    prog = _export(fn, inputs, keep, monkeypatch)
    return runtime.load(prog.buffer, kernels="portable").run("forward", list(inputs))


def tol(dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return {"atol": 1e-2, "rtol": 1e-2}
    if dtype == torch.float64:
        return {"atol": 1e-10, "rtol": 1e-10}
    if dtype.is_floating_point:
        return {"atol": 1e-5, "rtol": 1e-5}
    return {"atol": 0, "rtol": 0}


def check(got, want):
    if isinstance(want, torch.Tensor):
        want = [want]
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
        torch.testing.assert_close(a, b, equal_nan=True, **tol(b.dtype))


# --- float-valued unary math -----------------------------------------------------------------------------------

# Each op with an input inside its domain: (op, lo, hi).
FLOAT_OPS = [
    (torch.acos, -0.95, 0.95),
    (torch.asin, -0.95, 0.95),
    (torch.atan, -4, 4),
    (torch.atanh, -0.9, 0.9),
    (torch.acosh, 1.0, 5.0),
    (torch.asinh, -4, 4),
    (torch.cos, -4, 4),
    (torch.sin, -4, 4),
    (torch.tan, -1.4, 1.4),
    (torch.cosh, -3, 3),
    (torch.sinh, -3, 3),
    (torch.erf, -3, 3),
    (torch.expm1, -3, 3),
    (torch.log10, 0.05, 9),
    (torch.log2, 0.05, 9),
    (torch.log1p, -0.9, 9),
    (torch.reciprocal, -4, 4),
]
SPECIAL = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -1.0]


def _float_ops(*xs):
    """Every op on its own input (random values in its domain, then NaN, infinities and signed zeros); sin and
    cos also on a 0-dim tensor (through a select) and an empty one."""
    outs = tuple(op(x) for (op, _, _), x in zip(FLOAT_OPS, xs))
    return outs + (torch.sin(xs[0][0]), torch.cos(xs[0][:0].reshape(0, 3)))


# The memory planner's report compares every algorithm, local search included, whose cost grows quickly with the
# number of tensors: programs here stay at about 20 outputs.
@pytest.mark.parametrize("dtype", FLOATS)
def test_float_ops_match_eager(runtime, dtype):
    xs = [
        torch.cat([rnd(24, dtype=dtype, lo=lo, hi=hi), torch.tensor(SPECIAL, dtype=dtype)]) for _, lo, hi in FLOAT_OPS
    ]
    check(run(runtime, _float_ops, xs), _float_ops(*xs))


@pytest.mark.parametrize("dtype", INTS + [torch.bool])
def test_float_ops_promote_integer_and_bool_inputs(runtime, dtype):
    # sin of an integer tensor is Float, as in PyTorch; out-of-domain values give NaN and infinities alike.
    x = ints(2, 5, dtype=dtype, lo=-3, hi=4) if dtype != torch.bool else ints(2, 5, lo=0, hi=2).bool()
    fn = lambda t: tuple(op(t) for op, _, _ in FLOAT_OPS)
    check(run(runtime, fn, [x]), fn(x))


def test_logit(runtime, monkeypatch):
    x32 = torch.cat([rnd(20, lo=0.0, hi=1.0), torch.tensor([0.0, 1.0, -0.5, 1.5, float("nan")])])
    xs = [x32, x32.half(), ints(6, lo=0, hi=2)]
    fn = lambda a, b, c: (
        torch.logit(a),
        torch.logit(a, 1e-3),
        torch.logit(a, -1.0),
        torch.logit(b, 0.01),
        torch.logit(c, 0.25),
    )
    check(run(runtime, fn, xs, keep=[aten.logit.default], monkeypatch=monkeypatch), fn(*xs))


# --- rounding, sign, predicates, bitwise and logical not -------------------------------------------------------


def _rounding(*ts):
    return tuple(f(t) for t in ts for f in (torch.floor, torch.ceil, torch.round, torch.trunc, torch.sign))


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_rounding_and_sign_keep_dtype(runtime, dtype):
    # Halves (round to even), negative zero, NaN and infinities; integers pass through; a channels-last tensor.
    if dtype.is_floating_point:
        special = torch.tensor(
            [0.5, 1.5, 2.5, -0.5, -2.5, -0.0, float("nan"), float("inf"), -float("inf"), 1e3 + 0.5, 2.0**23 + 1]
        )
        xs = [
            torch.cat([rnd(12, dtype=dtype, lo=-20, hi=20), special.to(dtype)]),
            rnd(2, 3, 4, 5, dtype=dtype, lo=-1e3, hi=1e3).contiguous(memory_format=torch.channels_last),
        ]
    else:
        xs = [ints(3, 5, dtype=dtype, lo=-100, hi=100)]
    check(run(runtime, _rounding, xs), _rounding(*xs))


def test_sign_of_bool(runtime):
    x = torch.tensor([True, False, True])
    check(run(runtime, torch.sign, [x]), torch.sign(x))


def test_isinf_isnan_logical_not_of_floats(runtime):
    xs = [torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.5, -2.0], dtype=d) for d in FLOATS]
    fn = lambda *ts: tuple(f(t) for t in ts for f in (torch.isinf, torch.isnan, torch.logical_not))
    check(run(runtime, fn, xs), fn(*xs))


def test_isinf_isnan_bitwise_and_logical_not_of_integers(runtime):
    xs = [ints(4, 3, dtype=d, lo=-128, hi=127) for d in INTS] + [torch.tensor([True, False, True])]
    zeros = torch.tensor([0, 3, -1, 0], dtype=torch.int32)

    def fn(*ts):
        ns, z = ts[:-1], ts[-1]
        return (
            tuple(torch.isnan(t) for t in ns[:3])
            + tuple(torch.isinf(t) for t in ns[3:])
            + tuple(torch.logical_not(t) for t in ns)
            + tuple(torch.bitwise_not(t) for t in ns)
            +
            # logical_not into a Float out (its dtype is out's), and of a Float
            (torch.logical_not(z).float() + torch.logical_not(z.float()),)
        )

    check(run(runtime, fn, xs + [zeros]), fn(*xs, zeros))


def test_conj_physical_is_a_copy_for_real_dtypes(runtime, monkeypatch):
    xs = [rnd(3, 4), rnd(3, 4).to(torch.int16), rnd(3).gt(0)]
    fn = lambda *ts: tuple(aten._conj_physical(t) for t in ts)
    check(run(runtime, fn, xs, keep=[aten._conj_physical.default], monkeypatch=monkeypatch), xs)


# --- parametric activations ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_elu_leaky_relu_glu(runtime, monkeypatch, dtype):
    x = torch.cat([rnd(30, dtype=dtype, lo=-4, hi=4), torch.tensor([0.0, -0.0, float("nan"), -1e-6], dtype=dtype)])
    gate = rnd(2, 6, 4, dtype=dtype, lo=-4, hi=4)

    def fn(t, u):
        return (
            F.elu(t),
            F.elu(t, alpha=0.5),
            aten.elu(t, 1.5, 2.0, 0.5),
            F.selu(t),
            F.leaky_relu(t),
            F.leaky_relu(t, 0.2),
        ) + tuple(F.glu(u, d) for d in (-1, 1, 0, -2))

    check(run(runtime, fn, [x, gate], keep=[aten.glu.default], monkeypatch=monkeypatch), fn(x, gate))


# --- creation, fill, aliases -----------------------------------------------------------------------------------

ARANGE_DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int8,
    torch.uint8,
]


def test_arange(runtime, monkeypatch):
    # Both overloads in every dtype; ceil((end - start) / step) with 0.1 steps, negative and float steps, empty.
    def fn(t):
        per_dtype = tuple(
            r
            for d in ARANGE_DTYPES
            for r in (torch.arange(1, 9, 2, dtype=d), torch.arange(7, 0, -3, dtype=d), aten.arange.default(5, dtype=d))
        )
        return per_dtype + (
            torch.arange(0.0, 1.0, 0.1),
            torch.arange(-1.0, 1.0001, 0.25, dtype=torch.float64),
            torch.arange(2.5, -1.0, -0.7),
            torch.arange(0, 0),
            aten.arange.default(4.5),
            t,
        )

    x = torch.zeros(1)
    check(run(runtime, fn, [x], keep=[aten.arange.default], monkeypatch=monkeypatch), fn(x))


FILL_DTYPES = [torch.float32, torch.float16, torch.int8, torch.int64, torch.bool]


@pytest.mark.parametrize("dtype", FILL_DTYPES)
def test_full_like_scalar_tensor_empty(runtime, dtype):
    x = rnd(2, 3).to(dtype)

    def fn(t):
        return (
            torch.full_like(t, 1),
            torch.zeros_like(t),
            torch.ones_like(t),
            torch.full_like(t, True),
            torch.scalar_tensor(1, dtype=dtype),
            torch.scalar_tensor(0.0, dtype=dtype),
            torch.empty(3, 0, 2),
            torch.empty(4, dtype=dtype),
        )

    got, want = run(runtime, fn, [x]), fn(x)
    # empty's contents are unspecified; its shape and dtype are not.
    check(got[:-2], want[:-2])
    assert [(t.shape, t.dtype) for t in got[-2:]] == [(t.shape, t.dtype) for t in want[-2:]]


def test_fill_ones_zeros_and_copies(runtime, monkeypatch):
    x, v, i, b = rnd(3, 4), torch.tensor([-1.75]), ints(5, dtype=torch.int16), torch.tensor([True])

    def fn(t, v, i, b):
        fills = (
            aten.fill.Scalar(t, 2.5),
            aten.fill.Tensor(t, v[0]),
            aten.fill.Scalar(i, 7),
            aten.fill.Tensor(i, v[0]),
            aten.fill.Tensor(t, b[0]),
        )
        made = tuple(
            r
            for d in (torch.float32, torch.bfloat16, torch.int32, torch.bool)
            for r in (torch.ones(2, 3, dtype=d), torch.zeros(4, dtype=d))
        )
        # A Bool full: the attention masks of GPT-2's and Llama's ExecuTorch programs start as one.
        masks = (torch.full((2, 2), True), torch.full((3,), False, dtype=torch.bool))
        return fills + made + masks + (aten.alias(t), aten.detach(i))

    keep = [aten.fill.Scalar, aten.fill.Tensor, aten.ones.default, aten.zeros.default, aten.detach.default]
    check(run(runtime, fn, [x, v, i, b], keep=keep, monkeypatch=monkeypatch), fn(x, v, i, b))


# --- random ----------------------------------------------------------------------------------------------------


def test_rand_and_randn_distributions(runtime):
    fn = lambda t: tuple(
        r
        for d in FLOATS
        for r in (torch.rand(64, 64, dtype=d), torch.rand(64, 64, dtype=d), torch.randn(8192, dtype=d))
    )
    got = run(runtime, fn, [torch.zeros(1)])
    for k, dtype in enumerate(FLOATS):
        a, b, n = got[3 * k : 3 * k + 3]
        assert a.shape == (64, 64) and a.dtype == dtype and n.shape == (8192,) and n.dtype == dtype
        v = a.double().flatten()
        assert v.min() >= 0 and v.max() < 1
        assert abs(v.mean() - 0.5) < 0.02 and abs(v.std() - math.sqrt(1 / 12)) < 0.02
        # Ten bins of the 4096 values, each expected to hold 409.6 (the binomial's sigma is 19).
        assert torch.histc(v.float(), bins=10, min=0, max=1).sub(409.6).abs().max() < 80
        assert not torch.equal(a, b), "two calls must draw different numbers"
        w = n.double()
        assert torch.isfinite(w).all() and abs(w.mean()) < 0.05 and abs(w.std() - 1) < 0.05
        # The normal's mass within one and two sigma: 68.3% and 95.4%.
        assert abs((w.abs() < 1).double().mean() - 0.6827) < 0.02
        assert abs((w.abs() < 2).double().mean() - 0.9545) < 0.01


def test_native_dropout(runtime):
    xs = [rnd(64, 64, dtype=d, lo=0.5, hi=1.5) for d in (torch.float32, torch.float16, torch.float64)]
    edge = torch.cat([rnd(50), torch.tensor([float("nan"), -0.0])])

    def fn(*ts):
        train = tuple(r for t in ts[:3] for r in aten.native_dropout(t, 0.25, True))
        e = ts[3]
        return (
            train
            + aten.native_dropout(e, 0.5, False)
            + aten.native_dropout(e, 0.0, True)
            + aten.native_dropout(e, 1.0, True)
        )

    got = run(runtime, fn, xs + [edge])
    for k, x in enumerate(xs):
        out, mask = got[2 * k], got[2 * k + 1]
        assert mask.dtype == torch.bool and mask.shape == x.shape and out.dtype == x.dtype
        assert abs(mask.double().mean() - 0.75) < 0.02
        scaled = (x.double() if x.dtype == torch.float64 else x.float()) * (1 / 0.75)
        torch.testing.assert_close(
            out, torch.where(mask, scaled.to(x.dtype), torch.zeros((), dtype=x.dtype)), **tol(x.dtype)
        )
    want = fn(*xs, edge)[6:]
    got = got[6:]
    for i in (0, 1, 2, 3):  # eval and p = 0: the identity, bit for bit, with an all-true mask
        torch.testing.assert_close(got[i], want[i], rtol=0, atol=0, equal_nan=True)
    assert not got[5].any() and torch.equal(got[4].isnan(), edge.isnan())  # p = 1: all dropped, NaN stays NaN


# --- errors a valid export cannot produce: hand-built programs -------------------------------------------------


def _tensor(dtype, sizes, offset):
    return S.Tensor(
        scalar_type=dtype,
        sizes=sizes,
        dim_order=list(range(len(sizes))),
        allocation_info=S.AllocationDetails.from_offset(1, offset),
    )


def _program(op, overload, values, args):
    """One instruction calling aten::op.overload on `values` (the last one is the output)."""
    plan = S.ExecutionPlan(
        name="forward",
        values=[S.EValue(v) for v in values],
        inputs=[],
        outputs=[len(values) - 1],
        chains=[S.Chain(instructions=[S.Instruction(S.KernelCall(0, args))])],
        operators=[S.Operator(f"aten::{op}", overload)],
        non_const_buffer_sizes=[0, 256],
    )
    return serialize_pte(S.Program(execution_plan=[plan]))


@pytest.mark.parametrize(
    "start,end,step,out_len,message",
    [
        (0, 10, 1, 4, r"out has 4 elements, the range 0 to 10 by 1 has 10"),
        (0, 10, 0, 4, r"step must be nonzero"),
        (0, 10, -1, 4, r"inconsistent with step sign"),
        (0, float("inf"), 1, 4, r"unsupported range"),
    ],
)
def test_arange_refusals_name_the_op(runtime, start, end, step, out_len, message, capfd, monkeypatch):
    monkeypatch.setenv("EMBER_LOG", "1")
    scalar = lambda v: S.Double(v) if isinstance(v, float) else S.Int(v)
    values = [scalar(start), scalar(end), scalar(step), _tensor(S.ScalarType.FLOAT, [out_len], 0)]
    prog = _program("arange", "start_out", values, [0, 1, 2, 3, 3])
    with pytest.raises(RuntimeError, match=r"aten::arange.start_out\) failed"):
        runtime.load(prog, kernels="portable").run("forward", [])
    assert re.search(message, capfd.readouterr().err)


def test_glu_odd_dimension_and_fill_with_a_vector_are_refused(runtime, capfd, monkeypatch):
    monkeypatch.setenv("EMBER_LOG", "1")
    odd = _program(
        "glu",
        "out",
        [_tensor(S.ScalarType.FLOAT, [2, 3], 0), S.Int(-1), _tensor(S.ScalarType.FLOAT, [2, 1], 64)],
        [0, 1, 2, 2],
    )
    with pytest.raises(RuntimeError, match=r"aten::glu.out\) failed"):
        runtime.load(odd, kernels="portable").run("forward", [])
    assert "dimension 1 has size 3; halving it needs an even size" in capfd.readouterr().err
    vec = _program(
        "fill",
        "Tensor_out",
        [
            _tensor(S.ScalarType.FLOAT, [3], 0),
            _tensor(S.ScalarType.FLOAT, [1], 64),
            _tensor(S.ScalarType.FLOAT, [3], 128),
        ],
        [0, 1, 2, 2],
    )
    with pytest.raises(RuntimeError, match=r"aten::fill.Tensor_out\) failed"):
        runtime.load(vec, kernels="portable").run("forward", [])
    assert "value must be a 0-dim tensor, it has 1 dimensions" in capfd.readouterr().err


def test_overflowing_fill_value_and_integer_out_of_a_float_op_are_refused(runtime, capfd, monkeypatch):
    monkeypatch.setenv("EMBER_LOG", "1")
    ovf = _program("scalar_tensor", "out", [S.Int(300), _tensor(S.ScalarType.CHAR, [], 0)], [0, 1, 1])
    with pytest.raises(RuntimeError, match=r"aten::scalar_tensor.out\) failed"):
        runtime.load(ovf, kernels="portable").run("forward", [])
    assert "value 300 cannot be converted to Char without overflow" in capfd.readouterr().err
    sin = _program("sin", "out", [_tensor(S.ScalarType.FLOAT, [4], 0), _tensor(S.ScalarType.INT, [4], 64)], [0, 1, 1])
    with pytest.raises(RuntimeError, match=r"aten::sin.out\) failed"):
        runtime.load(sin, kernels="portable").run("forward", [])
    assert "out is Int; the result is floating point" in capfd.readouterr().err
