"""Running bare-metal firmware under qemu-system-arm for the board tests (test_cortex_m55*.py, test_cortex_m4.py):
every run has a host-side time limit besides the firmware's own watchdog, so nothing can hang."""

import os
import re
import shutil
import subprocess

import pytest

from tests.conftest import ROOT

QEMU = shutil.which("qemu-system-arm")
HOST_TIMEOUT_S = 120

needs_qemu_and_arm_gcc = pytest.mark.skipif(
    QEMU is None or shutil.which("arm-none-eabi-gcc") is None,
    reason="qemu-system-arm or gcc-arm-none-eabi missing: run ./setup.sh",
)


def run_firmware(machine, elf, args, cwd, icount=True):
    """Runs firmware on QEMU's `machine` (mps3-an547, mps2-an386); returns the CompletedProcess (stdout holds the
    semihosting output)."""
    # QEMU's option syntax escapes a comma inside a value by doubling it (a shape: input_0.bin@[2,16]).
    semi = ",".join(["enable=on", "target=native", "arg=runner"] + [f"arg={a.replace(',', ',,')}" for a in args])
    cmd = [QEMU, "-M", machine, "-nographic", "-semihosting-config", semi, "-kernel", elf]
    if icount:
        cmd[1:1] = ["-icount", "shift=0"]
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=HOST_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{os.path.basename(elf)} did not finish within {HOST_TIMEOUT_S} s under QEMU: {e.stdout!r}")


def assert_stack_in_region(stdout):
    """startup.cc paints the stack at reset and prints its high-water mark when main returns: the run must have
    stayed inside the stack region (the board's linker script), with a margin for what a run with other inputs
    could add."""
    m = re.search(r"stack: (\d+) bytes used of (\d+) \(high-water mark", stdout)
    assert m, f"no stack report in:\n{stdout[-2000:]}"
    used, region = int(m.group(1)), int(m.group(2))
    assert 0 < used <= region * 3 // 4, f"stack high-water {used} bytes of a {region}-byte region"
    return used


def linker_regions(board, script):
    """{name: (base, size)} of the MEMORY regions in platforms/<board>/<script>."""
    with open(os.path.join(ROOT, "platforms", board, script)) as f:
        text = f.read()
    units = {"K": 1024, "M": 1024 * 1024}
    regions = {}
    for m in re.finditer(r"^\s*(\w+)\s*\(\w+\)\s*:\s*ORIGIN = (0x[0-9A-Fa-f]+), LENGTH = (\w+)", text, re.M):
        length = m.group(3)
        size = int(length[:-1]) * units[length[-1]] if length[-1] in units else int(length, 0)
        regions[m.group(1)] = (int(m.group(2), 16), size)
    return regions


def bazel_bin(*flags):
    return subprocess.run(
        ["bazel", "info", *flags, "bazel-bin"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
