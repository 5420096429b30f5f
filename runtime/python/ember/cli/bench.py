"""`ember bench`: bench/run itself (bench/README.md), flags and exit codes as they are, with a progress line under
its log: the elapsed time and the step it last logged. -q/--quiet (not a bench/run flag) turns the line off."""

from __future__ import annotations

from ember.cli.errors import CliError
from ember.cli.progress import Progress


def main(argv, prog: str) -> int:
    try:
        from bench import __main__ as bench_main
        from bench import harness
    except ImportError:
        raise CliError("the benchmarks come with a repository checkout (bench/); this installation has none") from None

    if any(a in ("-h", "--help") for a in argv):
        return bench_main.main(argv, prog=prog)
    quiet = any(a in ("-q", "--quiet") for a in argv)
    argv = [a for a in argv if a not in ("-q", "--quiet")]
    original = harness.log
    with Progress(prog, quiet=quiet) as progress:
        if progress.enabled:
            # bench logs every step through harness.log: each line still printed, the latest one shown as the step.
            def log(msg: str):
                progress.message(f"bench: {msg}")
                progress.stage(msg.split(" (")[0])

            harness.log = log
        try:
            return bench_main.main(argv, prog=prog)
        finally:
            harness.log = original
