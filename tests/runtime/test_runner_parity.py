"""The C++ runtime (through //:runner) against eager PyTorch on every zoo model and method, and its errors."""

import subprocess

import pytest
import torch

import exir
from zoo.models import ZOO, export_methods
from zoo.runner_io import read_outputs, run

# float32: the portable kernels sum in a different order than ATen's (and BN is folded into conv weights), so
# results agree to rounding: 1e-5 of the output's scale absolute, 1e-4 relative.
ATOL, RTOL = 1e-5, 1e-4


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_parity(runner, tmp_path, name):
    programs, inputs, module = export_methods(name)
    prog = exir.to_edge(programs).to_executorch()
    pte = tmp_path / f"{name}.pte"
    prog.save(str(pte))
    for method in prog.methods:
        want = getattr(module, method)(*inputs[method])
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        work = tmp_path / method
        proc = run(runner, pte, inputs[method], str(work), method=method)
        assert proc.returncode == 0, proc.stderr
        # The runtime's bookkeeping is exactly what MethodMeta predicted.
        line = next(l for l in proc.stdout.splitlines() if "method allocator" in l)
        used, predicted = int(line.split()[3]), int(line.split()[6])
        assert used == predicted
        # So is the kernels' scratch: the runner holds exactly MethodMeta::scratch_bytes (no guessed size), and
        # load takes all of it when any kernel needs scratch (the optimized convolutions' im2col panels and
        # depthwise planes do).
        line = next(l for l in proc.stdout.splitlines() if "kernel scratch" in l)
        used, predicted = int(line.split()[3]), int(line.split()[6])
        assert used == predicted
        convolves = any(isinstance(m, torch.nn.Conv2d) and m.kernel_size != (1, 1) for m in module.modules())
        assert (predicted > 0) == convolves, line
        for got, w in zip(read_outputs(str(work), want), want):
            torch.testing.assert_close(got, w, atol=ATOL * max(1.0, w.abs().max().item()), rtol=RTOL)


def test_mutable_buffer_carries_over_runs(runner, tmp_path):
    programs, inputs, module = export_methods("running_mean")
    prog = exir.to_edge(programs).to_executorch()
    pte = tmp_path / "rm.pte"
    prog.save(str(pte))
    for _ in range(3):
        want = module(*inputs["forward"])
    proc = run(runner, pte, inputs["forward"], str(tmp_path / "w"), runs=3)
    assert proc.returncode == 0, proc.stderr
    torch.testing.assert_close(read_outputs(str(tmp_path / "w"), [want])[0], want)


@pytest.fixture(scope="module")
def linear_pte(tmp_path_factory):
    programs, inputs, _ = export_methods("linear")
    path = tmp_path_factory.mktemp("linear") / "linear.pte"
    exir.to_edge(programs).to_executorch().save(str(path))
    return path


def test_wrong_input_shape_is_refused(runner, linear_pte, tmp_path):
    # With its shape (FILE@[1,5]): the shape is refused, named against the program's.
    proc = run(runner, linear_pte, [torch.zeros(1, 5)], str(tmp_path))
    assert proc.returncode == 4
    assert "input 0 has shape [1, 4]; got [1, 5]" in proc.stderr
    # A bare file of the wrong length: its byte count is.
    proc = subprocess.run(
        [runner, str(linear_pte), "--input", str(tmp_path / "input_0.bin")], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 4
    assert "input 0 needs exactly 16 bytes" in proc.stderr


def test_truncated_program_is_refused(runner, linear_pte, tmp_path):
    data = linear_pte.read_bytes()
    bad = tmp_path / "truncated.pte"
    bad.write_bytes(data[: len(data) // 3])
    proc = run(runner, bad, [torch.zeros(1, 4)], str(tmp_path))
    assert proc.returncode == 3
    assert "truncated" in proc.stderr


def test_corrupted_program_never_crashes(runner, linear_pte, tmp_path):
    data = bytearray(linear_pte.read_bytes())
    import random

    rng = random.Random(7)
    program_size = int.from_bytes(data[16:24], "little")
    for trial in range(40):
        corrupt = bytearray(data)
        for _ in range(8):
            corrupt[rng.randrange(8, program_size)] = rng.randrange(256)
        bad = tmp_path / f"corrupt{trial}.pte"
        bad.write_bytes(bytes(corrupt))
        proc = run(runner, bad, [torch.zeros(1, 4)], str(tmp_path / f"c{trial}"))
        # Refused with a message, or (if the flipped bytes were inert) run: never a signal.
        assert proc.returncode in (0, 3, 4, 5), (trial, proc.returncode, proc.stderr[-500:])
        assert proc.returncode >= 0


def test_not_a_program_is_refused(runner, tmp_path):
    bad = tmp_path / "readme.pte"
    bad.write_bytes(b"# not a program at all, but long enough to have a header\n" * 4)
    proc = run(runner, bad, [], str(tmp_path))
    assert proc.returncode == 3
    assert "expected 'ET12'" in proc.stderr


def test_missing_kernel_is_named(runner, tmp_path):
    # A custom operator (examples/custom_ops) whose kernel library //:runner does not link.
    from examples.custom_ops.scaled_tanh import ScaledTanhModel

    x = torch.randn(2, 3)
    # to_executorch refuses it first (tests/exir/test_kernel_check.py); exported anyway, the runner names it.
    prog = exir.to_edge(torch.export.export(ScaledTanhModel(), (x,))).to_executorch(
        exir.ExecutorchBackendConfig(check_kernels=False)
    )
    pte = tmp_path / "custom.pte"
    prog.save(str(pte))
    proc = run(runner, pte, [x], str(tmp_path / "w"))
    assert proc.returncode == 3
    assert "operator ember_example::scaled_tanh.out is not in this build" in proc.stderr
