"""android_arm64 and ios_arm64: `bazel build //:runner --config=<target>` gives one static library of the runtime
and the selected kernels, in the target's object format. With no NDK or Xcode here it cannot be linked into an
app, so this checks what a link would need: the archive defines the runtime's entry points and asks the platform
for nothing but ISO C functions and the PAL (no C++ runtime, no glibc-only symbols), and selection shrinks it."""

import os
import shutil
import subprocess

import pytest

from tests.conftest import ROOT, bazel_build

pytestmark = pytest.mark.skipif(
    shutil.which("clang") is None or shutil.which("llvm-nm") is None, reason="clang/llvm missing: run ./setup.sh"
)

TARGETS = {"android_arm64": "elf64-littleaarch64", "ios_arm64": "Mach-O arm64"}
# What the platform's C library must provide: standard C (string, stdio formatting, math) and nothing else.
ISO_C = {
    "memcpy",
    "memmove",
    "memset",
    "memcmp",
    "strcmp",
    "strncmp",
    "strlen",
    "snprintf",
    "vsnprintf",
    "exp",
    "expf",
    "log",
    "logf",
    "pow",
    "powf",
    "sqrt",
    "sqrtf",
    "tanh",
    "tanhf",
    "erf",
    "erff",
    "frexp",
    "ldexp",
    "floor",
    "floorf",
    "ceil",
    "ceilf",
    "round",
    "roundf",
    "nearbyint",
    "nearbyintf",
    "lround",
    "fmod",
    "fmodf",
    "exp2",
    "exp2f",
    "log1p",
    "log1pf",
    "expm1",
    "expm1f",
    "fabs",
    "fabsf",
    "rint",
    "rintf",
    "log2",
    "log2f",
    "log10",
    "log10f",
    "sin",
    "sinf",
    "cos",
    "cosf",
    "tan",
    "tanf",
    "asin",
    "asinf",
    "acos",
    "acosf",
    "atan",
    "atanf",
    "atan2",
    "atan2f",
    "sinh",
    "sinhf",
    "cosh",
    "coshf",
    "asinh",
    "asinhf",
    "acosh",
    "acoshf",
    "atanh",
    "atanhf",
}
PAL = {"ember_pal_log", "ember_pal_ticks_ns", "ember_pal_abort", "ember_pal_init"}
# What each platform's compiler itself calls into (stack protector; Darwin's zeroing and its 16-byte pattern fill,
# which clang emits for loops that store one repeated non-zero value): part of every libc there.
COMPILER_RUNTIME = {
    "android_arm64": {"__stack_chk_fail", "__stack_chk_guard"},
    "ios_arm64": {"__stack_chk_fail", "__stack_chk_guard", "bzero", "memset_pattern16"},
}


def build_archive(config, *flags):
    bazel_build(f"--config={config}", *flags, "//:runner")
    out = subprocess.run(
        ["bazel", "info", f"--config={config}", *flags, "bazel-bin"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return os.path.join(out, "platforms", "mobile", "libruntime_archive.a")


def symbols(archive, which):
    out = subprocess.run(
        ["llvm-nm", which, "--format=posix", archive], capture_output=True, text=True, check=True
    ).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and not line.endswith(":"):
            names.add(parts[0])
    return names


def text_bytes(archive):
    out = subprocess.run(["llvm-size", "-B", archive], capture_output=True, text=True, check=True).stdout
    return sum(int(line.split()[0]) for line in out.splitlines()[1:] if line.split() and line.split()[0].isdigit())


# Which target's archive holds every operator: the one that checks every kernel's needs. iOS, since Darwin differs
# most (clang, Mach-O, int64_t as long long); android_arm64 builds the MLP selection only (the every-kernel aarch64
# compile is linux_aarch64's, in the bazel stage), so CI compiles the operator set for one mobile target, not two.
EVERY_OPERATOR = "ios_arm64"


@pytest.fixture(scope="module", params=sorted(TARGETS))
def archive(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(request.param)
    mlp = shutil.copy(build_archive(request.param, "--//:manifest=//examples/selections:mlp.yaml"), d / "mlp.a")
    everything = None
    if request.param == EVERY_OPERATOR:
        everything = str(shutil.copy(build_archive(request.param), d / "all.a"))
    return request.param, everything, str(mlp)


def test_object_format(archive):
    target, everything, mlp = archive
    out = subprocess.run(["llvm-readobj", "--file-headers", everything or mlp], capture_output=True, text=True).stdout
    assert f"Format: {TARGETS[target]}" in out


def test_needs_only_iso_c_and_the_pal(archive):
    target, everything, mlp = archive
    everything = everything or mlp
    strip = (lambda s: s[1:] if s.startswith("_") else s) if target == "ios_arm64" else (lambda s: s)
    defined = {strip(s) for s in symbols(everything, "--defined-only")}
    needed = {strip(s) for s in symbols(everything, "--undefined-only")} - defined
    extra = needed - ISO_C - PAL - COMPILER_RUNTIME[target]
    assert extra == set(), f"{target}: the archive needs {sorted(extra)}"
    # The runtime's entry points are there (C++ names, demangled by their pieces).
    assert any("Program4load" in s for s in defined) and any("registered_kernels" in s for s in defined)


def test_selection_shrinks_the_archive(archive):
    target, everything, mlp = archive
    if everything is None:
        pytest.skip(f"{target} builds the MLP selection only (EVERY_OPERATOR is {EVERY_OPERATOR})")
    full, small = text_bytes(everything), text_bytes(mlp)
    print(f"{target}: all operators {full} B of code, MLP selection {small} B")
    assert small < full / 2
