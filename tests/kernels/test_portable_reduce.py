"""The reductions, selection, distance and normalisation kernels against eager PyTorch: one-op programs exported
with exir and run on the C++ runtime (portable kernels), at test_portable_ops.py's tolerances.

Overloads exir does not reach from a plain export are reached with EdgeCompileConfig(allowed_ops=...) (max and min
without a dim, var_mean) or are tested in C++ (kernels/test/reduce_kernels_test.cc: var.out,
_native_batch_norm_legit.out with running stats, topk without scratch memory, and the errors for max/min/argmax over
an empty dim, which eager refuses at export).
"""

import math

import pytest
import torch
import torch.nn.functional as F

import exir
from devtools.inspect import summarize
from exir.serialize import deserialize_pte

g = torch.Generator().manual_seed(4321)

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def rnd(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    return (torch.rand(*shape, generator=g) * (hi - lo) + lo).to(dtype)


def ints(*shape, dtype=torch.int32, lo=-5, hi=5):
    if dtype == torch.uint8:
        lo = 0
    return torch.randint(lo, hi, shape, generator=g, dtype=torch.int64).to(dtype)


def distinct(*shape, dtype=torch.float32):
    """Values without ties (topk and arg* tie order is not what these tests check)."""
    n = math.prod(shape)
    return (torch.randperm(n, generator=g).reshape(shape) - n // 3).to(dtype)


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


NAN = float("nan")
# 0-d cases take a 1-element input and reshape it in the program: the bindings cannot pass a 0-d input yet.
CASES = {
    # any: all, one dim, dims (None, a list, the empty list that reduces nothing); bool, uint8 (stays uint8), floats
    "any_all_bool": (torch.any, [rnd(3, 4) > 1.5]),
    "any_all_float_nan": (torch.any, [torch.tensor([0.0, NAN, 0.0])]),
    "any_all_empty": (torch.any, [torch.zeros(0, 3)]),
    "any_dim_int": (lambda x: torch.any(x, 1), [ints(4, 5, hi=2, lo=0)]),
    "any_dim_keepdim_uint8": (lambda x: torch.any(x, -1, keepdim=True), [ints(3, 4, dtype=torch.uint8, hi=2)]),
    "any_dims": (lambda x: torch.any(x, (0, 2)), [ints(2, 3, 4, hi=2, lo=0).to(torch.float32)]),
    "any_dims_keepdim": (lambda x: torch.any(x, (1,), keepdim=True), [rnd(2, 3) > 0]),
    "any_dims_empty_list": (lambda x: torch.ops.aten.any.dims(x, []), [rnd(2, 3) > 0]),
    "any_0d": (lambda x: torch.any(x.reshape(()), 0), [torch.tensor([2.0])]),
    # amin (NaN propagates), argmax/argmin (flattened without a dim; first NaN wins), max/min with a dim
    "amin_dims": (lambda x: torch.amin(x, (0, 2)), [rnd(3, 4, 5)]),
    "amin_all_keepdim_int": (lambda x: torch.amin(x, keepdim=True), [ints(3, 4, dtype=torch.int16)]),
    "amin_nan": (lambda x: torch.amin(x, 1), [torch.tensor([[1.0, NAN, -3.0], [2.0, 0.5, 4.0]])]),
    "amin_bool": (lambda x: torch.amin(x, 0), [rnd(3, 4) > 0]),
    "amax_middle_dim": (lambda x: torch.amax(x, 1, keepdim=True), [rnd(2, 3, 4)]),
    "amax_empty_rows": (lambda x: torch.amax(x, 1), [torch.zeros(0, 3)]),
    "argmax_all": (lambda x: torch.argmax(x), [distinct(3, 4)]),
    "argmax_dim": (lambda x: torch.argmax(x, 1), [distinct(3, 4, 2)]),
    "argmax_keepdim_all": (lambda x: torch.argmax(x, keepdim=True), [distinct(2, 3)]),
    "argmax_nan": (lambda x: torch.argmax(x, -1), [torch.tensor([[1.0, NAN, 3.0, NAN], [5.0, 1.0, 7.0, 7.5]])]),
    "argmin_dim_int": (lambda x: torch.argmin(x, 0), [distinct(4, 3, dtype=torch.int64)]),
    "argmin_half": (lambda x: torch.argmin(x, 1), [distinct(3, 5, dtype=torch.float16)]),
    "argmax_ties_first": (lambda x: torch.argmax(x, 1), [torch.tensor([[2.0, 5.0, 5.0, 1.0]])]),
    "max_dim": (lambda x: torch.max(x, 1), [distinct(3, 4)]),
    "max_dim_keepdim_bf16": (lambda x: torch.max(x, -1, keepdim=True), [distinct(2, 3, 4, dtype=torch.bfloat16)]),
    "max_dim_nan": (lambda x: torch.max(x, 0), [torch.tensor([[1.0, 2.0], [NAN, 0.0], [NAN, 3.0]])]),
    "max_dim_bool": (lambda x: torch.max(x, 1), [torch.tensor([[False, True, True], [False, False, False]])]),
    "min_dim_int8": (lambda x: torch.min(x, 0), [distinct(4, 3, dtype=torch.int8)]),
    "min_dim_double": (lambda x: torch.min(x, 2), [distinct(2, 2, 5, dtype=torch.float64)]),
    "min_dim_0d": (lambda x: torch.min(x.reshape(()), 0), [torch.tensor([3.0])]),
    "max_unary": (torch.max, [rnd(3, 4)]),
    "max_unary_nan": (torch.max, [torch.tensor([1.0, NAN, 2.0])]),
    "min_unary_int": (torch.min, [ints(5, 2, dtype=torch.int64)]),
    "min_unary_half": (torch.min, [rnd(7, dtype=torch.float16)]),
    # mean without dims (mean.dtype_out), with and without a dtype
    "mean_all": (torch.mean, [rnd(3, 4)]),
    "mean_all_half": (torch.mean, [rnd(4, 5, dtype=torch.float16)]),
    "mean_all_to_double": (lambda x: torch.mean(x, dtype=torch.float64), [rnd(3, 4)]),
    "mean_all_empty": (torch.mean, [torch.zeros(0)]),
    # prod: integers (and Bool) into int64, floats in their own dtype, a dtype argument, an empty product
    "prod_all": (torch.prod, [rnd(6, lo=0.5, hi=1.5)]),
    "prod_all_int": (torch.prod, [ints(2, 3, dtype=torch.int32)]),
    "prod_all_bool": (torch.prod, [rnd(4) > -1.9]),
    "prod_all_empty": (torch.prod, [torch.zeros(0, 2)]),
    "prod_all_dtype": (lambda x: torch.prod(x, dtype=torch.float64), [rnd(5)]),
    "prod_dim": (lambda x: torch.prod(x, 1), [rnd(3, 4, 2, lo=0.5, hi=1.5)]),
    "prod_dim_keepdim_uint8": (lambda x: torch.prod(x, 0, keepdim=True), [ints(3, 4, dtype=torch.uint8, hi=4)]),
    "prod_dim_half": (lambda x: torch.prod(x, -1), [rnd(3, 4, dtype=torch.float16, lo=0.5, hi=1.5)]),
    "prod_dim_int64_wraps": (lambda x: torch.prod(x, 0), [torch.full((4, 2), 2**20, dtype=torch.int64)]),
    # var: dims, correction (default 1, 0, 2, more than N), keepdim, every float dtype, N <= correction
    "var_dim": (lambda x: torch.var(x, 1), [rnd(3, 6)]),
    "var_dims_keepdim": (lambda x: torch.var(x, (0, 2), keepdim=True), [rnd(3, 4, 5)]),
    "var_all": (lambda x: torch.var(x), [rnd(4, 5)]),
    "var_biased": (lambda x: torch.var(x, 0, unbiased=False), [rnd(5, 3)]),
    "var_correction_2": (lambda x: torch.var(x, -1, correction=2), [rnd(2, 6, dtype=torch.float64)]),
    "var_half": (lambda x: torch.var(x, 1), [rnd(3, 8, dtype=torch.float16)]),
    "var_bf16": (lambda x: torch.var(x, 1), [rnd(3, 8, dtype=torch.bfloat16)]),
    "var_one_element": (lambda x: torch.var(x, 1), [rnd(3, 1)]),
    "var_correction_over_n": (lambda x: torch.var(x, 1, correction=4), [rnd(2, 3)]),
    "var_mean": (lambda x: torch.var_mean(x, 1), [rnd(3, 5)]),
    "var_mean_all_keepdim": (
        lambda x: torch.var_mean(x, None, correction=0, keepdim=True),
        [rnd(2, 3, dtype=torch.float64)],
    ),
    # cumsum: integers (Bool too) into int64, a dtype argument, every dim, 0-d and empty
    "cumsum": (lambda x: torch.cumsum(x, 1), [rnd(3, 5)]),
    "cumsum_dim0": (lambda x: torch.cumsum(x, 0), [rnd(4, 2, 3)]),
    "cumsum_int": (lambda x: torch.cumsum(x, -1), [ints(3, 6, dtype=torch.int16)]),
    "cumsum_bool": (lambda x: torch.cumsum(x, 0), [rnd(6) > 0]),
    "cumsum_dtype": (lambda x: torch.cumsum(x, 1, dtype=torch.float64), [ints(2, 5)]),
    "cumsum_half": (lambda x: torch.cumsum(x, 0), [rnd(9, dtype=torch.float16)]),
    "cumsum_0d": (lambda x: torch.cumsum(x.reshape(()), 0), [torch.tensor([2.5])]),
    "cumsum_empty": (lambda x: torch.cumsum(x, 0), [torch.zeros(0, 3)]),
    "cumsum_nan": (lambda x: torch.cumsum(x, 0), [torch.tensor([1.0, NAN, 2.0])]),
    # topk: largest/smallest, every dim, k = 0 and k = n, integer dtypes, NaN ranked above every number
    "topk": (lambda x: torch.topk(x, 3), [distinct(4, 7)]),
    "topk_smallest_dim0": (lambda x: torch.topk(x, 2, dim=0, largest=False), [distinct(5, 3)]),
    "topk_middle_dim": (lambda x: torch.topk(x, 2, dim=1), [distinct(2, 4, 3, dtype=torch.float64)]),
    "topk_all": (lambda x: torch.topk(x, 6), [distinct(2, 6, dtype=torch.int32)]),
    "topk_k0": (lambda x: torch.topk(x, 0), [distinct(2, 6)]),
    "topk_uint8": (lambda x: torch.topk(x, 2), [torch.randperm(200, generator=g)[:12].reshape(3, 4).to(torch.uint8)]),
    "topk_half": (lambda x: torch.topk(x, 3, largest=False), [distinct(3, 9, dtype=torch.float16)]),
    "topk_nan_largest": (lambda x: torch.topk(x, 2), [torch.tensor([1.0, NAN, 3.0, 2.0])]),
    "topk_nan_smallest": (lambda x: torch.topk(x, 3, largest=False), [torch.tensor([1.0, NAN, 3.0, 2.0])]),
    "topk_0d": (lambda x: torch.topk(x.reshape(()), 1), [torch.tensor([4.0])]),
    "topk_empty_rows": (lambda x: torch.topk(x, 2), [torch.zeros(0, 4)]),
    # distances: p = 0, 1, 2, inf, general; cdist's batch dims broadcast
    "cdist_p2": (lambda a, b: torch.cdist(a, b), [rnd(4, 3), rnd(5, 3)]),
    "cdist_p1": (lambda a, b: torch.cdist(a, b, p=1.0), [rnd(4, 3), rnd(2, 3)]),
    "cdist_p0": (lambda a, b: torch.cdist(a, b, p=0.0), [ints(4, 3, hi=2).float(), ints(3, 3, hi=2).float()]),
    "cdist_pinf": (lambda a, b: torch.cdist(a, b, p=math.inf), [rnd(3, 4), rnd(5, 4)]),
    "cdist_p3_double": (
        lambda a, b: torch.cdist(a, b, p=3.0),
        [rnd(3, 4, dtype=torch.float64), rnd(2, 4, dtype=torch.float64)],
    ),
    "cdist_p_half": (lambda a, b: torch.cdist(a, b, p=0.5), [rnd(3, 2, lo=0.1), rnd(4, 2, lo=0.1)]),
    "cdist_batch_broadcast": (lambda a, b: torch.cdist(a, b), [rnd(2, 1, 3, 4), rnd(3, 5, 4)]),
    "cdist_empty": (lambda a, b: torch.cdist(a, b), [rnd(0, 3), rnd(2, 3)]),
    "pdist_p2": (lambda x: F.pdist(x), [rnd(5, 3)]),
    "pdist_p1": (lambda x: F.pdist(x, p=1.0), [rnd(4, 6)]),
    "pdist_p0": (lambda x: F.pdist(x, p=0.0), [ints(4, 3, hi=2).float()]),
    "pdist_pinf_double": (lambda x: F.pdist(x, p=math.inf), [rnd(4, 3, dtype=torch.float64)]),
    "pdist_p1_5": (lambda x: F.pdist(x, p=1.5), [rnd(5, 2)]),
    "pdist_one_row": (lambda x: F.pdist(x), [rnd(1, 3)]),
    # group norm: with and without affine, every float dtype, 3-d to 5-d inputs
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), [rnd(2, 4, 3, 3), rnd(4), rnd(4)]),
    "group_norm_no_affine": (lambda x: F.group_norm(x, 3), [rnd(2, 6, 5)]),
    "group_norm_per_channel": (lambda x: F.group_norm(x, 4, eps=1e-3), [rnd(1, 4, 2, 2, 2)]),
    "group_norm_double": (lambda x: F.group_norm(x, 1), [rnd(2, 3, 4, dtype=torch.float64)]),
    "group_norm_half": (lambda x: F.group_norm(x, 2), [rnd(2, 4, 6, dtype=torch.float16)]),
    "group_norm_bf16": (lambda x: F.group_norm(x, 2), [rnd(2, 4, 6, dtype=torch.bfloat16)]),
    # training batch norm without running stats (_native_batch_norm_legit.no_stats_out)
    "batch_norm_train": (
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        [rnd(4, 3, 5), rnd(3), rnd(3)],
    ),
    "batch_norm_train_2d": (lambda x: F.batch_norm(x, None, None, training=True, eps=1e-3), [rnd(6, 4)]),
    "batch_norm_train_double": (
        lambda x: F.batch_norm(x, None, None, training=True),
        [rnd(2, 3, 2, 2, dtype=torch.float64)],
    ),
}

# Ops outside core ATen that ExecuTorch's portable library still has kernels for.
ALLOWED = {
    "max_unary": ["aten::max"],
    "max_unary_nan": ["aten::max"],
    "min_unary_int": ["aten::min"],
    "min_unary_half": ["aten::min"],
    "var_mean": ["aten::var_mean.correction"],
    "var_mean_all_keepdim": ["aten::var_mean.correction"],
}

# The kernel each case must reach (checked in the lowered program, so a decomposition cannot hide it).
KERNEL = {
    "any_all": "any.all_out",
    "any_dim": "any.out",
    "any_dims": "any.dims_out",
    "any_0d": "any.out",
    "amin": "amin.out",
    "amax": "amax.out",
    "argmax": "argmax.out",
    "argmin": "argmin.out",
    "max_dim": "max.dim_max",
    "min_dim": "min.dim_min",
    "max_unary": "max.unary_out",
    "min_unary": "min.unary_out",
    "mean_all": "mean.dtype_out",
    "prod_all": "prod.out",
    "prod_dim": "prod.int_out",
    "var_mean": "var_mean.correction_out",
    "var": "var.correction_out",
    "cumsum": "cumsum.out",
    "topk": "topk.values",
    "cdist": "_cdist_forward.out",
    "pdist": "_pdist_forward.out",
    "group_norm": "native_group_norm.out",
    "batch_norm_train": "_native_batch_norm_legit.no_stats_out",
}


def _tolerance(dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return {"atol": 1e-2, "rtol": 1e-2}
    if dtype == torch.float64:
        return {"atol": 1e-10, "rtol": 1e-10}
    if dtype.is_floating_point:
        return {"atol": 1e-4, "rtol": 1e-4}
    return {"atol": 0, "rtol": 0}


def _export(fn, inputs):
    edge = exir.to_edge(torch.export.export(Fn(fn).eval(), tuple(inputs)))
    return edge.to_executorch(exir.ExecutorchBackendConfig(fold_constants=False, alias_views=False))


def _kernel_of(name):
    for prefix in sorted(KERNEL, key=len, reverse=True):
        if name.startswith(prefix):
            return KERNEL[prefix]
    return None


def _groups():
    """The cases by the kernel they reach: one program per kernel keeps the file fast (an export costs seconds)."""
    groups = {}
    for name in sorted(CASES):
        kernel = _kernel_of(name)
        assert kernel is not None, f"case {name} names no kernel in KERNEL"
        groups.setdefault(kernel, []).append(name)
    return groups


GROUPS = _groups()


class Group(torch.nn.Module):
    """Every case of a group in one method: inputs concatenated, outputs flattened."""

    def __init__(self, names):
        super().__init__()
        self.names = names

    def forward(self, *args):
        outs, k = [], 0
        for name in self.names:
            fn, inputs = CASES[name]
            r = fn(*args[k : k + len(inputs)])
            k += len(inputs)
            outs.extend(r if isinstance(r, tuple) else [r])
        return tuple(outs)


@pytest.mark.parametrize("kernel", sorted(GROUPS))
def test_op_matches_eager(runtime, kernel):
    names = GROUPS[kernel]
    inputs = [t for name in names for t in CASES[name][1]]
    allowed = sorted({op for name in names for op in ALLOWED.get(name, ())})
    module = Group(names).eval()
    edge = exir.to_edge(
        torch.export.export(module, tuple(inputs)), compile_config=exir.EdgeCompileConfig(allowed_ops=allowed)
    )
    prog = edge.to_executorch(exir.ExecutorchBackendConfig(fold_constants=False, alias_views=False))
    ops = summarize(deserialize_pte(prog.buffer))["methods"][0]["operators"]
    assert f"aten::{kernel}" in ops or kernel in ops, f"expected {kernel} among {sorted(ops)}"
    got = runtime.load(prog.buffer, kernels="portable").run("forward", inputs)
    k = 0
    for name in names:
        fn, case_inputs = CASES[name]
        want = fn(*case_inputs)
        for wv in want if isinstance(want, tuple) else [want]:
            gv = got[k]
            k += 1
            assert gv.dtype == wv.dtype and gv.shape == wv.shape, (name, gv.dtype, wv.dtype, gv.shape, wv.shape)
            torch.testing.assert_close(gv, wv, equal_nan=True, **_tolerance(wv.dtype), msg=lambda m: f"{name}: {m}")
    assert k == len(got)


@pytest.mark.parametrize("dtype", INTS + FLOATS + [torch.bool])
def test_extremes_every_dtype(runtime, dtype):
    """amin, max.dim and argmax (no Bool, as ATen) across every dtype they register, in one program."""
    x = distinct(3, 5, dtype=torch.int64)
    x = (x > 0) if dtype == torch.bool else (x.abs() if dtype == torch.uint8 else x).to(dtype)
    if dtype == torch.bool:
        fn = lambda t: (torch.amin(t, 1), *torch.max(t, 0))  # noqa: E731
    else:
        fn = lambda t: (torch.amin(t, 1), *torch.max(t, 0), torch.argmax(t, 1))  # noqa: E731
    wants = fn(x)
    got = runtime.load(_export(fn, [x]).buffer, kernels="portable").run("forward", [x])
    assert len(got) == len(wants)
    for gv, wv in zip(got, wants):
        assert gv.dtype == wv.dtype and torch.equal(gv, wv)
