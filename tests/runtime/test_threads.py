"""Threads (runtime/threads, `--threads N` in the runner, `threads=N` in ember.runtime.load): kernels/optimized's GEMM
and convolutions split their work across a pool, and every output is bit for bit the single-threaded one (each
element is summed in the same order, only on another thread), so these tests compare with torch.equal, not a
tolerance. Memory needs are the same whatever the thread count. Speed is the benchmark's business (bench/run)."""
import pytest
import torch
import torch.nn.functional as F

import exir
from examples.runner_io import read_outputs, run

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
    # Memory is planned the same way: threads add no scratch.
    assert many_program.method_meta("forward") == runtime.load(prog.buffer).method_meta("forward")


def test_threads_must_be_a_count_from_1_to_64(runtime, program):
    prog = program[0]
    for bad in (0, -2, 65, 1.5, True):
        with pytest.raises(ValueError, match=r"threads=.*give a whole number of threads from 1 to 64"):
            runtime.load(prog.buffer, threads=bad)


def test_runner_threads_flag(runner, program, tmp_path):
    prog, _, x = program
    pte = tmp_path / "convnet.pte"
    prog.save(str(pte))
    outs = {}
    for threads in (1, 2):
        proc = run(runner, pte, [x], str(tmp_path / f"t{threads}"), runs=2, extra_args=["--threads", str(threads)])
        assert proc.returncode == 0, proc.stderr
        outs[threads] = read_outputs(str(tmp_path / f"t{threads}"), [torch.empty(2, 300)])[0]
    assert torch.equal(outs[1], outs[2])
    for bad in ("0", "65", "two"):
        proc = run(runner, pte, [x], str(tmp_path / "bad"), extra_args=["--threads", bad])
        assert proc.returncode == 2 and "usage:" in proc.stderr, (bad, proc.stderr)
