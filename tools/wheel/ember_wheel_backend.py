"""Ember's PEP 517 build backend (pyproject.toml names it through backend-path): `python -m build --wheel` builds
the native parts with Bazel and writes a wheel of the Python packages, those parts and the data the packages read.

Only the standard library: the wheel is a zip file with a .dist-info folder (PEP 427), nothing a build-time
dependency would add. What goes in, and where, is docs/wheel.md; the layout is this file's tables.

EMBER_WHEEL_BAZEL (default "bazel") names the Bazel to run; EMBER_WHEEL_BAZEL_ARGS adds options to every build
(e.g. "--disk_cache=/path").
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from typing import Dict, Iterator, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST_NAME = "ember"  # the distribution (pip install ember-<version>-...whl); the import names are below

# Python packages: repository folder -> folder in site-packages. examples/llm's Python side is ember.llm_export
# (runtime/python/ember/llm_export resolves to the same files in a checkout), so the wheel adds no top-level
# `examples` package; the other names are the ones a checkout imports.
PACKAGES = [
    ("exir", "exir"),
    ("schema", "schema"),
    ("selective_build", "selective_build"),
    ("codegen", "codegen"),
    ("devtools", "devtools"),
    ("backends", "backends"),
    ("runtime/python/ember", "ember"),
    ("examples/llm", "ember/llm_export"),  # its top folder only: the subfolders are C++ and tools
]
FLAT = {"examples/llm"}
# Single modules outside those packages that they import (kernels/ is a namespace package: no __init__.py).
MODULES = ["kernels/portable/llm_ops.py", "kernels/quantized/ops.py"]
# Package data: files of these kinds inside the packages above are read at run time (schema/*.fbs, *.yaml).
DATA_SUFFIXES = (".py", ".yaml", ".fbs")
SKIP_DIRS = {"test", "tests", "__pycache__", "llm_export"}  # llm_export: the checkout's shim, replaced by the files
# Files read by repository-relative path (schema/resources.py finds them under ember/_data when installed).
DATA_GLOBS = [("kernels", "kernels.yaml"), ("platforms", "board.yaml")]

# Native parts: (bazel configs, target, folder in the wheel, or the file's path there when it is renamed). The
# XNNPACK backend is in the default extension and the runner (--config=xnnpack: ExecuTorch XNNPACK programs run
# after pip install). The portable-kernels extension, the LLM ones and the LLM tools are the default
# configuration's, the traced extension and runner the --config=profiling ones: the builds CI's tests already
# make, so building the wheel there mostly reuses them.
NATIVE = [
    (("--config=xnnpack",), "//runtime/python:_ember_runtime.so", "ember/_lib"),
    # The runner with every kernel and backend, installed as ember/bin/runner.
    (("--config=xnnpack",), "//runtime/runner:runner_all_backends", "ember/bin/runner"),
    ((), "//runtime/python:_ember_runtime_portable.so", "ember/_lib"),
    ((), "//examples/llm:_ember_llm.so", "ember/_lib"),
    ((), "//examples/llm/chat:_ember_chat.so", "ember/_lib"),
    ((), "//examples/llm:llm_runner", "ember/bin"),
    ((), "//examples/llm/server:llm_server", "ember/bin"),
    ((), "//runtime/runner:runner_verify", "ember/bin"),  # runs a .bpte's test cases (`ember verify`)
    (("--config=profiling",), "//runtime/python:_ember_runtime_profiling.so", "ember/_lib"),
    # The runner with the event tracer (`runner --profile out.etdp`), as ember/bin/runner_profiling.
    (("--config=profiling",), "//runtime/runner:runner", "ember/bin/runner_profiling"),
]
# flatc serializes every .pte (exir/serialize/flatc.py); the wheel carries Debian's, which the programs are checked
# with, so an installed Ember needs no flatbuffers-compiler.
FLATC = "/usr/bin/flatc"

# Third-party code inside the wheel -> the file holding its licence (.dist-info/licenses/third_party/<name>/).
# auditwheel repair grafts the shared libraries the native parts link into the wheel (libXNNPACK, libpthreadpool,
# libcpuinfo; libcpp-httplib with its OpenSSL and brotli, while zlib is one of the system libraries manylinux lets
# a wheel use), so their notices are here too; tests/wheel checks that every grafted library has one.
THIRD_PARTY = [
    ("XNNPACK", "/usr/share/doc/libxnnpack0/copyright"),
    ("pthreadpool", "/usr/share/doc/libpthreadpool0/copyright"),
    ("cpuinfo", "/usr/share/doc/libcpuinfo0/copyright"),
    ("flatbuffers", "/usr/share/doc/libflatbuffers-dev/copyright"),
    ("flatc", "/usr/share/doc/flatbuffers-compiler/copyright"),
    ("cpp-httplib", "/usr/share/doc/libcpp-httplib0.11/copyright"),
    # cpp-httplib's own libraries, grafted in with it for bin/llm_server (its zlib is left to the system's).
    ("OpenSSL", "/usr/share/doc/libssl3/copyright"),
    ("brotli", "/usr/share/doc/libbrotli1/copyright"),
    ("pybind11", "pybind11"),  # the .venv's pybind11 wheel's LICENSE, found at build time
]


def _project() -> dict:
    """pyproject.toml's [project] table: the dependencies, Python requirement and console scripts, defined there
    once."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _version() -> str:
    with open(os.path.join(ROOT, "VERSION")) as f:
        return f.read().strip()


def _extension_python() -> str:
    """The interpreter the extensions are built against (third_party/python/python_configure.bzl picks the same)."""
    return os.environ.get("EMBER_PYTHON") or os.path.join(ROOT, ".venv", "bin", "python3")


def _ask_python(code: str) -> str:
    r = subprocess.run([_extension_python(), "-c", code], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{_extension_python()} failed: {r.stderr[-2000:]}")
    return r.stdout.strip()


def _tag() -> str:
    """cp3XX-cp3XX-linux_x86_64, for the interpreter the extensions are built against (not necessarily the one
    running this backend: `build` may run it from its own venv)."""
    return _ask_python(
        "import sys, sysconfig; py = f'cp{sys.version_info.major}{sys.version_info.minor}'; "
        "print(f\"{py}-{py}-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}\")"
    )


def _bazel(*args: str) -> str:
    cmd = [os.environ.get("EMBER_WHEEL_BAZEL", "bazel"), *args]
    r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed (exit {r.returncode}); its messages are above")
    return r.stdout


def _build_native() -> List[Tuple[str, str]]:
    """Builds every native part, one Bazel run per configuration; returns (built file, path in the wheel)."""
    extra = shlex.split(os.environ.get("EMBER_WHEEL_BAZEL_ARGS", ""))
    out = []
    for configs in dict.fromkeys(c for c, _, _ in NATIVE):
        targets = [(t, d) for c, t, d in NATIVE if c == configs]
        print(f"ember wheel: bazel build {' '.join(configs)} {' '.join(t for t, _ in targets)}", file=sys.stderr)
        _bazel("build", *configs, *extra, *(t for t, _ in targets))
        bin_dir = _bazel("info", *configs, *extra, "bazel-bin").strip()
        for target, dest in targets:
            package, name = target[2:].split(":")
            out.append(
                (os.path.join(bin_dir, package, name), dest if dest.startswith("ember/bin/") else f"{dest}/{name}")
            )
    out.append((FLATC, "ember/bin/flatc"))
    return out


def _python_files() -> Iterator[Tuple[str, str]]:
    for src, dst in PACKAGES:
        base = os.path.join(ROOT, src)
        for folder, dirs, files in os.walk(base):
            dirs[:] = [] if src in FLAT else sorted(d for d in dirs if d not in SKIP_DIRS)
            for f in sorted(files):
                if f.endswith(DATA_SUFFIXES):
                    rel = os.path.relpath(os.path.join(folder, f), base)
                    yield os.path.join(folder, f), f"{dst}/{rel.replace(os.sep, '/')}"
    for rel in MODULES:
        yield os.path.join(ROOT, rel), rel
    for top, name in DATA_GLOBS:
        for d in sorted(os.listdir(os.path.join(ROOT, top))):
            path = os.path.join(ROOT, top, d, name)
            if os.path.exists(path):
                yield path, f"ember/_data/{top}/{d}/{name}"
    yield os.path.join(ROOT, "VERSION"), "ember/_data/VERSION"


def _pybind11_license() -> str:
    """pybind11's LICENSE from the distribution whose headers the extensions compile (in the extensions' venv)."""
    return _ask_python(
        "import importlib.metadata as m, os; d = m.distribution('pybind11'); "
        "print(next(str(d.locate_file(f)) for f in d.files if os.path.basename(str(f)).startswith('LICENSE')))"
    )


def _licenses() -> List[Tuple[str, str]]:
    """(file, name under .dist-info/licenses/). Ember itself has no LICENSE file in the repository yet."""
    out = []
    for name, path in THIRD_PARTY:
        if name == "pybind11":
            path = _pybind11_license()
        if not os.path.exists(path):
            raise RuntimeError(f"licence notice of {name} not found at {path} (./setup.sh installs the Debian package)")
        out.append((path, f"third_party/{name}/{os.path.basename(path)}"))
    out.append(
        (os.path.join(os.path.dirname(os.path.abspath(__file__)), "THIRD_PARTY_NOTICES.md"), "THIRD_PARTY_NOTICES.md")
    )
    return out


def _metadata(version: str, licenses: List[str]) -> str:
    lines = [
        "Metadata-Version: 2.4",
        f"Name: {DIST_NAME}",
        f"Version: {version}",
        "Summary: Ember: PyTorch programs exported to .pte and run on a small C++ runtime, with the XNNPACK backend",
        f"Requires-Python: {_project()['requires-python']}",
        *(f"License-File: {name}" for name in licenses),
        *(f"Requires-Dist: {r}" for r in _project()["dependencies"]),
        "Description-Content-Type: text/markdown",
        "",
    ]
    with open(os.path.join(ROOT, "docs", "wheel.md")) as f:
        return "\n".join(lines) + "\n" + f.read()


def _record_line(name: str, data: bytes) -> List[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def _write_wheel(path: str, files: List[Tuple[str, str]], dist_info: Dict[str, bytes]) -> None:
    records = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for src, name in files:
            with open(src, "rb") as f:
                data = f.read()
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # reproducible: no build-time stamps
            executable = os.access(src, os.X_OK) and not name.endswith(".py")
            info.external_attr = (0o755 if executable else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            records.append(_record_line(name, data))
        for name, data in dist_info.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            records.append(_record_line(name, data))
        record_name = f"{_dist_info_dir()}/RECORD"
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(records + [[record_name, "", ""]])
        z.writestr(zipfile.ZipInfo(record_name, date_time=(2020, 1, 1, 0, 0, 0)), buf.getvalue())


def _dist_info_dir() -> str:
    return f"{DIST_NAME}-{_version()}.dist-info"


def _dist_info(tag: str) -> Dict[str, bytes]:
    d = _dist_info_dir()
    licenses = _licenses()
    out = {f"{d}/licenses/{name}": open(src, "rb").read() for src, name in licenses}
    out[f"{d}/METADATA"] = _metadata(_version(), [f"licenses/{name}" for _, name in licenses]).encode()
    out[f"{d}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: ember_wheel_backend\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()
    )
    scripts = "".join(f"{name} = {target}\n" for name, target in _project()["scripts"].items())
    out[f"{d}/entry_points.txt"] = f"[console_scripts]\n{scripts}".encode()
    out[f"{d}/top_level.txt"] = "".join(sorted({dst.split("/")[0] + "\n" for _, dst in PACKAGES})).encode()
    return out


# PEP 517 hooks.


def get_requires_for_build_wheel(config_settings=None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None) -> str:
    d = os.path.join(metadata_directory, _dist_info_dir())
    os.makedirs(d, exist_ok=True)
    for name, data in _dist_info(_tag()).items():
        path = os.path.join(metadata_directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    return _dist_info_dir()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    tag = _tag()
    files = _build_native() + list(_python_files())
    name = f"{DIST_NAME}-{_version()}-{tag}.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    tmp = os.path.join(wheel_directory, name + ".part")
    _write_wheel(tmp, files, _dist_info(tag))
    shutil.move(tmp, os.path.join(wheel_directory, name))
    return name
