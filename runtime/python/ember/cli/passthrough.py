"""`ember inspect`: devtools.inspect's main(argv) as it is; `call` runs other devtools the same way.

devtools' tools return 2 when the file they were given is refused (unreadable, not a .pte); their usage errors
exit 2 through argparse's SystemExit instead. A returned 2 is the operation failing, so here it becomes 1."""

from __future__ import annotations

import importlib

TOOLS = {"inspect": "devtools.inspect"}


def call(module: str, argv, prog: str) -> int:
    """A devtools tool's main, its refusals as 1."""
    code = importlib.import_module(module).main(argv, prog=prog)
    return 1 if code == 2 else code


def main(argv, prog: str) -> int:
    return call(TOOLS[prog.split()[-1]], argv, prog)
