"""windows_x86_64: the runner cross-built with Debian's mingw-w64 (--config=windows_x86_64) runs zoo models under
wine64 and gives the host runner's outputs and eager PyTorch's. The same kernel sources and x86-64 SIMD paths as
the host, built by another compiler and run on another OS: float32 within 1e-5 of the output's scale; int8 the
host's bytes exactly (every tier performs kernels/quantized's one requantization)."""

import os
import shutil
import subprocess

import pytest
import torch

import exir
from tests.conftest import ROOT, bazel_build
from zoo.models import export_methods
from tests.platforms import cross_parity
from zoo.runner_io import read_outputs, run

MINGW = "/usr/bin/x86_64-w64-mingw32-gcc-posix"
WINE_RUN = os.path.join(ROOT, "platforms", "windows", "run_under_wine.sh")
pytestmark = pytest.mark.skipif(
    not os.path.exists(MINGW) or not (os.path.exists("/usr/lib/wine/wine64") or shutil.which("wine64")),
    reason="mingw-w64 or wine64 missing: run ./setup.sh",
)
MODELS = ["add", "softmax", "mlp", "small_cnn", "transformer_block"]
# The kernels these models need (platforms/windows/parity.yaml), not every one: the mingw build of the full set is
# minutes of CI. EMBER_WINDOWS_ALL_KERNELS=1 builds the full //:runner instead (docs/windows.md).
SELECTION = [] if os.environ.get("EMBER_WINDOWS_ALL_KERNELS") else ["--//:manifest=//platforms/windows:parity.yaml"]


@pytest.fixture(scope="module")
def windows_runner(tmp_path_factory):
    bazel_build("--config=windows_x86_64", *SELECTION, "//:runner")
    out = subprocess.run(
        ["bazel", "info", "--config=windows_x86_64", *SELECTION, "bazel-bin"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # A copy: the next host build moves bazel-bin back, and this binary must stay where the tests look.
    path = tmp_path_factory.mktemp("windows") / "runner.exe"
    shutil.copy(os.path.join(out, "runtime", "runner", "runner"), path)
    wrapper = path.parent / "runner_wine"
    wrapper.write_text(f'#!/bin/sh\nexec {WINE_RUN} {path} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def test_windows_runner_is_a_static_pe(windows_runner):
    """A PE32+ x86-64 executable that imports only system DLLs: no libstdc++, libgcc or winpthread DLL to ship."""
    exe = os.path.join(os.path.dirname(windows_runner), "runner.exe")
    with open(exe, "rb") as f:
        assert f.read(2) == b"MZ"
    dump = subprocess.run(["x86_64-w64-mingw32-objdump", "-p", exe], capture_output=True, text=True, check=True).stdout
    assert (
        "file format pei-x86-64"
        in subprocess.run(["x86_64-w64-mingw32-objdump", "-f", exe], capture_output=True, text=True, check=True).stdout
    )
    dlls = sorted({line.split(":", 1)[1].strip().lower() for line in dump.splitlines() if "DLL Name:" in line})
    assert dlls, "no import table found"
    for dll in dlls:
        assert dll in {"kernel32.dll", "msvcrt.dll", "advapi32.dll", "user32.dll"} or dll.startswith("api-ms-win"), dlls


@pytest.mark.parametrize("name", MODELS)
def test_windows_matches_host_and_eager(windows_runner, runner, tmp_path, name):
    cross_parity.assert_matches_host_and_eager(name, "windows", windows_runner, runner, tmp_path)


def test_windows_threads_give_the_same_outputs(windows_runner, tmp_path):
    """The runner's kernel pool on winpthreads (--threads 2) gives the single-threaded outputs."""
    programs, inputs, module = export_methods("small_cnn")
    pte = tmp_path / "small_cnn.pte"
    exir.to_edge(programs).to_executorch().save(str(pte))
    want = [module(*inputs["forward"])]
    outs = []
    for threads in (1, 2):
        proc = run(
            windows_runner,
            pte,
            inputs["forward"],
            str(tmp_path / f"t{threads}"),
            extra_args=["--threads", str(threads)],
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        outs.append(read_outputs(str(tmp_path / f"t{threads}"), want))
    for a, b in zip(*outs):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_windows_reports_a_missing_program(windows_runner, tmp_path):
    """The loader's error names the path and the C runtime's reason, through the Windows PAL's log to stderr."""
    missing = tmp_path / "absent.pte"
    proc = subprocess.run([windows_runner, str(missing)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert f"cannot open {missing}: No such file or directory" in proc.stderr, proc.stderr[-2000:]


@pytest.mark.parametrize("name", ["mobilenet_v2_005_96"])
def test_windows_int8_gives_the_host_bits(windows_runner, runner, int8_zoo, tmp_path, name):
    q, args, _ = int8_zoo(name)
    pte = tmp_path / f"{name}_int8.pte"
    exir.to_edge(q.exported_program).to_executorch().save(str(pte))
    results = {}
    for target, binary in (("windows", windows_runner), ("host", runner)):
        proc = run(binary, pte, args, str(tmp_path / target))
        assert proc.returncode == 0, f"{target}: {proc.stderr[-2000:]}"
        results[target] = read_outputs(str(tmp_path / target), [q.reference(*args)])
    for w_out, h in zip(results["windows"], results["host"]):
        assert torch.equal(w_out, h), (w_out - h).abs().max()
