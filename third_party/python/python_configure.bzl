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
    py_include, pybind_include, ext_suffix = res.stdout.strip().split("\n")
    # Build-time tools (codegen) run on this interpreter. A wrapper script, not a symlink: a venv's python finds
    # its pyvenv.cfg next to the path it was started from.
    ctx.file("python3", "#!/bin/sh\nexec %s \"$@\"\n" % python, executable = True)
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
