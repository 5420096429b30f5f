import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def runner():
    """Builds //:runner (all portable kernels) with Bazel and returns its path."""
    r = subprocess.run(["bazel", "build", "//:runner"], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, f"bazel build //:runner failed:\n{r.stderr[-3000:]}"
    path = os.path.join(ROOT, "bazel-bin", "runtime", "runner", "runner")
    assert os.path.exists(path)
    return path
