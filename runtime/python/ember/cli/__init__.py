"""`ember`: one command line over Ember's tools (docs/cli.md).

Each subcommand lives in a module of its own, imported only when it runs, so `ember --help` loads no torch.
Exit codes, for every subcommand: 0 success; 1 the operation failed (a one-line message names the file, value or
step at fault); 2 usage error (argparse's). `run` and the `llm` binaries keep their own codes above 2 (the
runner's 3 program refused, 4 input refused, 5 execution failed), so scripts can tell those apart.
"""

from __future__ import annotations

import sys

# name -> (module under ember.cli, one-line summary). Modules are imported on dispatch only.
COMMANDS = {
    "export": ("export", "export a model (zoo name, FILE.py:NAME or module:NAME) to a .pte program"),
    "inspect": ("passthrough", "methods, inputs/outputs, operators, instructions and memory plan of a .pte"),
    "run": ("run", "run a .pte (or verify a .bpte) on the C++ runner"),
    "profile": ("profile", "time every operator of a .pte on the profiling runner and report per operator/module"),
    "bundle": ("bundle", "export a model with test cases and expected outputs (.bpte), and verify it"),
    "size": ("size", "binary size report (sections, kernels) of runner binaries or any ELF"),
    "select": ("select", "write a selective-build manifest (operators, dtypes, features) for .pte programs"),
    "bench": ("bench", "benchmarks against ExecuTorch, ONNX Runtime and eager PyTorch (bench/README.md)"),
    "explore": ("explore", "open a .pte in Model Explorer: graph, memory plan, profile and numeric overlays"),
    "llm": ("llm", "language models: export | chat | serve"),
}


def _version() -> str:
    import os

    import ember

    # ember.__version__ once the wheel's part lands (one number, from VERSION); until then VERSION itself.
    if getattr(ember, "__version__", None):
        return ember.__version__
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "VERSION")
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def usage() -> str:
    width = max(len(n) for n in COMMANDS)
    rows = "\n".join(f"  {n:<{width}}  {summary}" for n, (_, summary) in COMMANDS.items())
    return (
        "usage: ember [--version] COMMAND [ARGS...]\n\n"
        f"commands:\n{rows}\n\n"
        "`ember COMMAND --help` describes each. Exit codes: 0 success, 1 the operation failed, 2 usage error\n"
        "(run/llm keep the native binaries' codes above 2). EMBER_DEBUG=1 shows Python tracebacks.\n"
    )


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        sys.stderr.write(usage())
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd in ("-h", "--help", "help"):
        sys.stdout.write(usage())
        return 0
    if cmd == "--version":
        print(f"ember {_version()}")
        return 0
    if cmd not in COMMANDS:
        sys.stderr.write(f"ember: unknown command '{cmd}'\n\n{usage()}")
        return 2
    import importlib
    import warnings

    from ember.cli.errors import guarded

    # torch.export's own deprecation chatter (as pytest.ini filters it): nothing a user of the CLI can act on.
    warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)

    module = importlib.import_module(f"ember.cli.{COMMANDS[cmd][0]}")
    return guarded(f"ember {cmd}", lambda: module.main(rest, f"ember {cmd}"))
