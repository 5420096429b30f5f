"""Per-dtype tolerances for the OpInfo sweep (as tests/kernels/test_portable_ops.py states them).

- float32: |got - want| <= 1e-5 * (|want| + scale) elementwise, scale being the output's largest finite
  magnitude (at least 1); 1e-4 for reductions and products (the sample reaches a kernel in REDUCING: a different
  summation order).
- float64: the same with 1e-10 (1e-8 for reductions and products).
- float16 / bfloat16: one unit in the last place of the output, elementwise (the kernels compute in float and
  round once, as eager does on CPU); for reductions and products one unit in the last place of the output's
  largest magnitude.
- integers and Bool: exact.
NaN must be NaN where eager has NaN, infinities equal; dtypes and shapes equal.
"""

from __future__ import annotations

from typing import Iterable, Optional

import torch

# Kernels whose results depend on the order of a sum or product (or of an iterative algorithm).
REDUCING = (
    "mm",
    "bmm",
    "addmm",
    "convolution",
    "native_layer_norm",
    "native_group_norm",
    "_native_batch_norm",
    "_softmax",
    "_log_softmax",
    "sum",
    "mean",
    "var",
    "prod",
    "cumsum",
    "cumprod",
    "logsumexp",
    "avg_pool",
    "adaptive_avg_pool",
    "linalg_vector_norm",
    "upsample",
    "grid_sampler",
    "_cdist",
    "pdist",
    "norm",
    "std",
    "baddbmm",
    "addbmm",
    "addmv",
    "mv",
    "dot",
)


def reducing(kernels: Iterable[str]) -> bool:
    names = {k.split("::")[-1].split(".")[0] for k in kernels}
    return any(n == r or n.startswith(r + "_") for n in names for r in REDUCING)


_ULP_BITS = {torch.float16: 10, torch.bfloat16: 7}


def _ulp(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """One unit in the last place of dtype at |x| (x in float32), subnormals included."""
    bits = _ULP_BITS[dtype]
    tiny = torch.finfo(dtype).tiny
    a = x.abs().clamp(min=tiny)
    return torch.exp2(torch.floor(torch.log2(a)) - bits)


def mismatch(got: torch.Tensor, want: torch.Tensor, reduce: bool) -> Optional[str]:
    """None when got matches want at the dtype's tolerance, else what differs."""
    if got.dtype != want.dtype or tuple(got.shape) != tuple(want.shape):
        return f"got {got.dtype}{list(got.shape)}, eager {want.dtype}{list(want.shape)}"
    if want.numel() == 0:
        return None
    if not want.dtype.is_floating_point:
        if torch.equal(got, want):
            return None
        bad = (got != want).nonzero()[0].tolist()
        return (
            f"{int((got != want).sum())} of {want.numel()} differ; at {bad}: {got[tuple(bad)].item()} vs "
            f"{want[tuple(bad)].item()}"
        )
    g, w = got.double(), want.double()
    nan_g, nan_w = torch.isnan(g), torch.isnan(w)
    if not torch.equal(nan_g, nan_w):
        return (
            f"NaN where eager has {int((nan_g & ~nan_w).sum())} numbers, or a number where eager has NaN "
            f"({int((nan_w & ~nan_g).sum())})"
        )
    inf_w = torch.isinf(w)
    if not torch.equal(g[inf_w], w[inf_w]) or torch.isinf(g[~inf_w & ~nan_w]).any():
        return "infinities differ"
    ok = ~nan_w & ~inf_w
    if not ok.any():
        return None
    g, w = g[ok], w[ok]
    scale = w.abs().max().item()
    if want.dtype in _ULP_BITS:
        bound = _ulp(torch.full_like(w, max(scale, 0.0)), want.dtype) if reduce else _ulp(w, want.dtype)
    else:
        tol = (1e-4 if reduce else 1e-5) if want.dtype == torch.float32 else (1e-8 if reduce else 1e-10)
        bound = tol * (w.abs() + max(scale, 1.0))
    err = (g - w).abs()
    if (err <= bound).all():
        return None
    i = int((err - bound).argmax())
    return (
        f"{int((err > bound).sum())} of {w.numel()} beyond tolerance; worst {g[i].item():.9g} vs eager "
        f"{w[i].item():.9g} (|diff| {err[i].item():.3g}, bound {bound[i].item():.3g})"
    )
