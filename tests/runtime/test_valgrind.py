"""Repeated load / execute / destroy cycles leave nothing behind: valgrind's memcheck (leak check on every kind,
plus its invalid-access and uninitialised-value checks) over tests/runtime/load_cycles.cc and the runner, and
the harness's own check that file descriptors and mappings do not grow. A build with a leak planted in it shows
the checks catch one. About 15 s."""

import os
import shutil
import subprocess

import pytest

from tests.conftest import ROOT, bazel_build

VALGRIND = shutil.which("valgrind")
pytestmark = pytest.mark.skipif(VALGRIND is None, reason="valgrind missing: run ./setup.sh")
MEMCHECK = [
    VALGRIND or "valgrind",
    "--leak-check=full",
    "--show-leak-kinds=all",
    "--errors-for-leak-kinds=all",
    "--error-exitcode=99",
    "-q",
]
PROGRAMS = ["mlp", "small_cnn", "transformer_block", "running_mean"]


@pytest.fixture(scope="module")
def built():
    bazel_build("//tests/runtime:load_cycles", "//tests/runtime:load_cycles_leaky", "//tests/runtime:zoo_programs")
    out = os.path.realpath(os.path.join(ROOT, "bazel-bin", "tests", "runtime"))
    return {
        "cycles": os.path.join(out, "load_cycles"),
        "leaky": os.path.join(out, "load_cycles_leaky"),
        "programs": [os.path.join(out, f"{p}.pte") for p in PROGRAMS],
    }


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def test_cycles_leave_no_descriptors_or_mappings(built):
    proc = run([built["cycles"], "20", *built["programs"]])
    assert proc.returncode == 0, proc.stderr
    assert "20 cycles of 4 programs" in proc.stdout


def test_cycles_under_memcheck_leak_nothing(built):
    proc = run(MEMCHECK + [built["cycles"], "--no-mapping-check", "3", *built["programs"]])
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "definitely lost" not in proc.stderr and "Invalid" not in proc.stderr, proc.stderr[-4000:]


def test_checks_catch_a_planted_leak(built):
    proc = run([built["leaky"], "3", built["programs"][0]])
    assert proc.returncode == 3
    assert "cycle 1 left 1 more file descriptors and 4096 more bytes mapped" in proc.stderr
    proc = run(MEMCHECK + [built["leaky"], "--no-mapping-check", "2", built["programs"][0]])
    assert proc.returncode != 0 and "128 bytes in 2 blocks are definitely lost" in proc.stderr, proc.stderr[-3000:]


def test_runner_frees_everything_on_every_exit(runner, built, tmp_path):
    short = tmp_path / "short.bin"
    short.write_bytes(b"\0" * 3)
    from tests.runtime.hostile import set_pool_size

    huge = tmp_path / "huge.pte"
    with open(built["programs"][0], "rb") as f:
        huge.write_bytes(set_pool_size(f.read(), 1, 1 << 46))
    for args, status in [
        ([built["programs"][1], "--runs", "3", "--warmup", "1"], 0),
        ([built["programs"][0], "--input", str(short)], 4),
        ([str(huge)], 3),
    ]:
        proc = run(MEMCHECK + [runner, *args])
        assert proc.returncode == status, proc.stderr[-3000:]
        assert "definitely lost" not in proc.stderr and "still reachable" not in proc.stderr, proc.stderr[-3000:]
