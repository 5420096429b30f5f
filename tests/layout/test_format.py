"""The tree is laid out by its formatters and passes its lint: clang-format (.clang-format) over every C/C++ file,
ruff format and ruff check (ruff.toml) over every Python file, each with the version requirements.txt pins (another
version lays code out differently). The tools come from .venv, which ./setup.sh fills: without them these tests fail
rather than skip, since a skipped check lets an unformatted tree through CI."""

import os
import re
import subprocess

import pytest

from tests.conftest import ROOT

VENV_BIN = os.path.join(ROOT, ".venv", "bin")
# What clang-format lays out; .clang-format-ignore names the files it leaves alone (generated tables, vendored code).
CXX_PATTERNS = ("*.c", "*.cc", "*.h", "*.inc")
FIX = {
    "clang-format": ".venv/bin/clang-format -i $(git ls-files '*.c' '*.cc' '*.h' '*.inc')",
    "ruff": ".venv/bin/ruff format . && .venv/bin/ruff check --fix .",
}


def _pinned(package):
    """The version requirements.txt pins for `package` (`package==X`)."""
    with open(os.path.join(ROOT, "requirements.txt")) as f:
        for line in f:
            m = re.match(rf"{re.escape(package)}==(\S+)", line.strip())
            if m:
                return m.group(1)
    raise AssertionError(f"requirements.txt pins no version of {package}")


def _tool(name):
    """Path of .venv's `name`, checked to be the pinned version."""
    path = os.path.join(VENV_BIN, name)
    want = _pinned(name)
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is missing: run ./setup.sh (it installs {name}=={want} from requirements.txt)")
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    if not re.search(rf"\b{re.escape(want)}\b", out):
        pytest.fail(f"{path} is {out.strip()!r}, requirements.txt pins {want}: run ./setup.sh")
    return path


def _files(patterns):
    """The repository's files matching `patterns`: tracked ones and new ones not ignored by .gitignore."""
    r = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *patterns],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, f"git ls-files failed (the check lists the files through git):\n{r.stderr}"
    return sorted({f for f in r.stdout.split("\0") if f and os.path.exists(os.path.join(ROOT, f))})


def _report(what, r, fix):
    out = (r.stdout + r.stderr).strip().splitlines()
    # The head shows the first faults; the tail holds the tools' summaries (how many files).
    shown = "\n".join(out if len(out) <= 60 else out[:50] + [f"... ({len(out) - 55} lines left out)"] + out[-5:])
    return f"{what} failed (exit {r.returncode}); to fix: {fix}\n{shown}"


def test_cxx_is_clang_formatted():
    clang_format = _tool("clang-format")
    files = _files(CXX_PATTERNS)
    assert len(files) > 100, f"expected the runtime's C/C++ sources, found {len(files)} files"
    r = subprocess.run(
        [clang_format, "--dry-run", "--Werror", *files], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, _report("clang-format --dry-run --Werror", r, FIX["clang-format"])


def test_python_is_ruff_formatted():
    ruff = _tool("ruff")
    r = subprocess.run([ruff, "format", "--check", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, _report("ruff format --check", r, FIX["ruff"])


def test_python_passes_ruff_check():
    ruff = _tool("ruff")
    r = subprocess.run([ruff, "check", "--no-fix", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, _report("ruff check", r, FIX["ruff"])


def test_checks_catch_a_misformatted_file(tmp_path):
    """The checks see real faults: a C++ and a Python file laid out against the repository's configs fail them, and
    pass once formatted."""
    clang_format, ruff = _tool("clang-format"), _tool("ruff")
    cc, py = tmp_path / "probe.cc", tmp_path / "probe.py"
    cc.write_text("int  twice( int x ) {return 2*x;}\n")
    py.write_text("import os\ndef twice( x ):\n  return 2*x\n")
    cxx_check = [clang_format, f"--style=file:{os.path.join(ROOT, '.clang-format')}", "--dry-run", "--Werror", str(cc)]
    ruff_config = ["--config", os.path.join(ROOT, "ruff.toml")]

    def run(*args):
        return subprocess.run(args, capture_output=True, text=True, timeout=60)

    assert run(*cxx_check).returncode != 0
    assert run(ruff, "format", *ruff_config, "--check", str(py)).returncode != 0
    lint = run(ruff, "check", *ruff_config, "--no-fix", str(py))
    assert lint.returncode != 0 and "F401" in lint.stdout, lint.stdout  # the unused `import os`

    assert run(clang_format, f"--style=file:{os.path.join(ROOT, '.clang-format')}", "-i", str(cc)).returncode == 0
    assert run(ruff, "format", *ruff_config, str(py)).returncode == 0
    assert run(*cxx_check).returncode == 0, cc.read_text()
    assert run(ruff, "format", *ruff_config, "--check", str(py)).returncode == 0, py.read_text()
