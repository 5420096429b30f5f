"""Threads (runtime/threads, `--threads N` in the runner, `threads=N` in ember.runtime.load): kernels/optimized's GEMM,
convolutions (depthwise too), pooling and large element-wise and row-wise passes split their work across a pool,
and every output is bit for bit the single-threaded one (each element is computed in the same order, only on
another thread), so these tests compare with torch.equal, not a tolerance. Memory needs grow with the thread count
only by the depthwise convolution's scratch slice per thread, and MethodMeta says so. Speed is the benchmark's
business (bench/run)."""

import pytest
import torch
import torch.nn.functional as F

import exir
from zoo.runner_io import read_outputs, run

g = torch.Generator().manual_seed(2611)


class ConvNet(torch.nn.Module):
    """The paths that split: a 3x3 im2col convolution in several GEMM calls (a 30x30 plane), a strided one, a
    pointwise one, and a linear layer wide enough to split by columns."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(16, 64, 3, padding=1)
        self.c2 = torch.nn.Conv2d(64, 96, 3, stride=2, padding=1)
        self.pw = torch.nn.Conv2d(96, 128, 1)
        self.fc = torch.nn.Linear(128 * 15 * 15, 300)

    def forward(self, x):
        y = F.relu(self.pw(F.relu(self.c2(F.relu(self.c1(x))))))
        return self.fc(y.flatten(1))


@pytest.fixture(scope="module")
def program():
    torch.manual_seed(5)
    model = ConvNet().eval()
    x = torch.randn(2, 16, 30, 30, generator=g)
    prog = exir.to_edge(torch.export.export(model, (x,))).to_executorch()
    return prog, model, x


class SplitNet(torch.nn.Module):
    """The other passes that split, each large enough to at 2 and 3 threads (compute/parallel.h): depthwise convolutions on every path (3x3 at unit stride,
    3x3 stride 2, 5x5, 3x3 dilated) with ReLU6 fused or not, a residual add, a per-channel scale (broadcast), a
    bias row, max pooling, SiLU, sigmoid, GELU, softmax and layer norm over rows."""

    def __init__(self):
        super().__init__()
        self.dw1 = torch.nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.dw2 = torch.nn.Conv2d(32, 64, 3, stride=2, padding=1, groups=32)
        self.dw3 = torch.nn.Conv2d(64, 64, 5, padding=2, groups=64)
        self.dw4 = torch.nn.Conv2d(64, 64, 3, padding=2, dilation=2, groups=64)
        self.scale = torch.nn.Parameter(torch.rand(1, 64, 1, 1, generator=g) + 0.5)
        self.bias = torch.nn.Parameter(torch.randn(40, generator=g))
        self.norm = torch.nn.LayerNorm(40)

    def forward(self, x):
        y = F.relu6(self.dw1(x)) + x
        y = F.max_pool2d(y, 3, stride=1, padding=1)
        y = self.dw2(y)
        y = F.silu(self.dw3(y)) * self.scale
        y = torch.sigmoid(self.dw4(y)) + y
        z = F.gelu(y.reshape(-1, 40) + self.bias)
        return self.norm(torch.softmax(z, dim=-1) * z)


@pytest.fixture(scope="module")
def split_program():
    torch.manual_seed(6)
    model = SplitNet().eval()
    x = torch.randn(2, 32, 80, 80, generator=g)
    prog = exir.to_edge(torch.export.export(model, (x,))).to_executorch()
    return prog, model, x


@pytest.mark.parametrize("threads", [2, 3])
def test_every_split_pass_gives_the_single_threaded_bits(runtime, split_program, threads):
    prog, model, x = split_program
    one_program = runtime.load(prog.buffer)
    one = one_program.run("forward", [x])[0]
    many_program = runtime.load(prog.buffer, threads=threads)
    many = many_program.run("forward", [x])[0]
    assert torch.equal(one, many)
    want = model(x)
    torch.testing.assert_close(one, want, atol=1e-4 * want.abs().max().item(), rtol=1e-4)
    # Each thread beyond the first takes one more depthwise slice: the largest layer's (dw1, a bordered 82x82
    # plane and 80 rows of 82 for the sweep, with slack) decides the method's scratch.
    one_meta, many_meta = one_program.method_meta("forward"), many_program.method_meta("forward")
    slice_bytes = one_meta["scratch_bytes"]
    assert slice_bytes >= (82 * 82 + 80 * 82) * 4
    assert one_meta["threaded_scratch_bytes"] == slice_bytes
    assert many_meta["threaded_scratch_bytes"] == threads * slice_bytes


@pytest.mark.parametrize("threads", [2, 3])
def test_threads_give_the_single_threaded_bits(runtime, program, threads):
    prog, model, x = program
    one = runtime.load(prog.buffer).run("forward", [x])[0]
    many_program = runtime.load(prog.buffer, threads=threads)
    many = many_program.run("forward", [x])[0]
    assert torch.equal(one, many)
    # And both are eager's answer.
    want = model(x)
    torch.testing.assert_close(one, want, atol=1e-4 * want.abs().max().item(), rtol=1e-4)
    # Memory is planned the same way: without a depthwise convolution, threads add no scratch.
    assert many_program.method_meta("forward") == runtime.load(prog.buffer).method_meta("forward")


def test_threads_must_be_a_count_from_1_to_64(runtime, program):
    prog = program[0]
    for bad in (0, -2, 65, 1.5, True):
        with pytest.raises(ValueError, match=r"threads=.*give a whole number of threads from 1 to 64"):
            runtime.load(prog.buffer, threads=bad)


def test_runner_threads_flag(runner, program, split_program, tmp_path):
    prog, _, x = program
    pte = tmp_path / "convnet.pte"
    prog.save(str(pte))
    outs = {}
    for threads in (1, 2):
        proc = run(runner, pte, [x], str(tmp_path / f"t{threads}"), runs=2, extra_args=["--threads", str(threads)])
        assert proc.returncode == 0, proc.stderr
        outs[threads] = read_outputs(str(tmp_path / f"t{threads}"), [torch.empty(2, 300)])[0]
    assert torch.equal(outs[1], outs[2])
    # The depthwise layers on two threads, each with its own slice of the scratch the runner planned for two.
    split, _, sx = split_program
    spte = tmp_path / "splitnet.pte"
    split.save(str(spte))
    for threads in (1, 2):
        proc = run(runner, spte, [sx], str(tmp_path / f"s{threads}"), runs=2, extra_args=["--threads", str(threads)])
        assert proc.returncode == 0, proc.stderr
        outs[threads] = read_outputs(str(tmp_path / f"s{threads}"), [torch.empty(2 * 64 * 40 * 40 // 40, 40)])[0]
    assert torch.equal(outs[1], outs[2])
    for bad in ("0", "65", "two"):
        proc = run(runner, pte, [x], str(tmp_path / "bad"), extra_args=["--threads", bad])
        assert proc.returncode == 2 and "usage:" in proc.stderr, (bad, proc.stderr)
