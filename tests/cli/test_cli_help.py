"""Every `ember` command and subcommand answers --help with exit 0; no command, an unknown one or a bad flag is a
usage error (2); `ember --help` loads no torch (each subcommand's modules load on dispatch only)."""

import os
import subprocess
import sys

import pytest

from ember.cli import COMMANDS, main
from tests.cli.cli_support import ENV
from tests.conftest import ROOT

ALL = [[c] for c in COMMANDS] + [["llm", s] for s in ("export", "chat", "serve")]


@pytest.mark.parametrize("command", ALL, ids=" ".join)
def test_help_exits_0(command, capsys):
    assert main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: ember {' '.join(command)}"), out[:200]


def test_top_level_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {c} " in out for c in COMMANDS)


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["export"], ["run", "--runs", "x", "m.pte"], ["llm", "talk"]])
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "usage" in capsys.readouterr().err


def test_help_loads_no_torch():
    code = (
        "import sys; from ember.cli import main; code = main(['--help']); "
        "print(code, sorted(m for m in ('torch', 'exir', 'devtools', 'zoo') if m in sys.modules))"
    )
    r = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=60)
    assert r.stdout.splitlines()[-1] == "0 []", r.stdout + r.stderr


def test_version_is_the_repositorys(capsys):
    assert main(["--version"]) == 0
    with open(os.path.join(ROOT, "VERSION")) as f:
        assert capsys.readouterr().out == f"ember {f.read().strip()}\n"
