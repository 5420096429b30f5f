"""Where Ember's native parts are: the Python extensions and the command-line tools (the runner, runner_verify,
runner_profiling, the LLM runner and server; exir finds flatc through schema.resources).

Installed from the wheel, they are files of this package (ember/_lib/ and ember/bin/, built with the XNNPACK
backend; docs/wheel.md) and nothing is ever built. In a repository checkout they are Bazel's outputs, built on first
use when missing.

    from ember._tools import find_binary
    subprocess.run([find_binary("runner"), "--model", "model.pte"])
"""

from __future__ import annotations

import os
import subprocess
from typing import Sequence

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
# runtime/python/ember -> the repository root, in a checkout.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(_PACKAGE)))

# name -> the Bazel target that builds it in a checkout, and its configuration. The runner is the one with every
# kernel and the XNNPACK backend, as the wheel's ember/bin/runner, so delegated programs run on it in both places.
BINARIES = {
    "runner": ("//runtime/runner:runner_all_backends", ("--config=xnnpack",)),
    "llm_runner": ("//examples/llm:llm_runner", ()),
    "llm_server": ("//examples/llm/server:llm_server", ()),
    "runner_verify": ("//runtime/runner:runner_verify", ()),
    "runner_profiling": ("//runtime/runner:runner", ("--config=profiling",)),
}


def installed() -> bool:
    """Whether this is the wheel's ember (its native parts packaged beside it) rather than a checkout's."""
    return os.path.isdir(os.path.join(_PACKAGE, "_lib"))


def _bazel_output(target: str, configs: Sequence[str] = ()) -> str:
    """The file `target` builds in the checkout's bazel-bin for `configs`, built first when missing."""
    package, name = target[2:].split(":")
    if configs:
        info = subprocess.run(["bazel", "info", *configs, "bazel-bin"], cwd=REPO_ROOT, capture_output=True, text=True)
        if info.returncode != 0:
            raise RuntimeError(f"`bazel info {' '.join(configs)} bazel-bin` failed:\n{info.stderr[-2000:]}")
        bin_dir = info.stdout.strip()
    else:
        bin_dir = os.path.join(REPO_ROOT, "bazel-bin")
    path = os.path.join(bin_dir, package, name)
    if not os.path.exists(path):
        cmd = ["bazel", "build", *configs, target]
        r = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(path):
            raise RuntimeError(f"{target} is not built and `{' '.join(cmd)}` failed:\n{r.stderr[-2000:]}")
    return os.path.realpath(path)


def find_extension(target: str, configs: Sequence[str] = ()) -> str:
    """The path of the Python extension `target` builds (e.g. "//runtime/python:_ember_runtime.so"): the wheel's copy
    when installed, else the checkout's bazel-bin one for `configs` (built when missing)."""
    if installed():
        path = os.path.join(_PACKAGE, "_lib", target.rpartition(":")[2])
        if not os.path.exists(path):
            raise RuntimeError(
                f"this ember wheel carries no {os.path.basename(path)} (looked in {os.path.dirname(path)})"
            )
        return path
    return _bazel_output(target, configs)


def find_binary(name: str) -> str:
    """The path of Ember's native tool `name` (a key of BINARIES): ember/bin/<name> when installed, else
    the checkout's bazel-bin one (built when missing)."""
    if name not in BINARIES:
        raise ValueError(f"no Ember tool named {name!r}; known: {sorted(BINARIES)}")
    if installed():
        path = os.path.join(_PACKAGE, "bin", name)
        if not os.path.exists(path):
            raise RuntimeError(f"this ember wheel carries no {name} (looked in {os.path.dirname(path)})")
        return path
    target, configs = BINARIES[name]
    return _bazel_output(target, configs)
