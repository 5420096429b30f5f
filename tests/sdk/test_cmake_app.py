"""SDK bundles for CMake users (tools/sdk, docs/sdk.md): `bazel build //:sdk` for linux x86-64, linux_aarch64 and
windows_x86_64, each unpacked outside the repository; examples/cmake_app, copied out too, is configured with
Debian's cmake against the bundle (find_package(Ember), ember_register_kernels for the model's selection), built,
and run on a zoo model, whose outputs must match eager PyTorch: the C++ application and its C twin on the bundle's
C API (examples/cmake_app/c_main.c, Ember::c_api). aarch64 runs under qemu-aarch64, Windows x86-64 (mingw-w64)
under wine64. On x86-64 the same application is also built with g++ and `pkg-config ember` (lib/pkgconfig/ember.pc),
without CMake.

The bundles are built with --//:manifest=<the model's selection> so CI compiles only its kernels' dtypes; the full
bundles (every operator and dtype) are `bazel build //:sdk [--config=linux_aarch64]` (docs/sdk.md)."""

import os
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest
import torch

import exir
from tests.conftest import ROOT, bazel_build
from zoo.models import export_methods

MODEL = "small_cnn"
SELECTION = f"//examples/selections:{MODEL}.yaml"
QEMU = shutil.which("qemu-aarch64")
CROSS = os.path.exists("/usr/bin/aarch64-linux-gnu-g++")
MINGW = os.path.exists("/usr/bin/x86_64-w64-mingw32-g++-posix")
WINE = os.path.join(ROOT, "platforms", "windows", "run_under_wine.sh")
TARGETS = {
    "linux_x86_64": [],
    "linux_aarch64": ["--config=linux_aarch64"],
    "windows_x86_64": ["--config=windows_x86_64"],
}
# How each target's application is built (CMake toolchain file) and started here.
TOOLCHAINS = {"linux_aarch64": "aarch64-linux-gnu.cmake", "windows_x86_64": "x86_64-w64-mingw32.cmake"}
RUN_UNDER = {"linux_x86_64": [], "linux_aarch64": [QEMU, "-L", "/usr/aarch64-linux-gnu"], "windows_x86_64": [WINE]}


def build_bundle(target, dest):
    """//:sdk for `target`, unpacked under `dest`; returns the bundle's root."""
    config = TARGETS[target]
    bazel_build(*config, f"--//:manifest={SELECTION}", "//:sdk")
    bin_dir = subprocess.run(
        ["bazel", "info", *config, "bazel-bin"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    with tarfile.open(os.path.join(bin_dir, "tools", "sdk", f"ember_sdk_{target}.tar.gz")) as tar:
        tar.extractall(dest)
        (root,) = {m.name.split("/")[0] for m in tar.getmembers()}
    return os.path.join(dest, root)


def cmake_app(bundle, work, toolchain=None, program=None):
    """examples/cmake_app built against `bundle` for the model's selection (or, with `program`, for the operators
    ember_register_kernels(PROGRAM) reads from it); returns its two binaries: the C++ application and the C one
    (c_main.c, on the bundle's C API)."""
    src = os.path.join(work, "app")
    shutil.copytree(os.path.join(ROOT, "examples", "cmake_app"), src)
    shutil.copy(os.path.join(ROOT, "examples", "selections", f"{MODEL}.yaml"), os.path.join(work, "selection.yaml"))
    build = os.path.join(work, "build")
    configure = ["cmake", "-S", src, "-B", build, f"-DCMAKE_PREFIX_PATH={bundle}"]
    configure += [f"-DEMBER_SELECTION={os.path.join(work, 'selection.yaml')}", "-DCMAKE_BUILD_TYPE=Release"]
    # Registration runs the bundle's codegen, which needs PyYAML and torchgen: the Python that exports the models.
    configure.append(f"-DEMBER_PYTHON={sys.executable}")
    if program:
        configure.append(f"-DEMBER_PROGRAM={program}")
    if toolchain:
        configure.append(f"-DCMAKE_TOOLCHAIN_FILE={os.path.join(src, 'toolchains', toolchain)}")
    # Outside the repository: nothing of the checkout on the way (the bundle's own codegen runs, first on sys.path).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = "/usr/bin:/bin"
    for cmd in (configure, ["cmake", "--build", build, "-j2"]):
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=work, env=env, timeout=600)
        assert r.returncode == 0, f"{' '.join(cmd)}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    exe = ".exe" if toolchain == TOOLCHAINS["windows_x86_64"] else ""
    return os.path.join(build, "ember_app" + exe), os.path.join(build, "ember_c_app" + exe)


@pytest.mark.parametrize("target", list(TARGETS))
def test_cmake_app_matches_eager(tmp_path_factory, target):
    if target == "linux_aarch64" and (QEMU is None or not CROSS):
        pytest.skip("qemu-aarch64 or g++-aarch64-linux-gnu missing: run ./setup.sh")
    if target == "windows_x86_64" and not MINGW:
        pytest.skip("mingw-w64 missing: run ./setup.sh")
    work = str(tmp_path_factory.mktemp(f"sdk_{target}"))
    assert not work.startswith(ROOT)
    bundle = build_bundle(target, work)
    programs, inputs, module = export_methods(MODEL)
    pte = os.path.join(work, f"{MODEL}.pte")
    exir.to_edge(programs).to_executorch().save(pte)
    # x86-64 registers what the program uses (PROGRAM), the cross targets a selection file (MANIFEST).
    if target in TOOLCHAINS:
        binaries = list(cmake_app(bundle, work, TOOLCHAINS[target]))
    else:
        binaries = list(cmake_app(bundle, work, program=pte))
    args = [pte, os.path.join(work, "out")]
    for i, x in enumerate(inputs["forward"]):
        path = os.path.join(work, f"in{i}.bin")
        x.detach().numpy().astype(np.float32).tofile(path)
        args.append(path)
    want = module(*inputs["forward"])
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    if target == "linux_x86_64":
        binaries.append(pkg_config_app(bundle, work))
    for b in binaries:
        cmd = RUN_UNDER[target] + [b] + args
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        for i, w in enumerate(want):
            got = torch.from_numpy(np.fromfile(os.path.join(work, f"out{i}.bin"), dtype=np.float32)).reshape(w.shape)
            scale = max(1.0, w.abs().max().item())
            torch.testing.assert_close(got, w.detach(), atol=1e-5 * scale, rtol=1e-4)
            os.remove(os.path.join(work, f"out{i}.bin"))


def pkg_config_app(bundle, work):
    """The same application built without CMake: register_kernels.py, then g++ with ember.pc's flags."""
    registry = os.path.join(work, "pc_kernel_registry.cc")
    register = [sys.executable, os.path.join(bundle, "share", "ember", "register_kernels.py")]
    r = subprocess.run(register + ["--selection", os.path.join(work, "selection.yaml"), "-o", registry], text=True)
    assert r.returncode == 0
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(bundle, "lib", "pkgconfig"))
    flags = subprocess.run(
        ["pkg-config", "--cflags", "--libs", "ember"], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    binary = os.path.join(work, "ember_app_pc")
    cmd = [
        "g++",
        "-std=c++17",
        "-O2",
        os.path.join(work, "app", "main.cc"),
        registry,
        "-Wl,--gc-sections",
        "-o",
        binary,
    ]
    r = subprocess.run(cmd + flags, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return binary
