"""Where the native binaries (runner, runner_verify, the profiling runner, llm_runner, llm_server) are.

find_binary(name) is the one seam between the CLI and how Ember was installed:
- EMBER_<NAME> in the environment (EMBER_RUNNER=/path/to/runner) wins, for any installation;
- an installed wheel packages the binaries: the wheel's locator, `ember._tools.find_binary(name)`, answers;
- in a repository checkout, Bazel builds the target (a no-op when it is up to date) and its output path is used.
"""

from __future__ import annotations

import os
import subprocess
import sys

from ember.cli.errors import CliError

# name -> (Bazel target, path under bazel-bin, extra build flags)
TARGETS = {
    "runner": ("//:runner", "runtime/runner/runner", ()),
    "runner_verify": ("//runtime/runner:runner_verify", "runtime/runner/runner_verify", ()),
    "runner_profiling": ("//:runner", "runtime/runner/runner", ("--config=profiling",)),
    "llm_runner": ("//examples/llm:llm_runner", "examples/llm/llm_runner", ()),
    "llm_server": ("//examples/llm/server:llm_server", "examples/llm/server/llm_server", ()),
}


def checkout_root() -> str | None:
    """The repository this package was imported from, if it was (ember lives in runtime/python/ember)."""
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
    return root if os.path.exists(os.path.join(root, "WORKSPACE")) else None


def installed_wheel() -> bool:
    """Whether this ember is an installed wheel's (ember._tools.installed()), not a checkout's."""
    try:
        from ember import _tools
    except ImportError:
        return False
    return bool(getattr(_tools, "installed", lambda: False)())


def _packaged(name: str) -> str | None:
    """The installed wheel's copy of `name` (ember/_tools.py, issue #36 part 1), or None in a checkout, where the
    CLI builds its own targets below (the wheel's locator would pick other builds: runner_all_backends)."""
    try:
        from ember import _tools
    except ImportError:
        return None
    if not getattr(_tools, "installed", lambda: False)():
        return None
    try:
        return _tools.find_binary(name)
    except (ValueError, RuntimeError) as e:
        raise CliError(f"{e}; set EMBER_{name.upper()}=PATH to use a {name} built elsewhere") from None


def _bazel(root: str, args, quiet: bool) -> str:
    from ember.cli.progress import Progress

    with Progress(f"bazel {' '.join(args[:1] + args[-1:])}", quiet=quiet):
        r = subprocess.run(["bazel", *args], cwd=root, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-3000:])
        raise CliError(f"`bazel {' '.join(args)}` failed (its output is above)")
    return r.stdout.strip()


# Paths found in this process: a build is checked once per binary (a caller running several commands in one
# process, as the tests do, does not pay Bazel's start-up again).
_FOUND: dict = {}


def find_binary(name: str, quiet: bool = False) -> str:
    """The path of native binary `name` (a key of TARGETS), building it first in a checkout."""
    if name not in TARGETS:
        raise CliError(f"unknown binary '{name}'; known: {', '.join(TARGETS)}")
    override = os.environ.get(f"EMBER_{name.upper()}")
    if override:
        if not os.access(override, os.X_OK):
            raise CliError(f"EMBER_{name.upper()}={override}: not an executable file")
        return override
    if name not in _FOUND:
        _FOUND[name] = _packaged(name) or _checkout_binary(name, quiet)
    return _FOUND[name]


def _checkout_binary(name: str, quiet: bool) -> str:
    root = checkout_root()
    if root is None:
        raise CliError(f"no '{name}' binary: this installation packages none; set EMBER_{name.upper()}=PATH")
    target, rel, flags = TARGETS[name]
    _bazel(root, ["build", *flags, target], quiet)
    # Asked, not assumed: bazel-bin is a symlink that a build for another configuration moves.
    bin_dir = _bazel(root, ["info", *flags, "bazel-bin"], quiet=True)
    return os.path.join(bin_dir, rel)
