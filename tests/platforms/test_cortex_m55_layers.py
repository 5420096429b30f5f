"""The Helium kernels against the host's, byte for byte, on the layer benchmark's program (bench/cortex_m): the
anchor table's int8 layers (CMSIS-NN's shapes), the zoo's, and edge shapes chosen to reach every path of the MVE
kernels (dilation, groups, channel multipliers, stride 3, padding wider than the kernel, odd widths and channel
counts, taps past 16, biases whose zero-point correction needs 64 bits). The same program, inputs from the
runners' seeded generator (the same values on every target), run by the M55 firmware (Helium kernels, the
default) and by the host runner (portable and quantized kernels)."""

import json
import os
import shutil
import subprocess

from tests.conftest import bazel_build
from tests.platforms.qemu_boards import assert_stack_in_region, bazel_bin, needs_qemu_and_arm_gcc, run_firmware

pytestmark = needs_qemu_and_arm_gcc


def test_m55_helium_layers_equal_the_host_byte_for_byte(runner, tmp_path):
    bazel_build("--config=cortex_m55", "//bench/cortex_m:layers")
    out = os.path.join(bazel_bin("--config=cortex_m55"), "bench", "cortex_m")
    for name in ("layers", "layers.pte", "layers.json"):
        shutil.copy(os.path.join(out, name), tmp_path / name)
    with open(tmp_path / "layers.json") as f:
        manifest = json.load(f)
    cases = manifest["cases"]
    assert {c["group"] for c in cases} >= {"anchor", "zoo", "edge", "wide bias"}

    (tmp_path / "m55").mkdir()
    proc = run_firmware(
        "mps3-an547", str(tmp_path / "layers"), ["--input", "random:7", "--output-dir", "m55"], tmp_path
    )
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stdout[-3000:]}"
    assert_stack_in_region(proc.stdout)
    used, predicted = proc.stdout.split("kernel scratch: ")[1].split(" predicted")[0].split(" bytes used, ")
    assert int(used) == int(predicted) > 0, proc.stdout  # the planes and patches, as MethodMeta predicted them

    (tmp_path / "host").mkdir()
    host = subprocess.run(
        [runner, str(tmp_path / "layers.pte"), "--input", "random:7", "--output-dir", str(tmp_path / "host")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert host.returncode == 0, host.stderr[-2000:]
    for i, case in enumerate(cases):
        got = (tmp_path / "m55" / f"output_{i}.bin").read_bytes()
        want = (tmp_path / "host" / f"output_{i}.bin").read_bytes()
        assert len(got) > 0 and got == want, case["name"]
