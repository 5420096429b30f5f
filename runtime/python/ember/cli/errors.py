"""One-line errors instead of tracebacks: what a user did wrong (a missing file, a bad .pte, a failed build) is
reported as `ember CMD: message` and exit 1. EMBER_DEBUG=1 re-raises, for bugs in Ember itself."""

from __future__ import annotations

import os
import sys


class CliError(Exception):
    """An operation failed; the message names what (file, value, step). Exit code `code` (default 1)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def _one_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    first = text.splitlines()[0]
    return first if isinstance(e, CliError) else f"{type(e).__name__}: {first}"


def guarded(prog: str, fn) -> int:
    """Runs fn() and turns its outcome into an exit code: SystemExit's (argparse usage errors: 2), CliError's, or 1
    for any other exception, printed as one line."""
    try:
        code = fn()
        return 0 if code is None else int(code)
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(f"{prog}: {e.code}", file=sys.stderr)  # a tool's `raise SystemExit("message")`
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except CliError as e:
        if os.environ.get("EMBER_DEBUG"):
            raise
        print(f"{prog}: {_one_line(e)}", file=sys.stderr)
        return e.code
    except OSError as e:
        if os.environ.get("EMBER_DEBUG"):
            raise
        where = f"{e.filename}: " if e.filename else ""
        print(f"{prog}: {where}{e.strerror or _one_line(e)}", file=sys.stderr)
        return 1
    except Exception as e:
        if os.environ.get("EMBER_DEBUG"):
            raise
        print(f"{prog}: {_one_line(e)} (EMBER_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1


def require_file(path: str, what: str = "file") -> str:
    """`path` if it is a readable file, else a CliError naming it."""
    if not os.path.exists(path):
        raise CliError(f"{path}: no such {what}")
    if os.path.isdir(path):
        raise CliError(f"{path}: is a directory, not a {what}")
    return path
