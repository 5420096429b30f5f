"""Exposes the Python headers and pybind11 of the project's virtual environment as @local_python.

Nothing is downloaded: the rule asks the venv's interpreter where its headers are and links them in.
The interpreter is $EMBER_PYTHON if set, else <workspace>/.venv/bin/python3 (made by ./setup.sh).
"""

_QUERY = """
import sysconfig
try:
    import pybind11
except ImportError:
    raise SystemExit("pybind11 is not installed in this interpreter")
print(sysconfig.get_paths()["include"])
print(pybind11.get_include())
print(sysconfig.get_config_var("EXT_SUFFIX"))
import hashlib, importlib.metadata, sys
dists = sorted("%s==%s" % (d.metadata["Name"], d.version) for d in importlib.metadata.distributions())
print(hashlib.sha256(chr(10).join([sys.version] + dists).encode()).hexdigest())
"""

def _python_configure_impl(ctx):
    python = ctx.os.environ.get("EMBER_PYTHON", "")
    if not python:
        python = str(ctx.path(Label("//:WORKSPACE")).dirname) + "/.venv/bin/python3"
    if not ctx.path(python).exists:
        fail("Python interpreter %s not found: run ./setup.sh first (or set EMBER_PYTHON)." % python)
    res = ctx.execute([python, "-c", _QUERY])
    if res.return_code != 0:
        fail("%s could not report its headers: %s\nRun ./setup.sh to install pybind11." % (python, res.stderr))
    py_include, pybind_include, ext_suffix, environment = res.stdout.strip().split("\n")

    # Build-time tools (codegen, export) run on this interpreter. A wrapper script, not a symlink: a venv's python
    # finds its pyvenv.cfg next to the path it was started from. The wrapper's text is an input of every action
    # that runs Python, so it names no checkout's path (a shared remote cache would otherwise miss those actions
    # between two checkouts): it reaches the interpreter through a symlink beside itself, and carries what should
    # change those actions' keys instead, a digest of the Python version and the installed packages.
    interpreter = ctx.path(python)
    ctx.symlink(interpreter.dirname.dirname, "interpreter")
    ctx.file("python3", """#!/bin/sh
# Python environment: %s
exec "$(dirname "$(readlink -f "$0")")/interpreter/%s/%s" "$@"
""" % (environment, interpreter.dirname.basename, interpreter.basename), executable = True)
    ctx.symlink(py_include, "python_include")
    ctx.symlink(pybind_include, "pybind11_include")
    ctx.file("BUILD.bazel", """
package(default_visibility = ["//visibility:public"])

exports_files(["python3"])

cc_library(
    name = "python_headers",
    hdrs = glob(["python_include/**/*.h"]),
    includes = ["python_include"],
)

cc_library(
    name = "pybind11",
    hdrs = glob(["pybind11_include/**/*.h"]),
    includes = ["pybind11_include"],
    deps = [":python_headers"],
)
""")
    ctx.file("defs.bzl", "PYTHON_EXTENSION_SUFFIX = %r\n" % ext_suffix)

python_configure = repository_rule(
    implementation = _python_configure_impl,
    environ = ["EMBER_PYTHON"],
    local = True,
)
