"""Bounded dynamic shapes (issue 16 item 1): export with torch.export.Dim, planned at the upper bound, run at any
shape within it on both builds, compared with eager; shapes out of bounds and rank changes refused by name."""

import pytest
import torch
from torch.export import Dim

import exir

g = torch.Generator().manual_seed(1616)


def rnd(*shape):
    return torch.randn(*shape, generator=g)


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _encoder():
    torch.manual_seed(3)
    return torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).eval()


def _cnn():
    torch.manual_seed(4)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(8 * 8 * 8, 10),
    ).eval()
    with torch.no_grad():
        net[1].running_mean.uniform_(-0.2, 0.2)
        net[1].running_var.uniform_(0.8, 1.2)
    return net


def _bert():
    from zoo.public import torchvision_cpu

    torchvision_cpu.ensure()
    import transformers

    torch.manual_seed(5)
    cfg = transformers.BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    bert = transformers.BertModel(cfg).eval()
    return Fn(lambda ids: bert(input_ids=ids).last_hidden_state)


seq = Dim("seq", min=1, max=64)
batch = Dim("batch", min=1, max=8)
half = Dim("half", min=1, max=16)

# name -> (module factory, example inputs, dynamic_shapes, shapes to run, one list per run)
CASES = {
    "encoder_seq": (_encoder, [rnd(1, 8, 32)], ({1: seq},), [[(1, 1, 32)], [(1, 7, 32)], [(1, 64, 32)]]),
    "cnn_batch": (_cnn, [rnd(2, 3, 16, 16)], ({0: batch},), [[(1, 3, 16, 16)], [(5, 3, 16, 16)], [(8, 3, 16, 16)]]),
    "bert_seq": (_bert, [torch.randint(0, 100, (1, 16), generator=g)], ({1: seq},), [[(1, 1)], [(1, 7)], [(1, 64)]]),
    # Sizes computed from shapes: x.shape[0] into a view (sym_size), and a derived dimension 2*half.
    "view_of_sym_size": (
        lambda: Fn(lambda x: (x.view(x.shape[0], 4, 4) * 2).sum(1)),
        [rnd(5, 16)],
        ({0: seq},),
        [[(1, 16)], [(33, 16)], [(64, 16)]],
    ),
    "derived_dim": (
        lambda: Fn(lambda x, y: torch.cat([x[: y.shape[0]] + y, x[y.shape[0] :] - y])),
        [rnd(6, 8), rnd(3, 8)],
        ({0: 2 * half}, {0: half}),
        [[(2, 8), (1, 8)], [(14, 8), (7, 8)], [(32, 8), (16, 8)]],
    ),
}


def _inputs_like(examples, shapes):
    out = []
    for ex, shape in zip(examples, shapes):
        out.append(rnd(*shape) if ex.is_floating_point() else torch.randint(0, 100, shape, generator=g))
    return out


@pytest.fixture(scope="module")
def programs():
    built = {}
    for name, (make, examples, dyn, _) in CASES.items():
        module = make()
        # Fn's forward takes *xs: one dynamic_shapes entry for the whole tuple.
        ep = torch.export.export(module, tuple(examples), dynamic_shapes=(dyn,) if isinstance(module, Fn) else dyn)
        built[name] = (module, exir.to_edge(ep).to_executorch())
    return built


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_runs_at_every_shape_within_the_bounds(runtime, programs, name, kernels):
    module, prog = programs[name]
    method = runtime.load(prog.buffer, kernels=kernels)
    for shapes in CASES[name][3]:
        xs = _inputs_like(CASES[name][1], shapes)
        with torch.no_grad():
            want = module(*xs)
        got = method.run("forward", xs)[0]
        assert got.shape == want.shape, shapes
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_the_plan_is_at_the_bound_and_the_report_says_so(runtime, programs):
    _, prog = programs["encoder_seq"]
    graph = prog.method_graphs["forward"]
    (x,) = graph.inputs
    assert x.dynamic and x.shape == (1, 64, 32) and x.lower_shape == (1, 1, 32)
    report = prog.memory_report()
    assert "dynamic inputs, planned at their bounds: src: float32[1, 1..64, 32]" in report
    pool = prog.reports["forward"].pools[0]
    assert 0 < pool.smallest_live_bytes < pool.lower_bound_bytes <= pool.planned_bytes
    meta = runtime.load(prog.buffer).method_meta("forward")
    assert meta["inputs"] == [
        {"dtype": 6, "shape": [1, 64, 32], "nbytes": 64 * 32 * 4, "dynamic": True, "dim_order": [0, 1, 2]}
    ]
    assert meta["outputs"][0]["dynamic"]


def test_a_static_program_says_static(runtime):
    prog = exir.to_edge(torch.export.export(Fn(lambda x: x + 1), (rnd(2, 3),))).to_executorch()
    meta = runtime.load(prog.buffer).method_meta("forward")
    assert meta["inputs"][0]["dynamic"] is False
    assert "dynamic inputs" not in prog.memory_report()


def test_beyond_the_bound_is_refused_naming_dimension_and_bound(runtime, programs):
    _, prog = programs["encoder_seq"]
    method = runtime.load(prog.buffer)
    with pytest.raises(RuntimeError, match=r"dimension 1 is 65, beyond its bound 64"):
        method.run("forward", [rnd(1, 65, 32)])
    with pytest.raises(RuntimeError, match=r"takes sizes up to \[1, 64, 32\]; got \[64, 32\]"):
        method.run("forward", [rnd(64, 32)])
    # Still usable at an in-bound shape after the refusals.
    assert method.run("forward", [rnd(1, 3, 32)])[0].shape == (1, 3, 32)


def test_an_unbounded_dimension_is_refused_at_export():
    ep = torch.export.export(Fn(lambda x: x * 2), (rnd(4, 3),), dynamic_shapes=(({0: Dim("n")},),))
    with pytest.raises(exir.lowering.lower.LoweringError, match=r"no upper bound.*Dim\('n', max=128\)"):
        exir.to_edge(ep).to_executorch()


def test_sizes_become_prim_op_calls(programs):
    _, prog = programs["view_of_sym_size"]
    calls = prog.method_graphs["forward"].calls
    assert calls[0].op_name == "aten::sym_size.int" and calls[0].result is not None
    view = next(c for c in calls if c.op_name == "aten::view_copy.out")
    assert view.args[1][0] is calls[0].result


def test_every_plan_is_at_its_lower_bound_at_the_bound(programs):
    """Memory honesty (issue 16 item 4): each dynamic program's pool is planned at the upper bound, at the lower bound
    for those shapes, and the report gives the bytes live at the smallest shapes beside it; `pytest -s` prints it."""
    print("\nplanned arena bytes at the bound / lower bound there / live at the smallest shapes")
    for name, (_, prog) in sorted(programs.items()):
        for pool in prog.reports["forward"].pools:
            assert pool.planned_bytes == pool.lower_bound_bytes, name
            assert 0 < pool.smallest_live_bytes < pool.planned_bytes, name
            print(
                f"  {name:18s} {pool.planned_bytes:>9,d} {pool.lower_bound_bytes:>9,d} {pool.smallest_live_bytes:>9,d}"
            )
