"""Every portable kernel against eager PyTorch: one-op programs, exported and run on the C++ runtime.

Tolerances per dtype: float32 1e-5 (relative to the output's scale) for elementwise and 1e-4 for reductions and
products (different summation order); float64 1e-10; float16/bfloat16 one unit in the last place of the
output (they compute in float and round once, as eager does on CPU, so most results are bit-exact); integer
and bool results exact.
"""

import pytest
import torch
import torch.nn.functional as F

import exir

g = torch.Generator().manual_seed(1234)


def rnd(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    x = torch.rand(*shape, generator=g) * (hi - lo) + lo
    return x.to(dtype)


def ints(*shape, dtype=torch.int32, hi=10):
    return torch.randint(-hi, hi, shape, generator=g, dtype=torch.int64).to(dtype)


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


CASES = {
    # binary, with broadcasting, alpha, scalars and mixed dtypes
    "add": (lambda a, b: a + b, [rnd(2, 3, 4), rnd(3, 1)]),
    "add_alpha": (lambda a, b: torch.add(a, b, alpha=2.5), [rnd(4, 4), rnd(4, 4)]),
    "add_scalar": (lambda a: a + 1.5, [rnd(5)]),
    "add_int": (lambda a, b: a + b, [ints(3, 4), ints(4)]),
    "add_int_float_promotes": (lambda a, b: a + b, [ints(3, 4), rnd(3, 4)]),
    "add_half": (lambda a, b: a + b, [rnd(8, dtype=torch.float16), rnd(8, dtype=torch.float16)]),
    "add_bfloat16": (lambda a, b: a + b, [rnd(8, dtype=torch.bfloat16), rnd(8, dtype=torch.bfloat16)]),
    "add_double": (lambda a, b: a + b, [rnd(6, dtype=torch.float64), rnd(6, dtype=torch.float64)]),
    "sub": (lambda a, b: a - b, [rnd(2, 3), rnd(2, 1)]),
    "sub_scalar": (lambda a: a - 3, [rnd(4)]),
    "mul": (lambda a, b: a * b, [rnd(2, 3), rnd(3)]),
    "mul_scalar": (lambda a: a * 0.5, [rnd(4, 2)]),
    "mul_int": (lambda a, b: a * b, [ints(5), ints(5)]),
    "div": (lambda a, b: a / b, [rnd(3, 3), rnd(3, 3, lo=0.5, hi=2.0)]),
    "div_scalar": (lambda a: a / 4.0, [rnd(7)]),
    # activations and unary math
    "relu": (F.relu, [rnd(3, 5)]),
    "relu_int": (F.relu, [ints(10)]),
    "relu6": (F.relu6, [rnd(20, lo=-8, hi=8)]),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 0.5), [rnd(10)]),
    "sigmoid": (torch.sigmoid, [rnd(10)]),
    "tanh": (torch.tanh, [rnd(10)]),
    "gelu": (F.gelu, [rnd(10)]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [rnd(10)]),
    "silu": (F.silu, [rnd(10)]),
    "hardswish": (F.hardswish, [rnd(20, lo=-5, hi=5)]),
    "exp": (torch.exp, [rnd(10)]),
    "log": (torch.log, [rnd(10, lo=0.1, hi=5)]),
    "sqrt": (torch.sqrt, [rnd(10, lo=0.0, hi=5)]),
    "rsqrt": (torch.rsqrt, [rnd(10, lo=0.1, hi=5)]),
    "neg": (torch.neg, [rnd(10)]),
    "abs": (torch.abs, [rnd(10)]),
    "pow": (lambda x: torch.pow(x, 3.0), [rnd(10)]),
    "clamp": (lambda x: torch.clamp(x, -0.3, 0.7), [rnd(12)]),
    "clamp_min": (lambda x: torch.clamp(x, min=0.1), [rnd(12)]),
    # products
    "linear": (Fn(lambda x: x), None),  # replaced below by a real nn.Linear
    "mm": (torch.mm, [rnd(3, 5), rnd(5, 4)]),
    "bmm": (torch.bmm, [rnd(2, 3, 5), rnd(2, 5, 4)]),
    "addmm": (lambda b, x, y: torch.addmm(b, x, y, beta=0.5, alpha=2.0), [rnd(4), rnd(3, 5), rnd(5, 4)]),
    # convolution and pooling
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), [rnd(1, 3, 9, 9), rnd(4, 3, 3, 3), rnd(4)]),
    "conv2d_depthwise_dilated": (
        lambda x, w: F.conv2d(x, w, None, padding=2, dilation=2, groups=4),
        [rnd(2, 4, 8, 8), rnd(4, 1, 3, 3)],
    ),
    "conv2d_grouped": (lambda x, w: F.conv2d(x, w, groups=2), [rnd(1, 4, 5, 5), rnd(6, 2, 1, 1)]),
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), [rnd(1, 3, 10), rnd(4, 3, 3), rnd(4)]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 3, 2, 1), [rnd(1, 2, 9, 9)]),
    "max_pool2d_ceil": (lambda x: F.max_pool2d(x, 2, 2, ceil_mode=True), [rnd(1, 2, 7, 7)]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, 2, 1), [rnd(1, 2, 8, 8)]),
    "avg_pool2d_no_pad_count": (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [rnd(1, 2, 8, 8)]),
    "adaptive_avg_pool": (lambda x: F.adaptive_avg_pool2d(x, 1), [rnd(1, 3, 5, 5)]),
    # normalization, softmax, reductions
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (6,), w, b), [rnd(2, 3, 6), rnd(6), rnd(6)]),
    "batch_norm": (
        lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False),
        [rnd(2, 3, 4, 4), rnd(3), rnd(3, lo=0.5, hi=1.5), rnd(3), rnd(3)],
    ),
    "softmax": (lambda x: torch.softmax(x, 1), [rnd(2, 5, 3)]),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), [rnd(2, 5)]),
    "mean": (lambda x: x.mean(dim=(0, 2), keepdim=True), [rnd(3, 4, 5)]),
    "sum": (lambda x: x.sum(dim=1), [rnd(3, 4, 5)]),
    "sum_int": (lambda x: x.sum(dim=0), [ints(3, 4)]),
    # reduced dims in one run: global average pool (inner 1), a middle run, everything; and int64 in and out
    "mean_pool": (lambda x: x.mean(dim=(-1, -2), keepdim=True), [rnd(2, 6, 3, 3)]),
    "mean_middle_run": (lambda x: x.mean(dim=(1, 2)), [rnd(2, 3, 4, 5)]),
    "sum_all": (lambda x: x.sum(dim=(0, 1, 2)), [rnd(3, 4, 5)]),
    "mean_half_pool": (lambda x: x.mean(dim=(-1, -2)), [rnd(2, 4, 5, 5, dtype=torch.float16)]),
    "sum_int64_run": (lambda x: x.sum(dim=-1), [ints(3, 7, dtype=torch.int64)]),
    "amax": (lambda x: torch.amax(x, dim=-1), [rnd(3, 4)]),
    # data movement
    "permute": (lambda x: x.permute(2, 0, 1).contiguous() * 1.0, [rnd(2, 3, 4)]),
    "expand": (lambda x: x.expand(3, 4, 5) * 1.0, [rnd(4, 1)]),
    "slice_step": (lambda x: x[:, 1:5:2] * 1.0, [rnd(3, 6)]),
    "select": (lambda x: x[:, 2] * 1.0, [rnd(3, 4)]),
    # strided gathers: merged dims, unit-stride rows (one copy each), typed rows of 1, 2, 4 and 8 bytes, stride 0
    "permute_heads": (lambda x: x.reshape(1, 16, 4, 8).permute(0, 2, 1, 3).contiguous() * 1.0, [rnd(1, 16, 32)]),
    "permute_last_two": (lambda x: x.transpose(-1, -2).contiguous() * 1.0, [rnd(2, 5, 7)]),
    "permute_half": (lambda x: x.permute(1, 0, 2).contiguous() * 1.0, [rnd(3, 4, 5, dtype=torch.float16)]),
    "permute_int64": (lambda x: x.permute(2, 1, 0).contiguous() * 2, [ints(2, 3, 4, dtype=torch.int64)]),
    "permute_uint8": (lambda x: x.permute(1, 0).contiguous() * 2, [ints(3, 5, dtype=torch.uint8)]),
    "expand_inner": (lambda x: x.expand(2, 3, 6) * 1.0, [rnd(2, 3, 1)]),
    "slice_rows": (lambda x: x[1:3, :, 2:6] * 1.0, [rnd(4, 3, 8)]),
    "cat": (lambda a, b: torch.cat([a, b], dim=1), [rnd(2, 3), rnd(2, 4)]),
    "where": (lambda c, a, b: torch.where(c, a, b), [rnd(3, 4) > 0, rnd(3, 4), rnd(4)]),
    # Each operand out's shape or one element: the direct loop (a boolean mask made additive, as attention does).
    "where_direct": (lambda c, a, b: torch.where(c, a, b), [rnd(2, 5, 7) > 0, rnd(1), rnd(2, 5, 7)]),
    "where_scalars": (lambda c, a, b: torch.where(c, a, b), [rnd(3, 6) > 0, rnd(()), rnd(1, 1)]),
    # Broadcast along outer dims only: row by row (an attention mask over heads; a last dim of 1 repeated).
    "where_rows_mask": (lambda c, a, b: torch.where(c, a, b), [rnd(1, 1, 5, 7) > 0, rnd(1, 3, 5, 7), rnd(1)]),
    "where_rows_column": (lambda c, a, b: torch.where(c, a, b), [rnd(2, 3, 1) > 0, rnd(2, 3, 6), rnd(6)]),
    # An operand of another dtype than out: the general broadcast.
    "where_promoted": (lambda c, a, b: torch.where(c, a, b), [rnd(3, 4) > 0, rnd(3, 4), rnd(3, 1).double()]),
    "embedding": (lambda w, i: F.embedding(i, w), [rnd(10, 4), torch.tensor([[1, 3], [9, 0]])]),
    "index_rows": (lambda x, i: x[i], [rnd(5, 3), torch.tensor([4, 0, -1])]),
    "index_cols_broadcast": (
        lambda x, i, j: x[:, i, j],
        [rnd(2, 4, 5), torch.tensor([[0], [3]]), torch.tensor([1, 2, 4])],
    ),
    "index_non_adjacent": (lambda x, i, j: x[i, :, j], [rnd(3, 4, 5), torch.tensor([0, 2]), torch.tensor([4, 1])]),
    "to_float": (lambda x: x.to(torch.float32), [ints(6)]),
    "to_half": (lambda x: x.to(torch.float16), [rnd(6)]),
    "full": (lambda x: x + torch.full((3,), 2.0, device=x.device) * x, [rnd(3)]),
}


def _tolerance(dtype, name):
    if dtype in (torch.float16, torch.bfloat16):
        return {"atol": 1e-2, "rtol": 1e-2}
    if dtype == torch.float64:
        return {"atol": 1e-10, "rtol": 1e-10}
    if dtype.is_floating_point:
        reduce = any(k in name for k in ("mm", "conv", "norm", "softmax", "mean", "sum", "linear", "pool"))
        return {"atol": 1e-4 if reduce else 1e-5, "rtol": 1e-4 if reduce else 1e-5}
    return {"atol": 0, "rtol": 0}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_eager(runtime, name):
    fn, inputs = CASES[name]
    if name == "linear":
        torch.manual_seed(5)
        module, inputs = torch.nn.Linear(5, 3).eval(), [rnd(2, 5)]
    else:
        module = Fn(fn).eval()
    want = module(*inputs)
    # Fold nothing: constants would hide the kernel under test behind the exporter.
    prog = exir.to_edge(torch.export.export(module, tuple(inputs))).to_executorch(
        exir.ExecutorchBackendConfig(fold_constants=False, alias_views=False)
    )
    # Portable kernels only: kernels/optimized, registered ahead of them by default, has its own tests.
    got = runtime.load(prog.buffer, kernels="portable").run("forward", inputs)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, **_tolerance(want.dtype, name))
