"""Files the Python packages open at run time, found in an installed wheel first and in a repository checkout second.

The wheel (tools/wheel, docs/wheel.md) installs exir, schema, ... side by side in site-packages, with the files they
read under ember/_data/ by their repository-relative paths (kernels/<lib>/kernels.yaml, platforms/<board>/board.yaml)
and the native tools under ember/bin/. In a checkout the same parent folder is the repository root, where the files
are at those paths and `ember` is the front-door script, not a package folder.
"""

from __future__ import annotations

import os
from typing import Optional

# site-packages when installed, the repository root in a checkout.
_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGED = os.path.join(_PARENT, "ember")


def installed() -> bool:
    """Whether these packages come from the wheel (its data folder sits beside them) rather than a checkout."""
    return os.path.isdir(os.path.join(_PACKAGED, "_data"))


def repo_path(*parts: str) -> str:
    """The file or folder at repository-relative `parts`: the wheel's copy when installed, else the checkout's."""
    if installed():
        return os.path.join(_PACKAGED, "_data", *parts)
    return os.path.join(_PARENT, *parts)


def packaged_binary(name: str) -> Optional[str]:
    """ember/bin/<name> from the wheel, or None in a checkout (or when the wheel does not carry it)."""
    path = os.path.join(_PACKAGED, "bin", name)
    return path if installed() and os.path.exists(path) else None
