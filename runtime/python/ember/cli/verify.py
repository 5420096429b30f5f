"""Checking a bundled program's (.bpte) test cases: on runner_verify (a checkout's default), or on ember.runtime's
own verifier (`--engine python`; an installed wheel's default, which carries the extension but no runner_verify).
Both print one line per case and a total, and exit as runner_verify does: 0 when every case passes, 1 when a case's
outputs are not within tolerance, 3 when the bundle is refused."""

from __future__ import annotations

import subprocess
import sys

from ember.cli.binaries import find_binary, installed_wheel

ENGINES = ("runner", "python")


def default_engine() -> str:
    return "python" if installed_wheel() else "runner"


def _python(path: str, atol, rtol, method) -> int:
    from ember import runtime

    try:
        cases = runtime.load_bundled(path).verify(atol=atol, rtol=rtol, method=method)
    except (RuntimeError, ValueError) as e:
        print(f"verify: {path}: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 3
    for c in cases:
        what = (
            f"mismatch: {c['mismatch']}"
            if c["mismatch"]
            else f"worst |error| {c['worst_error']:.3g} at output {c['worst_output']} element {c['worst_index']} "
            f"(got {c['actual']:.9g}, expected {c['expected']:.9g}); {c['failed_elements']} of {c['elements']} "
            f"elements beyond atol {c['atol']:g} + rtol {c['rtol']:g}"
        )
        print(f"case {c['method']}/{c['case']}: {'PASS' if c['passed'] else 'FAIL'}  {what}")
    passed = sum(c["passed"] for c in cases)
    print(f"verify: {passed} of {len(cases)} cases passed")
    return 0 if passed == len(cases) else 1


def verify(path: str, engine: str | None, atol=None, rtol=None, method=None, runner=None, quiet=False, extra=()):
    """Exit code of checking `path`'s cases on `engine` (default: default_engine())."""
    if (engine or default_engine()) == "python":
        return _python(path, atol, rtol, method)
    cmd = [runner or find_binary("runner_verify", quiet=quiet), path, "--verify"]
    cmd += ["--method", method] if method else []
    cmd += [x for name, v in (("atol", atol), ("rtol", rtol)) if v is not None for x in (f"--{name}", str(v))]
    sys.stdout.flush()
    return subprocess.run([*cmd, *extra]).returncode
