"""Ember's Python runtime API: `ember.runtime` loads .pte programs and runs them on the C++ runtime."""

import os as _os


def _version() -> str:
    """The one version number: the repository's VERSION file, which the wheel's metadata is made from
    (tools/wheel/ember_wheel_backend.py). Installed, it is read back from that metadata; in a checkout from VERSION."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    if _os.path.isdir(_os.path.join(here, "_lib")):  # the wheel's ember (ember._tools.installed)
        import importlib.metadata

        return importlib.metadata.version("ember")
    with open(_os.path.join(_os.path.dirname(_os.path.dirname(_os.path.dirname(here))), "VERSION")) as f:
        return f.read().strip()


__version__ = _version()
