"""kernels/helium's Float kernels on the Cortex-M55 (qemu-system-arm, mps3-an547), through every path and the calls
they hand to portable (kernels/helium/tests/f32_cases.py): each case's firmware runs its program, and every output
is compared with eager PyTorch and with the host runtime on the same .pte, NaN and inf included, at the zoo's
float tolerance (tests/platforms/test_cortex_m55.py). The kernels' scratch must be exactly what MethodMeta
predicted."""

import os
import re
import shutil
import subprocess

import pytest
import torch

from zoo.runner_io import read_outputs, run
from kernels.helium.tests.f32_cases import CASES
from tests.conftest import ROOT, bazel_build
from tests.platforms.qemu_boards import assert_stack_in_region, needs_qemu_and_arm_gcc
from tests.platforms.test_cortex_m55 import run_m55

pytestmark = needs_qemu_and_arm_gcc


@pytest.fixture(scope="module")
def firmware(tmp_path_factory):
    bazel_build("--config=cortex_m55", "//kernels/helium/tests:f32_firmware")
    out = subprocess.run(
        ["bazel", "info", "--config=cortex_m55", "bazel-bin"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    d = tmp_path_factory.mktemp("m55_f32")
    for name in CASES:
        for suffix, ext in (("", ".elf"), (".pte", ".pte")):
            shutil.copy(os.path.join(out, "kernels", "helium", "tests", name + suffix), d / f"{name}{ext}")
    return d


@pytest.mark.parametrize("name", list(CASES))
def test_helium_f32_matches_eager_and_host(firmware, runner, tmp_path, name):
    case = CASES[name]
    inputs = case.inputs()
    with torch.no_grad():
        want = list(case.make().eval()(*inputs))
    for i, x in enumerate(inputs):
        (tmp_path / f"input_{i}.bin").write_bytes(x.contiguous().numpy().tobytes())
    args = [a for i in range(len(inputs)) for a in ("--input", f"input_{i}.bin")]
    (tmp_path / "m55").mkdir()
    proc = run_m55(str(firmware / f"{name}.elf"), args + ["--output-dir", "m55"], tmp_path)
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
    assert_stack_in_region(proc.stdout)
    used, predicted = map(int, re.search(r"kernel scratch: (\d+) bytes used, (\d+) predicted", proc.stdout).groups())
    assert used == predicted, proc.stdout
    got = read_outputs(str(tmp_path / "m55"), want)

    host = run(runner, firmware / f"{name}.pte", inputs, str(tmp_path / "host"))
    assert host.returncode == 0, host.stderr[-2000:]
    host_out = read_outputs(str(tmp_path / "host"), want)
    for i, (g, h, w) in enumerate(zip(got, host_out, want)):
        finite = w[torch.isfinite(w)] if w.is_floating_point() else w
        scale = max(1.0, finite.abs().max().item()) if finite.numel() else 1.0
        torch.testing.assert_close(g, w, atol=1e-5 * scale, rtol=1e-4, equal_nan=True, msg=lambda m: f"output {i}: {m}")
        torch.testing.assert_close(g, h, atol=1e-5 * scale, rtol=1e-5, equal_nan=True, msg=lambda m: f"output {i}: {m}")
