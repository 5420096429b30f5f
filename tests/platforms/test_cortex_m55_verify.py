"""A bundled program on the Cortex-M55: firmware built with ember_firmware(verify = True) embeds the zoo MLP's
.bpte (two seeded cases, expected outputs from eager; zoo/bundle.py) and runs its test cases on the board
under qemu-system-arm with --verify, through the same C++ verifier as the host (runtime/bundled)."""

import os
import re
import shutil
import subprocess

import pytest

from tests.conftest import ROOT, bazel_build
from tests.platforms.test_cortex_m55 import assert_stack_in_region, run_m55

pytestmark = pytest.mark.skipif(
    shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None,
    reason="qemu-system-arm or gcc-arm-none-eabi missing: run ./setup.sh",
)


@pytest.fixture(scope="module")
def verify_firmware(tmp_path_factory):
    bazel_build("--config=cortex_m55", "//examples/firmware:mlp_verify")
    out = subprocess.run(
        ["bazel", "info", "--config=cortex_m55", "bazel-bin"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    d = tmp_path_factory.mktemp("m55_verify")
    for f in ("mlp_verify", "mlp.bpte"):
        shutil.copy(os.path.join(out, "examples", "firmware", f), d / f)
    return d


def test_m55_verifies_the_embedded_bundle(verify_firmware):
    proc = run_m55(str(verify_firmware / "mlp_verify"), ["--verify"], str(verify_firmware))
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
    cases = re.findall(r"case forward/(\d): (PASS|FAIL)  worst \|error\| (\S+) at output 0 element (\d+)", proc.stdout)
    assert [(c, v) for c, v, _, _ in cases] == [("0", "PASS"), ("1", "PASS")], proc.stdout
    assert all(float(e) < 1e-5 for _, _, e, _ in cases)
    assert "verify: 2 of 2 cases passed" in proc.stdout
    assert_stack_in_region(proc.stdout)


def test_m55_verify_firmware_still_runs_normally(verify_firmware):
    # Without --verify it is the ordinary runner over the bundle's program.
    proc = run_m55(str(verify_firmware / "mlp_verify"), ["--runs", "1"], str(verify_firmware))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "program: mlp.bpte (embedded" in proc.stdout and "output 0: Float [1, 10]" in proc.stdout
