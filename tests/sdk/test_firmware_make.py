"""The Cortex-M55 SDK bundle from a plain Makefile (examples/firmware_make, docs/sdk.md): `bazel build //:sdk
--config=cortex_m55` unpacked outside the repository, the example copied out and built with Debian's
arm-none-eabi-gcc against it (per-model registration by the bundle's register_kernels.py), the firmware run under
qemu-system-arm -M mps3-an547 with its input read and its output written over semihosting; the output must match
eager PyTorch.

Built with --//:manifest=<the model's selection>, so CI compiles only its kernels' dtypes (docs/sdk.md has the
full bundle's command)."""

import os
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import torch

import exir
from tests.conftest import ROOT, bazel_build
from tests.platforms.qemu_boards import needs_qemu_and_arm_gcc, run_firmware
from zoo.models import export_methods

MODEL = "small_cnn"
CONFIG = ["--config=cortex_m55", f"--//:manifest=//examples/selections:{MODEL}.yaml"]


def build_bundle(dest):
    bazel_build(*CONFIG, "//:sdk")
    bin_dir = subprocess.run(
        ["bazel", "info", *CONFIG, "bazel-bin"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    with tarfile.open(os.path.join(bin_dir, "tools", "sdk", "ember_sdk_cortex_m55.tar.gz")) as tar:
        tar.extractall(dest)
        (root,) = {m.name.split("/")[0] for m in tar.getmembers()}
    return os.path.join(dest, root)


@needs_qemu_and_arm_gcc
def test_firmware_makefile_matches_eager(tmp_path):
    work = str(tmp_path)
    assert not work.startswith(ROOT)
    bundle = build_bundle(work)
    app = os.path.join(work, "app")
    shutil.copytree(os.path.join(ROOT, "examples", "firmware_make"), app)
    selection = os.path.join(work, "selection.yaml")
    shutil.copy(os.path.join(ROOT, "examples", "selections", f"{MODEL}.yaml"), selection)
    programs, inputs, module = export_methods(MODEL)
    pte = os.path.join(work, f"{MODEL}.pte")
    exir.to_edge(programs).to_executorch().save(pte)

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = "/usr/bin:/bin"
    make = ["make", f"EMBER_SDK={bundle}", f"MODEL={pte}", f"SELECTION={selection}", f"PYTHON={sys.executable}"]
    r = subprocess.run(make, cwd=app, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"

    (x,) = inputs["forward"]
    x.detach().numpy().astype(np.float32).tofile(os.path.join(work, "in0.bin"))
    proc = run_firmware("mps3-an547", os.path.join(app, "build", "app.elf"), ["in0.bin"], cwd=work)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    want = module(x).detach()
    got = torch.from_numpy(np.fromfile(os.path.join(work, "output_0.bin"), dtype=np.float32)).reshape(want.shape)
    torch.testing.assert_close(got, want, atol=1e-5 * max(1.0, want.abs().max().item()), rtol=1e-4)
