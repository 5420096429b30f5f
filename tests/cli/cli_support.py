"""Running the `ember` CLI in tests: in this process (main(argv), fast, torch already loaded) or as
`python -m ember.cli` in a subprocess with this checkout's packages first (what a user's shell does)."""

import os
import subprocess
import sys

from tests.conftest import ROOT

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.path.join(ROOT, "runtime", "python")])}


def ember(*args, cwd=None, timeout=600, text=True, **kwargs):
    """CompletedProcess of `python -m ember.cli ARGS` (text output unless text=False)."""
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *map(str, args)],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=text,
        timeout=timeout,
        **kwargs,
    )


def one_line_error(r, *names):
    """Asserts a failed command printed one line on stderr, naming each of `names`, and no traceback."""
    stderr = r.stderr if hasattr(r, "stderr") else r.err  # a CompletedProcess, or capsys.readouterr()
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got:\n{stderr}"
    assert "Traceback" not in stderr
    for name in names:
        assert name in lines[0], f"{name!r} not in {lines[0]!r}"
