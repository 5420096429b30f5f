"""Helpers for the shape and indexing kernel tests: one-op programs, with the op kept intact where to_edge's core
ATen decompositions would otherwise rewrite it (roll, tril, stack, ... decompose into other ops), exported and
run on the portable kernels, compared with eager."""

import torch

import exir
from exir.edge.to_edge import EdgeCompileConfig, EdgeProgramManager

A = torch.ops.aten
g = torch.Generator().manual_seed(4321)

# Element sizes 1, 2, 4 and 8 bytes, floating and integral, and Bool.
DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int8,
    torch.uint8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.bool,
]
# One dtype of each element size (1, 2, 4, 8 bytes) and class, for kernels that move bytes.
SIZES = [torch.float32, torch.float16, torch.float64, torch.int64, torch.int8, torch.bool]


def rnd(*shape, dtype=torch.float32):
    if dtype == torch.bool:
        return torch.rand(*shape, generator=g) > 0.5
    x = torch.rand(*shape, generator=g) * 8 - 4
    if not dtype.is_floating_point:
        x = x.round().clamp(0 if dtype == torch.uint8 else -4, 4)
    return x.to(dtype)


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def program(fn, inputs, keep=()):
    """The program for fn(*inputs), with the ops in `keep` (OpOverloads) left undecomposed."""
    ep = torch.export.export(fn if isinstance(fn, torch.nn.Module) else Fn(fn), tuple(inputs))
    table = torch.export.default_decompositions()
    for op in keep:
        table.pop(op, None)
    edge = EdgeProgramManager({"forward": ep.run_decompositions(table)}, EdgeCompileConfig())
    return edge.to_executorch(exir.ExecutorchBackendConfig(fold_constants=False, alias_views=False))


def operators(prog):
    return [f"{o.name}.{o.overload}" for o in prog.program.execution_plan[0].operators]


def check(runtime, fn, inputs, op, keep=()):
    """Runs fn as a program whose operators include `op`, and compares with eager exactly (these kernels move
    or add elements; the sums are checked by their own tolerance below)."""
    want = fn(*[t.clone() for t in inputs])
    prog = program(fn, inputs, keep)
    assert op in operators(prog), f"{op} not in {operators(prog)}"
    got = runtime.load(prog.buffer, kernels="portable").run("forward", [t.clone() for t in inputs])[0]
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype in (torch.float16, torch.bfloat16):
        torch.testing.assert_close(got, want, atol=1e-2, rtol=1e-2)
    elif want.dtype.is_floating_point:
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    else:
        assert torch.equal(got, want), (got, want)


class Many(torch.nn.Module):
    """Several one-op functions in one program (each its own inputs and output): one export per dtype instead of
    one per op keeps these tests to seconds on a busy 2-core machine."""

    def __init__(self, fns, counts):
        super().__init__()
        self.fns, self.counts = fns, counts

    def forward(self, *args):
        outs, at = [], 0
        for fn, n in zip(self.fns, self.counts):
            outs.append(fn(*args[at : at + n]))
            at += n
        return tuple(outs)


def check_many(runtime, cases):
    """cases: (name, fn, inputs, operator, keep) each; all in one program, each output compared with eager."""
    fns = [c[1] for c in cases]
    counts = [len(c[2]) for c in cases]
    inputs = [t for c in cases for t in c[2]]
    keep = [op for c in cases for op in c[4]]
    module = Many(fns, counts)
    wants = module(*[t.clone() for t in inputs])
    prog = program(module, inputs, keep)
    ops = operators(prog)
    for name, _, _, op, _ in cases:
        assert op in ops, f"{name}: {op} not in {ops}"
    gots = runtime.load(prog.buffer, kernels="portable").run("forward", [t.clone() for t in inputs])
    for (name, *_), got, want in zip(cases, gots, wants):
        assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, got.shape, want.dtype, want.shape)
        if want.dtype in (torch.float16, torch.bfloat16):
            torch.testing.assert_close(got, want, atol=1e-2, rtol=1e-2, msg=name)
        elif want.dtype.is_floating_point:
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5, msg=name)
        else:
            assert torch.equal(got, want), (name, got, want)


def run(runtime, fn, example, inputs, keep=()):
    """Exported with `example`, run on `inputs` (error cases: hostile data the exporter never saw)."""
    prog = program(fn, example, keep)
    return runtime.load(prog.buffer, kernels="portable").run("forward", inputs)[0]
