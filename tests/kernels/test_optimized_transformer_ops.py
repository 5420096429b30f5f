"""kernels/optimized's transformer kernels (native_layer_norm, _softmax, _log_softmax, gelu, add/sub/mul/div)
against eager PyTorch, on the default build and the portable-only build.

Shapes reach each vector body and its scalar tail (lengths not a multiple of 4 or 8), every broadcast pattern the
optimized binary ops take (same shape, a row over the last dim on either side, a one-element tensor on either
side, a block repeated over the leading dims: an attention mask over the heads), masked attention rows (-inf), and
the calls they hand to portable (softmax over another dim, a general broadcast, double, half).

Tolerances: float32 1e-5 relative elementwise (the vector exp/erf are within a few ulp), 1e-4 for the reductions
(layer norm, softmax: another summation order); float64 1e-10; float16 1e-2.
"""

import pytest
import torch
import torch.nn.functional as F

import exir
from tests.kernels.test_portable_ops import Fn

g = torch.Generator().manual_seed(20261124)


def rnd(*shape, dtype=torch.float32, scale=4.0):
    return ((torch.rand(*shape, generator=g) - 0.5) * scale).to(dtype)


def masked(*shape):
    x = rnd(*shape)
    x[..., 3:5] = float("-inf")
    return x


CASES = {
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (64,), w, b), [rnd(3, 5, 64), rnd(64), rnd(64)]),
    "layer_norm_tail": (lambda x, w, b: F.layer_norm(x, (37,), w, b, eps=1e-6), [rnd(4, 37), rnd(37), rnd(37)]),
    "layer_norm_no_affine": (lambda x: F.layer_norm(x, (2, 10)), [rnd(3, 2, 10) + 100.0]),
    "layer_norm_double": (lambda x: F.layer_norm(x, (6,)), [rnd(2, 6, dtype=torch.float64)]),
    "softmax_last": (lambda x: torch.softmax(x, -1), [rnd(2, 4, 77, scale=20.0)]),
    "softmax_masked": (lambda x: torch.softmax(x, -1), [masked(2, 3, 16)]),
    "softmax_short_rows": (lambda x: torch.softmax(x, 1), [rnd(5, 3)]),
    "softmax_middle_dim": (lambda x: torch.softmax(x, 1), [rnd(2, 9, 4)]),
    "softmax_half": (lambda x: torch.softmax(x, -1), [rnd(3, 12, dtype=torch.float16)]),
    "log_softmax_last": (lambda x: torch.log_softmax(x, -1), [rnd(6, 50, scale=10.0)]),
    "log_softmax_middle_dim": (lambda x: torch.log_softmax(x, 0), [rnd(5, 7)]),
    "gelu_erf": (F.gelu, [rnd(3, 101, scale=12.0)]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [rnd(4, 33, scale=12.0)]),
    "gelu_tiny": (F.gelu, [rnd(3, scale=1e-3)]),
    "gelu_double": (F.gelu, [rnd(10, dtype=torch.float64)]),
    "add_same": (lambda a, b: a + b, [rnd(2, 5, 19), rnd(2, 5, 19)]),
    "add_row_bias": (lambda a, b: a + b, [rnd(3, 7, 24), rnd(24)]),
    "add_row_first": (lambda a, b: a + b, [rnd(1, 1, 13), rnd(4, 2, 13)]),
    "add_alpha_scalar_tensor": (lambda a, b: torch.add(a, b, alpha=-1.5), [rnd(5, 9), rnd(1)]),
    "sub_same_alpha": (lambda a, b: torch.sub(a, b, alpha=0.25), [rnd(6, 11), rnd(6, 11)]),
    "sub_scalar_first": (lambda a, b: a - b, [rnd(1, 1), rnd(3, 10)]),
    "mul_row": (lambda a, b: a * b, [rnd(4, 31), rnd(1, 31)]),
    "mul_scalar_tensor": (lambda a, b: a * b, [rnd(2, 3, 40), rnd(1, 1, 1)]),
    "div_row_denominator": (lambda a, b: a / b, [rnd(5, 12), rnd(12) + 3.0]),
    "div_scalar_first": (lambda a, b: a / b, [rnd(1), rnd(4, 9) + 3.0]),
    "div_same": (lambda a, b: a / b, [rnd(3, 17), rnd(3, 17) + 3.0]),
    "add_mask_over_heads": (lambda a, b: a + b, [rnd(2, 3, 9, 11), rnd(1, 1, 9, 11)]),
    "sub_block_first": (lambda a, b: a - b, [rnd(5, 3), rnd(4, 5, 3)]),
    "add_general_broadcast": (lambda a, b: a + b, [rnd(3, 1, 5), rnd(1, 4, 5)]),
    "add_inner_one": (lambda a, b: a + b, [rnd(2, 3, 4, 5), rnd(1, 3, 1, 5)]),
    "add_column": (lambda a, b: a + b, [rnd(3, 5), rnd(3, 1)]),
    "mul_double": (lambda a, b: a * b, [rnd(4, 5, dtype=torch.float64), rnd(5, dtype=torch.float64)]),
}


def tolerance(want, name):
    if want.dtype == torch.float64:
        return {"atol": 1e-10, "rtol": 1e-10}
    if want.dtype == torch.float16:
        return {"atol": 1e-2, "rtol": 1e-2}
    tol = 1e-4 if ("norm" in name or "softmax" in name) else 1e-5
    return {"atol": tol * max(1.0, want.abs().max().item()), "rtol": tol}


@pytest.fixture(scope="module")
def programs():
    out = {}
    for name, (fn, inputs) in CASES.items():
        module = Fn(fn).eval()
        prog = exir.to_edge(torch.export.export(module, tuple(inputs))).to_executorch(
            exir.ExecutorchBackendConfig(fold_constants=False, alias_views=False)
        )
        out[name] = (prog.buffer, inputs, module(*inputs))
    return out


# The fall-through cases (a column or general broadcast, softmax over a middle dim) once failed on the default build:
# the optimized kernels hand those Float calls to portable, whose kernel was compiled without Float. The manifest's
# `partial: true` now compiles it for Float too (kernels/README.md).
@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_eager(runtime, programs, name, kernels):
    buffer, inputs, want = programs[name]
    got = runtime.load(buffer, kernels=kernels).run("forward", inputs)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, equal_nan=True, **tolerance(want, name))
