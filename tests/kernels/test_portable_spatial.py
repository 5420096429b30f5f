"""The spatial portable kernels against eager PyTorch: padding, upsampling, grid sampling, pixel shuffle, adaptive
average pooling, and the convolution and max-pool backward passes; one-op programs run on the C++ runtime.

Reflection/replication padding and pixel (un)shuffle are decomposed by torch.export's default table; their cases
export with that decomposition removed (and the op allowed by the verifier), so the kernel itself runs.
Tolerances as tests/kernels/test_portable_ops.py: float32 1e-5 (1e-4 where a window is summed), float64 1e-10,
float16/bfloat16 one ulp of the output's scale, integers exact.
"""

import pytest
import torch
import torch.nn.functional as F

import exir

g = torch.Generator().manual_seed(2024)
aten = torch.ops.aten


def rnd(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    return (torch.rand(*shape, generator=g) * (hi - lo) + lo).to(dtype)


def ints(*shape, dtype=torch.int32, hi=10):
    return torch.randint(-hi, hi, shape, generator=g, dtype=torch.int64).to(dtype)


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _grid(n, h, w, lo=-1.2, hi=1.2, dtype=torch.float32):
    return rnd(n, h, w, 2, lo=lo, hi=hi, dtype=dtype)


# name -> (fn, inputs, ops to keep from decomposition)
CASES = {
    "constant_pad_2d": (lambda x: F.pad(x, (1, 2, 0, 1), value=1.5), [rnd(1, 2, 4, 5)], ()),
    "constant_pad_negative_crop": (lambda x: F.pad(x, (-1, 2, 1, -2)), [rnd(2, 5, 6)], ()),
    "constant_pad_3_dims_int": (lambda x: F.pad(x, (1, 1, 2, 0, 0, 1), value=7), [ints(2, 3, 2, 2)], ()),
    "constant_pad_half": (lambda x: F.pad(x, (2, 2), value=-0.5), [rnd(3, 4, dtype=torch.float16)], ()),
    "constant_pad_bool": (lambda x: F.pad(x, (1, 0), value=True), [rnd(2, 3) > 0], ()),
    "constant_pad_empty_input": (lambda x: F.pad(x, (1, 1)), [rnd(2, 0)], ()),
    "reflection_pad1d": (lambda x: F.pad(x, (2, 3), mode="reflect"), [rnd(2, 3, 5)], ("reflection_pad1d",)),
    "reflection_pad1d_unbatched_int": (lambda x: F.pad(x, (1, 1), mode="reflect"), [ints(3, 4)], ("reflection_pad1d",)),
    "reflection_pad2d": (lambda x: F.pad(x, (2, 1, 1, 3), mode="reflect"), [rnd(1, 2, 4, 5)], ("reflection_pad2d",)),
    "reflection_pad2d_double": (
        lambda x: F.pad(x, (1, 1, 1, 1), mode="reflect"),
        [rnd(2, 3, 3, dtype=torch.float64)],
        ("reflection_pad2d",),
    ),
    "reflection_pad3d": (
        lambda x: F.pad(x, (1, 2, 1, 0, 2, 1), mode="reflect"),
        [rnd(1, 2, 3, 3, 4)],
        ("reflection_pad3d",),
    ),
    "replication_pad1d": (lambda x: F.pad(x, (3, 1), mode="replicate"), [rnd(2, 3, 4)], ("replication_pad1d",)),
    "replication_pad2d": (
        lambda x: F.pad(x, (2, 0, 3, 1), mode="replicate"),
        [rnd(1, 2, 3, 4)],
        ("replication_pad2d",),
    ),
    "replication_pad2d_bfloat16": (
        lambda x: F.pad(x, (1, 1, 1, 1), mode="replicate"),
        [rnd(1, 2, 3, 3, dtype=torch.bfloat16)],
        ("replication_pad2d",),
    ),
    "replication_pad3d": (
        lambda x: F.pad(x, (1, 1, 0, 2, 1, 0), mode="replicate"),
        [rnd(2, 2, 2, 3, 2)],
        ("replication_pad3d",),
    ),
    "upsample_bilinear_scale": (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), [rnd(1, 2, 3, 4)], ()),
    "upsample_bilinear_size_align": (
        lambda x: F.interpolate(x, size=(5, 9), mode="bilinear", align_corners=True),
        [rnd(2, 3, 4, 4)],
        (),
    ),
    "upsample_bilinear_down": (lambda x: F.interpolate(x, size=(3, 2), mode="bilinear"), [rnd(1, 2, 7, 5)], ()),
    "upsample_bilinear_fraction": (
        lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear"),
        [rnd(1, 1, 5, 3)],
        (),
    ),
    "upsample_bilinear_half": (
        lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
        [rnd(1, 2, 3, 3, dtype=torch.float16)],
        (),
    ),
    "upsample_bilinear_double": (
        lambda x: F.interpolate(x, size=(4, 7), mode="bilinear", align_corners=False),
        [rnd(1, 2, 3, 3, dtype=torch.float64)],
        (),
    ),
    "upsample_nearest_2x": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), [rnd(1, 3, 3, 4)], ()),
    "upsample_nearest_fraction": (lambda x: F.interpolate(x, scale_factor=1.5, mode="nearest"), [rnd(2, 2, 4, 6)], ()),
    "upsample_nearest_size_int": (
        lambda x: F.interpolate(x, size=(7, 3), mode="nearest"),
        [ints(1, 2, 5, 5).to(torch.uint8)],
        (),
    ),
    "upsample_bilinear_aa_down": (
        lambda x: F.interpolate(x, size=(3, 4), mode="bilinear", antialias=True),
        [rnd(1, 2, 9, 11)],
        ("_upsample_bilinear2d_aa",),
    ),
    "upsample_bilinear_aa_align": (
        lambda x: F.interpolate(x, size=(4, 3), mode="bilinear", antialias=True, align_corners=True),
        [rnd(2, 1, 10, 7)],
        ("_upsample_bilinear2d_aa",),
    ),
    "upsample_bilinear_aa_up": (
        lambda x: F.interpolate(x, size=(6, 8), mode="bilinear", antialias=True),
        [rnd(1, 2, 3, 4)],
        ("_upsample_bilinear2d_aa",),
    ),
    "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2), [rnd(2, 8, 3, 2)], ("pixel_shuffle",)),
    "pixel_shuffle_int_3d": (lambda x: F.pixel_shuffle(x, 3), [ints(9, 2, 2)], ("pixel_shuffle",)),
    "pixel_unshuffle": (lambda x: F.pixel_unshuffle(x, 2), [rnd(1, 3, 4, 6)], ("pixel_unshuffle",)),
    "pixel_unshuffle_5d_bool": (lambda x: F.pixel_unshuffle(x, 2), [rnd(2, 1, 2, 4, 2) > 0], ("pixel_unshuffle",)),
    "adaptive_avg_pool_uneven": (lambda x: F.adaptive_avg_pool2d(x, (4, 3)), [rnd(2, 3, 7, 5)], ()),
    "adaptive_avg_pool_grow_3d": (lambda x: F.adaptive_avg_pool2d(x, (5, 6)), [rnd(2, 3, 4)], ()),
    "adaptive_avg_pool_double": (lambda x: F.adaptive_avg_pool2d(x, 2), [rnd(1, 2, 5, 5, dtype=torch.float64)], ()),
    "adaptive_avg_pool_bfloat16": (lambda x: F.adaptive_avg_pool2d(x, 3), [rnd(1, 2, 6, 7, dtype=torch.bfloat16)], ()),
    "convolution_backward": (
        lambda go, x, w: aten.convolution_backward(
            go, x, w, [4], [2, 1], [1, 0], [1, 1], False, [0, 0], 1, [True, True, True]
        ),
        [rnd(2, 4, 3, 3), rnd(2, 3, 5, 5), rnd(4, 3, 3, 3)],
        (),
    ),
    "convolution_backward_grouped_dilated": (
        lambda go, x, w: aten.convolution_backward(
            go, x, w, [4], [1, 1], [2, 2], [2, 2], False, [0, 0], 2, [True, True, True]
        ),
        [rnd(1, 4, 6, 6), rnd(1, 4, 6, 6), rnd(4, 2, 3, 3)],
        (),
    ),
    "convolution_backward_1d_double": (
        lambda go, x, w: aten.convolution_backward(go, x, w, [3], [2], [1], [1], False, [0], 1, [True, True, True]),
        [rnd(2, 3, 4, dtype=torch.float64), rnd(2, 2, 7, dtype=torch.float64), rnd(3, 2, 3, dtype=torch.float64)],
        (),
    ),
    "max_pool2d_backward": (
        lambda go, x: aten.max_pool2d_with_indices_backward(
            go, x, [3, 3], [2, 2], [1, 1], [1, 1], False, aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])[1]
        ),
        [rnd(1, 2, 4, 4), rnd(1, 2, 8, 8)],
        (),
    ),
    "max_pool2d_backward_3d_ceil": (
        lambda go, x: aten.max_pool2d_with_indices_backward(
            go,
            x,
            [2, 2],
            [2, 2],
            [0, 0],
            [1, 1],
            True,
            aten.max_pool2d_with_indices(x, [2, 2], [2, 2], [0, 0], [1, 1], True)[1],
        ),
        [rnd(2, 4, 4), rnd(2, 7, 7)],
        (),
    ),
}

# Every mode with every padding, align_corners alternating (each mode sees both).
for _i, _mode in enumerate(("bilinear", "nearest", "bicubic")):
    for _j, _pad in enumerate(("zeros", "border", "reflection")):
        _ac = (_i + _j) % 2 == 1
        CASES[f"grid_sample_{_mode}_{_pad}_{'ac' if _ac else 'noac'}"] = (
            (lambda m, p, a: lambda x, gr: F.grid_sample(x, gr, mode=m, padding_mode=p, align_corners=a))(
                _mode, _pad, _ac
            ),
            [rnd(2, 3, 5, 6), _grid(2, 4, 3)],
            (),
        )
CASES["grid_sample_double_far"] = (
    lambda x, gr: F.grid_sample(x, gr, padding_mode="reflection", align_corners=False),
    [rnd(1, 2, 4, 4, dtype=torch.float64), _grid(1, 3, 3, lo=-4, hi=4, dtype=torch.float64)],
    (),
)


def _tolerance(dtype, name):
    if dtype in (torch.float16, torch.bfloat16):
        return {"atol": 1e-2, "rtol": 1e-2}
    if dtype == torch.float64:
        return {"atol": 1e-10, "rtol": 1e-10}
    if dtype.is_floating_point:
        summed = any(k in name for k in ("aa", "adaptive", "backward", "bicubic"))
        return {"atol": 1e-4 if summed else 1e-5, "rtol": 1e-4 if summed else 1e-5}
    return {"atol": 0, "rtol": 0}


def export(module, inputs, keep=()):
    ep = torch.export.export(module, tuple(inputs))
    config = exir.EdgeCompileConfig(allowed_ops=[f"aten::{k}" for k in keep])
    if keep:
        # torch.export's default table decomposes these ops; without the entry the kernel itself runs.
        table = torch.export.default_decompositions()
        for k in keep:
            table.pop(getattr(aten, k).default, None)
        original = torch.export.default_decompositions
        torch.export.default_decompositions = lambda: table
        try:
            edge = exir.to_edge(ep, config)
        finally:
            torch.export.default_decompositions = original
    else:
        edge = exir.to_edge(ep, config)
    return edge.to_executorch(exir.ExecutorchBackendConfig(fold_constants=False, alias_views=False))


def outputs(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_eager(runtime, name):
    fn, inputs, keep = CASES[name]
    module = Fn(fn).eval()
    want = outputs(module(*inputs))
    prog = export(module, inputs, keep)
    got = runtime.load(prog.buffer, kernels="portable").run("forward", inputs)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        torch.testing.assert_close(a, b, **_tolerance(b.dtype, name))
