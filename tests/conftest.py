"""Fixtures shared by the end-to-end tests: the C++ runtime, built by Bazel, as a binary and as a Python module."""

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Under tools/sanitize.sh this process runs with the sanitizer's runtime preloaded, for the instrumented extension;
# the tools the tests start (bazel, compilers, runners) must not inherit it.
if os.environ.get("EMBER_SANITIZER"):
    os.environ.pop("LD_PRELOAD", None)


def bazel_build(*targets):
    r = subprocess.run(["bazel", "build", *targets], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, f"bazel build {' '.join(targets)} failed:\n{r.stderr[-3000:]}"


@pytest.fixture(scope="session")
def runner():
    """//:runner (every portable kernel), built and located."""
    bazel_build("//:runner")
    # Resolved now: bazel-bin is a symlink that a later build for another platform would move.
    return os.path.realpath(os.path.join(ROOT, "bazel-bin", "runtime", "runner", "runner"))


@pytest.fixture(scope="session")
def runtime():
    """The ember.runtime Python API over freshly built extensions (kernels="portable" has its own; ember.runtime
    builds an extension only when it is missing, so without this a stale one would be tested)."""
    bazel_build("//runtime/python:_ember_runtime.so", "//runtime/python:_ember_runtime_portable.so")
    from ember import runtime as rt

    return rt


@pytest.fixture(scope="session")
def int8_zoo():
    """zoo.quantized.quantize_zoo, once per model in a session: calibration is most of what an int8 test
    costs, and the host (tests/quantization) and Cortex-M55 (tests/platforms) tests share the same models. Seeded,
    so a cached result is the one a fresh call would give; callers must not modify what it returns."""
    from zoo.quantized import quantize_zoo

    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = quantize_zoo(name)
        return cache[name]

    return get
