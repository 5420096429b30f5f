"""Running the `ember` CLI in tests: in this process (main(argv), fast, torch already loaded) or as
`python -m ember.cli` in a subprocess with this checkout's packages first (what a user's shell does)."""

import os
import subprocess
import sys

from tests.conftest import ROOT

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.path.join(ROOT, "runtime", "python")])}


def ember(*args, cwd=None, timeout=600, **kwargs):
    """CompletedProcess of `python -m ember.cli ARGS` (text output)."""
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *map(str, args)],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def one_line_error(r, *names):
    """Asserts a failed command printed one line on stderr, naming each of `names`, and no traceback."""
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got:\n{r.stderr}"
    assert "Traceback" not in r.stderr
    for name in names:
        assert name in lines[0], f"{name!r} not in {lines[0]!r}"
