"""Run the public model zoo through Ember and write its status table (markdown).

    python -m zoo.public.status                       # CI sizes; prints the table
    python -m zoo.public.status --readme              # ... and replaces README.md's status section
    python -m zoo.public.status --size full --out zoo/public/STATUS_full.md   # the slow tier
    python -m zoo.public.status resnet18 bert         # some models only
    python -m zoo.public.status --expected            # ... and print tests/zoo's EXPECTED_FAILURES

Each model is exported with exir and run on the C++ runtime through ember.runtime, on the default build
(optimized + portable kernels) and on the portable-only build, and compared with eager PyTorch. The Bazel-built
Python extensions must exist (`bazel build //runtime/python:_ember_runtime.so
//runtime/python:_ember_runtime_portable.so`; this command builds them when missing).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import dataclasses
import gc
import json
import os
import subprocess
import sys
from typing import Tuple

from zoo.public.check import RELATIVE_TOLERANCE, Result, check
from zoo.public.models import MODELS, SIZES, source_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README_BEGIN = "<!-- public-zoo-status:begin (python -m zoo.public.status --readme) -->"
README_END = "<!-- public-zoo-status:end -->"
# ExecuTorch 1.5.1's portable kernel library: operator overloads (../shared/reference/executorch-and-peers-facts.md).
EXECUTORCH_PORTABLE_OVERLOADS = 209


def portable_overloads() -> Tuple[int, int]:
    """(overloads of PyTorch's and ExecuTorch's namespaces, overloads of Ember's own) in the portable library."""
    from codegen.manifest import load_manifest

    decls = load_manifest(
        os.path.join(ROOT, "kernels", "portable", "kernels.yaml"),
        namespace="ember::portable",
        library="kernels/portable",
    )
    ops = {d.op for d in decls}
    own = {op for op in ops if op.split("::")[0] in ("ember", "ember_llm", "ember_quantized")}
    return len(ops - own), len(own)


def _yes_no(v):
    return "-" if v is None else ("yes" if v else "**no**")


def table(results, size, commit=None) -> str:
    """The status table of `results`; `commit` is the one they ran at (default: this checkout's HEAD)."""
    passing = sum(r.ok for r in results)
    commit = commit or (
        subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        or "unknown"
    )
    lines = [
        f"{passing} of {len(results)} public models export and match eager on both builds "
        f"({size} sizes, relative error at most {RELATIVE_TOLERANCE:g} of the output's largest magnitude; "
        f"{datetime.date.today().isoformat()}, commit {commit}). "
        "Operators: Ember's portable library has {} ATen and ExecuTorch operator overloads (and {} of its own), "
        "ExecuTorch's {}.".format(*portable_overloads(), EXECUTORCH_PORTABLE_OVERLOADS),
        "",
        "| model | source | export | portable parity | default parity | max error | failing operator or error |",
        "|---|---|---|---|---|---:|---|",
    ]
    for r in results:
        err = max(r.max_error.values()) if r.max_error else None
        cause = r.cause.replace("|", "\\|")
        lines.append(
            f"| {r.name} | {r.source} | {'yes' if r.export_ok else '**no**'} | "
            f"{_yes_no(r.parity.get('portable'))} | {_yes_no(r.parity.get('default'))} | "
            f"{'-' if err is None else f'{err:.1e}'} | {cause} |"
        )
    missing = [n for n in MODELS if n not in {r.name for r in results}]
    if missing:
        lines += ["", f"Not in this run: {', '.join(missing)}."]
    groups = collections.defaultdict(list)
    for r in results:
        for cause in r.causes():
            groups[cause].append(r.name)
    if groups:
        lines += ["", "Failures by cause (an operator with no kernel, or the error as raised):", ""]
        for cause, names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"- `{cause}`: {', '.join(names)}")
    return "\n".join(lines) + "\n"


def replace_readme_section(text: str) -> None:
    path = os.path.join(ROOT, "README.md")
    readme = open(path).read()
    begin, end = readme.find(README_BEGIN), readme.find(README_END)
    if begin < 0 or end < begin:
        raise SystemExit(
            f"status: README.md has no section between '{README_BEGIN}' and '{README_END}'; "
            "add those two lines where the table belongs"
        )
    readme = readme[: begin + len(README_BEGIN)] + "\n" + text + readme[end:]
    open(path, "w").write(readme)


def build_extensions() -> bool:
    """Builds the two Python extensions the zoo runs on (Bazel does nothing when they are up to date: a stale
    extension would report stale kernels); False, with Bazel's error printed, when that fails."""
    targets = ["//runtime/python:_ember_runtime.so", "//runtime/python:_ember_runtime_portable.so"]
    build = subprocess.run(["bazel", "build", *targets], cwd=ROOT, capture_output=True, text=True)
    if build.returncode != 0:
        print(f"status: `bazel build {' '.join(targets)}` failed:\n{build.stderr[-3000:]}", file=sys.stderr)
    return build.returncode == 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m zoo.public.status", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("models", nargs="*", help=f"default: all {len(MODELS)}")
    ap.add_argument("--size", choices=SIZES, default="ci")
    ap.add_argument("--out", help="write the table to this file")
    ap.add_argument("--readme", action="store_true", help="replace README.md's public zoo status section")
    ap.add_argument(
        "--expected",
        action="store_true",
        help="also print EXPECTED_FAILURES for tests/zoo/test_public_zoo.py from this run's failures",
    )
    ap.add_argument("--json", help="also save the results here, after each model (runs can be split and merged)")
    ap.add_argument(
        "--from-json",
        nargs="+",
        metavar="FILE",
        help="run nothing: write the table from results saved with --json (in the zoo's order)",
    )
    args = ap.parse_args(argv)
    if args.from_json:
        saved = {}
        for path in args.from_json:
            try:
                for d in json.load(open(path)):
                    saved[d["name"]] = Result(**d)
            except (OSError, ValueError, TypeError, KeyError) as e:
                print(f"status: cannot read results from {path}: {e}", file=sys.stderr)
                return 1
        results = [saved[n] for n in MODELS if n in saved]
        return _write(args, results, results[0].size if results else args.size)
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        print(f"status: unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)}", file=sys.stderr)
        return 2
    if not build_extensions():
        return 1
    from ember import runtime

    results = []
    for name in args.models or list(MODELS):
        r = check(MODELS[name], args.size, runtime, source=source_of(MODELS[name]))
        print(f"status: {name}: {'ok' if r.ok else r.cause} ({r.seconds:.1f} s)", file=sys.stderr, flush=True)
        results.append(r)
        if args.json:
            with open(args.json, "w") as f:
                json.dump([dataclasses.asdict(x) for x in results], f, indent=1)
        gc.collect()
    return _write(args, results, args.size)


def _write(args, results, size, written_by=None, commit=None) -> int:
    """Writes the report of `results` where `args` (out, readme, expected) say; `written_by` names the command
    (default: this one's serial run), `commit` the one they ran at (default: HEAD)."""
    text = table(results, size, commit)
    if args.out:
        written_by = written_by or f"`python -m zoo.public.status --size {size} --out {args.out}`"
        with open(args.out, "w") as f:
            f.write(f"# Public model zoo, {size} sizes\n\nWritten by {written_by}.\n\n" + text)
    if args.readme:
        replace_readme_section(text)
    print(text)
    if args.expected:
        print("EXPECTED_FAILURES = {")
        for r in results:
            if not r.ok:
                print(f"    {r.name!r}: {r.causes()!r},")
        print("}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
