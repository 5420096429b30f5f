"""The shape family (kernels/portable/op_shape.cc) against eager: copies and views over every element size,
0-d and empty tensors, negative dims. Ops that to_edge would decompose are kept whole
(shape_cases.program), so each test runs the kernel it names. Not reachable from export and tested in
kernels/test/shape_indexing_test.cc instead: view_as_real_copy (exir refuses complex tensors), et_copy's
_h2d_copy/_d2h_copy and _empty_dim_order (exir never emits them), mixed dim orders and the argument errors export
would catch first. Channels-last tensors reach the kernels through the Python bindings in their own dim order."""

import pytest
import torch

from tests.kernels.shape_cases import A, SIZES, check_many, rnd

# name -> (fn, inputs(dtype), operator, ops kept undecomposed)
CASES = {
    "as_strided": (
        lambda x: torch.as_strided(x, (2, 3), (1, 2), 1),
        lambda t: [rnd(3, 4, dtype=t)],
        "aten::as_strided_copy.out",
        (),
    ),
    "copy_broadcast": (
        lambda x, y: A.copy(x, y),
        lambda t: [rnd(3, 4, dtype=t), rnd(4, dtype=t)],
        "aten::copy.out",
        (),
    ),
    "diagonal": (lambda x: torch.diagonal(x, 1), lambda t: [rnd(3, 4, dtype=t)], "aten::diagonal_copy.out", ()),
    "diagonal_neg_dims": (
        lambda x: torch.diagonal(x, -1, 2, 0),
        lambda t: [rnd(3, 2, 4, dtype=t)],
        "aten::diagonal_copy.out",
        (),
    ),
    "flip": (lambda x: torch.flip(x, [0, -1]), lambda t: [rnd(3, 4, 5, dtype=t)], "aten::flip.out", ()),
    "narrow": (
        lambda x: torch.narrow_copy(x, 1, -3, 2),
        lambda t: [rnd(3, 4, dtype=t)],
        "aten::narrow_copy.out",
        (A.narrow_copy.default,),
    ),
    "roll_dims": (
        lambda x: torch.roll(x, (1, -5), (0, 2)),
        lambda t: [rnd(3, 2, 4, dtype=t)],
        "aten::roll.out",
        (A.roll.default,),
    ),
    "roll_flat": (lambda x: torch.roll(x, 7), lambda t: [rnd(3, 4, dtype=t)], "aten::roll.out", (A.roll.default,)),
    "repeat": (lambda x: x.repeat(2, 1, 3), lambda t: [rnd(3, 2, dtype=t)], "aten::repeat.out", ()),
    "squeeze_dim": (
        lambda x: A.squeeze_copy(x, -2),
        lambda t: [rnd(3, 1, 4, dtype=t)],
        "aten::squeeze_copy.dim_out",
        (A.squeeze_copy.dim,),
    ),
    "squeeze_dim_noop": (
        lambda x: A.squeeze_copy(x, 0),
        lambda t: [rnd(3, 4, dtype=t)],
        "aten::squeeze_copy.dim_out",
        (A.squeeze_copy.dim,),
    ),
    "stack": (
        lambda a, b: torch.stack([a, b], 1),
        lambda t: [rnd(3, 4, dtype=t), rnd(3, 4, dtype=t)],
        "aten::stack.out",
        (A.stack.default,),
    ),
    "stack_last": (
        lambda a, b, c: torch.stack([a, b, c], -1),
        lambda t: [rnd(2, 3, dtype=t)] * 3,
        "aten::stack.out",
        (A.stack.default,),
    ),
    "t": (lambda x: A.t_copy(x), lambda t: [rnd(3, 5, dtype=t)], "aten::t_copy.out", (A.t_copy.default,)),
    "t_1d": (lambda x: A.t_copy(x), lambda t: [rnd(5, dtype=t)], "aten::t_copy.out", (A.t_copy.default,)),
    "transpose": (
        lambda x: A.transpose_copy(x, 0, -1),
        lambda t: [rnd(2, 3, 4, dtype=t)],
        "aten::transpose_copy.int_out",
        (A.transpose_copy.int,),
    ),
    "tril": (lambda x: torch.tril(x), lambda t: [rnd(2, 4, 5, dtype=t)], "aten::tril.out", (A.tril.default,)),
    "tril_diag": (lambda x: torch.tril(x, -2), lambda t: [rnd(5, 4, dtype=t)], "aten::tril.out", (A.tril.default,)),
    "unfold": (
        lambda x: A.unfold_copy(x, 1, 3, 2),
        lambda t: [rnd(2, 7, dtype=t)],
        "aten::unfold_copy.out",
        (A.unfold_copy.default,),
    ),
}


# The code moves bytes by element size, so one dtype of each size and class covers it (every dtype's
# registration is checked at load). One program per dtype holds every case.
@pytest.mark.parametrize("dtype", SIZES, ids=lambda d: str(d)[6:])
def test_matches_eager(runtime, dtype):
    check_many(runtime, [(name, fn, inputs(dtype), op, keep) for name, (fn, inputs, op, keep) in sorted(CASES.items())])


# 0-d and empty tensors, mixed dtypes, extreme arguments that are still valid.
EDGES = {
    "flip_0d": (lambda x: torch.flip(x, [0]), [torch.tensor(2.5)], "aten::flip.out", ()),
    "flip_empty": (lambda x: torch.flip(x, [1]), [rnd(0, 3)], "aten::flip.out", ()),
    "repeat_zero": (lambda x: x.repeat(0, 2), [rnd(3)], "aten::repeat.out", ()),
    "repeat_0d": (lambda x: x.repeat(2, 3), [torch.tensor(1.5)], "aten::repeat.out", ()),
    "roll_0d": (lambda x: torch.roll(x, 3), [torch.tensor(1.5)], "aten::roll.out", (A.roll.default,)),
    "roll_empty": (lambda x: torch.roll(x, 1, 0), [rnd(0, 2)], "aten::roll.out", (A.roll.default,)),
    "roll_repeated_dim": (lambda x: torch.roll(x, (1, 2), (1, 1)), [rnd(2, 5)], "aten::roll.out", (A.roll.default,)),
    "diagonal_offset_past_end": (lambda x: torch.diagonal(x, 7), [rnd(3, 4)], "aten::diagonal_copy.out", ()),
    "tril_huge_diagonal": (lambda x: torch.tril(x, 2**40), [rnd(3, 4)], "aten::tril.out", (A.tril.default,)),
    "tril_very_negative": (lambda x: torch.tril(x, -(2**40)), [rnd(3, 4)], "aten::tril.out", (A.tril.default,)),
    "unfold_0d": (
        lambda x: A.unfold_copy(x, 0, 1, 1),
        [torch.tensor(2.0)],
        "aten::unfold_copy.out",
        (A.unfold_copy.default,),
    ),
    "t_0d": (lambda x: A.t_copy(x), [torch.tensor(2.0)], "aten::t_copy.out", (A.t_copy.default,)),
    "transpose_0d": (
        lambda x: A.transpose_copy(x, 0, -1),
        [torch.tensor(2.0)],
        "aten::transpose_copy.int_out",
        (A.transpose_copy.int,),
    ),
    "copy_converts": (lambda x, y: A.copy(x, y), [rnd(2, 3), torch.tensor([1, -2, 3])], "aten::copy.out", ()),
    "copy_int_to_half": (
        lambda x, y: A.copy(x, y),
        [rnd(2, 3, dtype=torch.float16), torch.tensor([1, -2, 3])],
        "aten::copy.out",
        (),
    ),
    "stack_mixed_dtypes": (
        lambda a, b: torch.stack([a, b]),
        [rnd(3), torch.tensor([1, 2, 3], dtype=torch.int32)],
        "aten::stack.out",
        (A.stack.default,),
    ),
    "as_strided_overlapping": (
        lambda x: torch.as_strided(x, (3, 3), (1, 1)),
        [rnd(6)],
        "aten::as_strided_copy.out",
        (),
    ),
    "narrow_empty": (
        lambda x: torch.narrow_copy(x, 0, 3, 0),
        [rnd(3, 2)],
        "aten::narrow_copy.out",
        (A.narrow_copy.default,),
    ),
}


def test_edge_cases(runtime):
    check_many(runtime, [(name, *EDGES[name]) for name in sorted(EDGES)])


@pytest.mark.parametrize("dim", [1, 3, -2], ids=["channels", "width", "height"])
def test_cat_of_channels_last_tensors(runtime, dim):
    """cat runs in memory order: along C a channels-last cat interleaves runs of each input per pixel (it copied
    them as if contiguous before, wrong values without an error)."""
    from tests.kernels.test_portable_ops import Fn
    import exir

    cl = torch.channels_last
    shapes = {1: [(2, 3, 4, 5), (2, 2, 4, 5)], 3: [(2, 3, 4, 5), (2, 3, 4, 2)], -2: [(1, 3, 2, 5), (1, 3, 3, 5)]}[dim]
    xs = [rnd(*s, dtype=torch.float32).contiguous(memory_format=cl) for s in shapes]
    fn = lambda a, b: torch.cat([a, b], dim)
    prog = exir.to_edge(torch.export.export(Fn(fn).eval(), tuple(xs))).to_executorch()
    assert [tuple(t.dim_order) for c in prog.method_graphs["forward"].calls for t in c.outs] == [(0, 2, 3, 1)]
    for kernels in ("default", "portable"):
        got = runtime.load(prog.buffer, kernels=kernels).run("forward", xs)[0]
        assert torch.equal(got, fn(*xs)), kernels


@pytest.mark.parametrize("case", ["to_contiguous", "to_channels_last", "convert_and_relayout"])
def test_clone_and_copy_change_the_dim_order(runtime, case):
    """clone and _to_copy into another memory format relay the tensor out (they refused before): a channels-last
    conv output made contiguous for a flatten, an input made channels-last, a dtype change at the same time."""
    from tests.kernels.test_portable_ops import Fn
    import exir

    cl = torch.channels_last
    x = rnd(2, 3, 4, 5, dtype=torch.float32)
    fn, x = {
        "to_contiguous": (lambda t: (t + 1).contiguous(), x.contiguous(memory_format=cl)),
        "to_channels_last": (lambda t: (t + 1).contiguous(memory_format=cl), x),
        "convert_and_relayout": (lambda t: (t + 1).to(torch.float64, memory_format=cl), x),
    }[case]
    prog = exir.to_edge(torch.export.export(Fn(fn).eval(), (x,))).to_executorch()
    orders = [tuple(t.dim_order) for c in prog.method_graphs["forward"].calls for t in c.outs]
    assert len(set(orders)) == 2, orders  # the program really changes the dim order
    want = fn(x)
    for kernels in ("default", "portable"):
        got = runtime.load(prog.buffer, kernels=kernels).run("forward", [x])[0]
        assert got.dtype == want.dtype and torch.equal(got, want), kernels
