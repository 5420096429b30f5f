"""The indexing family (kernels/portable/op_indexing.cc) against eager: gather/scatter, index_select,
index_put (integer and boolean-mask indices, accumulate with duplicates), masked_scatter, select/slice_scatter,
over every element size; the sums (scatter_add, index_put accumulate) over every dtype; out-of-range indices met
at run time are named kernel errors. Not reachable from export and tested in kernels/test/shape_indexing_test.cc:
index_put_ (exir functionalizes it to index_put.out), nonzero, masked_select and repeat_interleave.Tensor (exir
refuses their data-dependent shapes)."""

import pytest
import torch

from tests.kernels.shape_cases import A, DTYPES, SIZES, check_many, rnd, run

IDX = torch.tensor([[0, 3], [2, 2], [1, 0]])

CASES = {
    "gather": (lambda x, i: torch.gather(x, 1, i), lambda t: [rnd(3, 4, dtype=t), IDX], "aten::gather.out", ()),
    "gather_int32_dim0": (
        lambda x, i: torch.gather(x, 0, i),
        lambda t: [rnd(3, 4, dtype=t), IDX.int() % 3],
        "aten::gather.out",
        (),
    ),
    "index_select": (
        lambda x, i: torch.index_select(x, -1, i),
        lambda t: [rnd(3, 4, dtype=t), torch.tensor([3, 0, 3])],
        "aten::index_select.out",
        (),
    ),
    "index_put": (
        lambda x, i, v: torch.index_put(x, (i,), v),
        lambda t: [rnd(4, 3, dtype=t), torch.tensor([2, -1]), rnd(3, dtype=t)],
        "aten::index_put.out",
        (),
    ),
    "index_put_two_indices": (
        lambda x, i, j, v: A.index_put(x, [None, i, j], v),
        lambda t: [rnd(2, 3, 4, dtype=t), torch.tensor([[0], [2]]), torch.tensor([1, 3]), rnd(2, 2, 2, dtype=t)],
        "aten::index_put.out",
        (),
    ),
    "index_put_mask": (
        lambda x, m, v: torch.index_put(x, (m,), v),
        lambda t: [rnd(3, 4, dtype=t), rnd(3, 4) > 0, rnd(1, dtype=t)],
        "aten::index_put.out",
        (),
    ),
    "index_put_row_mask": (
        lambda x, m, v: A.index_put(x, [None, m], v),
        lambda t: [rnd(2, 5, 3, dtype=t), torch.tensor([True, False, True, True, False]), rnd(3, 1, dtype=t)],
        "aten::index_put.out",
        (),
    ),
    "masked_scatter": (
        lambda x, m, s: x.masked_scatter(m, s),
        lambda t: [rnd(3, 4, dtype=t), rnd(4) > 0, rnd(13, dtype=t)],
        "aten::masked_scatter.out",
        (),
    ),
    "scatter": (
        lambda x, i, s: x.scatter(1, i, s),
        lambda t: [rnd(3, 4, dtype=t), torch.tensor([[0, 3], [2, 1], [1, 0]]), rnd(3, 3, dtype=t)],
        "aten::scatter.src_out",
        (),
    ),
    "scatter_value": (
        lambda x, i: x.scatter(0, i, 1),
        lambda t: [rnd(3, 4, dtype=t), IDX % 3],
        "aten::scatter.value_out",
        (),
    ),
    "select_scatter": (
        lambda x, s: torch.select_scatter(x, s, 1, -1),
        lambda t: [rnd(3, 4, dtype=t), rnd(3, dtype=t)],
        "aten::select_scatter.out",
        (A.select_scatter.default,),
    ),
    "slice_scatter": (
        lambda x, s: torch.slice_scatter(x, s, 1, 1, None, 2),
        lambda t: [rnd(3, 5, dtype=t), rnd(3, 2, dtype=t)],
        "aten::slice_scatter.out",
        (),
    ),
}

# Sums: per-dtype code. Duplicate indices accumulate, as PyTorch does.
SUMS = {
    "scatter_add": (
        lambda x, i, s: x.scatter_add(1, i, s),
        lambda t: [rnd(3, 4, dtype=t), IDX, rnd(3, 2, dtype=t)],
        "aten::scatter_add.out",
        (),
    ),
    "index_put_accumulate": (
        lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True),
        lambda t: [rnd(4, 3, dtype=t), torch.tensor([1, 1, -3, 1]), rnd(4, 3, dtype=t)],
        "aten::index_put.out",
        (),
    ),
}


@pytest.mark.parametrize("dtype", SIZES, ids=lambda d: str(d)[6:])
def test_moves_match_eager(runtime, dtype):
    check_many(runtime, [(n, fn, inputs(dtype), op, keep) for n, (fn, inputs, op, keep) in sorted(CASES.items())])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
def test_sums_match_eager(runtime, dtype):
    check_many(runtime, [(n, fn, inputs(dtype), op, keep) for n, (fn, inputs, op, keep) in sorted(SUMS.items())])


EDGES = {
    "gather_empty_index": (
        lambda x, i: torch.gather(x, 1, i),
        [rnd(3, 4), torch.zeros(3, 0, dtype=torch.long)],
        "aten::gather.out",
        (),
    ),
    "index_select_0d": (
        lambda x, i: torch.index_select(x, 0, i),
        [torch.tensor(2.5), torch.tensor([0])],
        "aten::index_select.out",
        (),
    ),
    "index_put_mask_all_false": (
        lambda x, m, v: torch.index_put(x, (m,), v),
        [rnd(2, 3), torch.zeros(2, 3, dtype=torch.bool), rnd(1)],
        "aten::index_put.out",
        (),
    ),
    "masked_scatter_broadcast_self": (
        lambda x, m, s: x.masked_scatter(m, s),
        [rnd(4), rnd(3, 4) > 0, rnd(12)],
        "aten::masked_scatter.out",
        (),
    ),
    "select_scatter_converts": (
        lambda x, s: torch.select_scatter(x, s, 0, 0),
        [rnd(2, 3), rnd(3, dtype=torch.float64)],
        "aten::select_scatter.out",
        (A.select_scatter.default,),
    ),
    "slice_scatter_clamped": (
        lambda x, s: torch.slice_scatter(x, s, 0, -100, 100),
        [rnd(3, 2), rnd(3, 2)],
        "aten::slice_scatter.out",
        (),
    ),
}


def test_edge_cases(runtime):
    check_many(runtime, [(name, *EDGES[name]) for name in sorted(EDGES)])


# Indices the exporter never saw: each a named kernel error (raised as RuntimeError naming the op), never a read
# or write out of bounds.
ERRORS = {
    "gather": (lambda x, i: torch.gather(x, 1, i), [rnd(3, 4), IDX], [rnd(3, 4), IDX + 2], "gather.out"),
    "gather_negative": (lambda x, i: torch.gather(x, 1, i), [rnd(3, 4), IDX], [rnd(3, 4), IDX - 1], "gather.out"),
    "index_select": (
        lambda x, i: torch.index_select(x, 0, i),
        [rnd(3, 4), torch.tensor([0])],
        [rnd(3, 4), torch.tensor([3])],
        "index_select.out",
    ),
    "index_put": (
        lambda x, i, v: torch.index_put(x, (i,), v),
        [rnd(4, 3), torch.tensor([0]), rnd(3)],
        [rnd(4, 3), torch.tensor([-5]), rnd(3)],
        "index_put.out",
    ),
    "scatter": (
        lambda x, i, s: x.scatter(1, i, s),
        [rnd(3, 4), IDX, rnd(3, 2)],
        [rnd(3, 4), IDX * 100, rnd(3, 2)],
        "scatter.src_out",
    ),
    "scatter_add": (
        lambda x, i, s: x.scatter_add(0, i, s),
        [rnd(3, 4), IDX % 3, rnd(3, 2)],
        [rnd(3, 4), IDX % 3 - 3, rnd(3, 2)],
        "scatter_add.out",
    ),
    "masked_scatter_short_source": (
        lambda x, m, s: x.masked_scatter(m, s),
        [rnd(4), rnd(4) > 9, rnd(2)],
        [rnd(4), torch.ones(4, dtype=torch.bool), rnd(2)],
        "masked_scatter.out",
    ),
}


def test_index_put_refuses_more_writes_than_a_tensor_holds(runtime, capfd, monkeypatch):
    monkeypatch.setenv("EMBER_LOG", "1")
    # Crossed index tensors of 50,000 zeros make self[indices] 2.5e9 elements (all the same one of a 1x1 self):
    # eager would loop over them all; Ember's kernel names the bound instead (kernel_fuzz found the class).
    fn = lambda x, i, j, v: torch.index_put(x, (i, j), v)  # noqa: E731
    i = torch.zeros(50000, 1, dtype=torch.long)
    j = torch.zeros(1, 50000, dtype=torch.long)
    with pytest.raises(RuntimeError, match=r"aten::index_put.out\) failed"):
        run(runtime, fn, [rnd(1, 1), i, j, rnd(1)], [rnd(1, 1), i, j, rnd(1)])
    assert "self[indices] would have more than 2^31-1 elements" in capfd.readouterr().err


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_hostile_indices_are_named_errors(runtime, name):
    fn, example, bad, op = ERRORS[name]
    with pytest.raises(RuntimeError, match="Invalid|invalid|bounds"):
        run(runtime, fn, example, bad)
