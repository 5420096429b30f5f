"""The commit a checkout is at, as chunk results record it: a results directory holds one commit's runs only."""

from __future__ import annotations

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def identity(root: str = ROOT) -> dict:
    """{"commit": full hash of HEAD, "dirty": tracked files differ from it}. Untracked files (venvs, outputs) are
    not the code under test, so they do not count."""

    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def describe(ident: dict) -> str:
    return ident["commit"][:12] + (" with uncommitted changes" if ident["dirty"] else "")
