"""Check, before building anything, that a runtime provides what programs need.

    python -m selective_build.check model.pte [...] [--selection selected_operators.yaml]

Against the kernel manifests (codegen.defs' libraries), and against a selection if given: every operator must
have a kernel, and every call's dtypes must be ones that kernel computes (and that the selection keeps), and the
selection must keep every runtime feature the programs use (codegen/features.py). Exit 0 when all is provided; 1
with one line per missing operator, dtype or feature otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import Dict, List, Optional, Set

from codegen.manifest import ManifestError, load_manifest, merge_chains
from exir.kernel_check import DEFAULT_LIBRARIES
from exir.serialize import PteFormatError, deserialize_pte
from schema import program as S
from schema import scalar_types
from selective_build.selection import SelectionError, features_of, load, load_features, merge, operators_of

# The default build's libraries: the same list to_executorch() checks against (exir.kernel_check).
MANIFESTS = list(DEFAULT_LIBRARIES)


def locations(program: S.Program) -> Dict[str, List[str]]:
    """Operator -> where the program calls it: the source line when the program carries stack traces
    (ExecutorchBackendConfig(emit_stacktrace=True)), else the method and instruction."""
    where: Dict[str, List[str]] = {}
    for plan in program.execution_plan:
        for chain in plan.chains:
            frames = chain.stacktrace or []
            for i, ins in enumerate(chain.instructions):
                call = ins.instr_args
                if not isinstance(call, S.KernelCall) or not 0 <= call.op_index < len(plan.operators):
                    continue
                op = plan.operators[call.op_index]
                name = op.name + (f".{op.overload}" if op.overload else "")
                frame = frames[i].items[-1] if i < len(frames) and frames[i].items else None
                if frame is not None and frame.lineno:
                    text = f"{frame.filename}:{frame.lineno}" + (f" ({frame.context})" if frame.context else "")
                else:
                    text = f"method '{plan.name}' instruction {i}"
                if text not in where.setdefault(name, []):
                    where[name].append(text)
    return where


def problems(
    needed: Dict[str, Set[str]], selection: Optional[Dict[str, Set[str]]] = None, extra_manifests=()
) -> List[str]:
    libraries = list(extra_manifests) + MANIFESTS
    chains = {c[0].op: c for c in merge_chains([load_manifest(p, namespace=n, library=l) for p, n, l in libraries])}
    found = []
    for op in sorted(needed):
        chain = chains.get(op)
        if chain is None:
            found.append(f"{op}: no kernel library implements it")
            continue
        # A dtype the first library's kernel does not compute falls through to the next library's (codegen).
        supported = {scalar_types.SCALAR_TYPES[t].name for d in chain for t in d.dtypes}
        if not needed[op] & supported and needed[op]:
            found.append(f"{op}: called with {sorted(needed[op])}, the kernel computes {sorted(supported)}")
        if selection is not None:
            if op not in selection:
                found.append(f"{op}: not in the selection")
            elif needed[op] & supported - selection[op]:
                found.append(f"{op}: the selection lacks dtypes {sorted(needed[op] & supported - selection[op])}")
    return found


def main(argv=None, prog="python -m selective_build.check") -> int:
    ap = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("programs", nargs="+")
    ap.add_argument("--selection", help="selected_operators.yaml the runtime is built from")
    ap.add_argument(
        "--manifest",
        action="append",
        default=[],
        help="your own kernel library's manifest, as PATH@C++NAMESPACE@BAZEL_PACKAGE (repeatable)",
    )
    args = ap.parse_args(argv)
    try:
        programs = [deserialize_pte(open(p, "rb").read()).program for p in args.programs]
        needed = merge(operators_of(p) for p in programs)
        where: Dict[str, List[str]] = {}
        for p in programs:
            for op, lines in locations(p).items():
                where.setdefault(op, []).extend(lines)
        selection = load(args.selection) if args.selection else None
        extra = []
        for spec in args.manifest:
            parts = spec.split("@")
            if len(parts) != 3:
                raise SelectionError(f"--manifest '{spec}': expected PATH@C++NAMESPACE@BAZEL_PACKAGE")
            extra.append(tuple(parts))
        found = problems(needed, selection, extra)
        kept = load_features(args.selection) if args.selection else None
        if kept is not None:
            used = set().union(*(features_of(p) for p in programs))
            found += [
                f"{f}: a runtime feature the programs use, not in the selection's features" for f in sorted(used - kept)
            ]
    except (OSError, PteFormatError, SelectionError, ManifestError) as e:
        print(f"check: {e}", file=sys.stderr)
        return 1
    for line in found:
        op = line.split(": ", 1)[0]
        at = where.get(op, [])
        more = f" and {len(at) - 3} more" if len(at) > 3 else ""
        print(f"check: missing {line}" + (f"; at {'; '.join(at[:3])}{more}" if at else ""), file=sys.stderr)
    if found:
        print(
            "check: write a kernel for what is missing (examples/custom_ops) and pass its --manifest, cast to a "
            "dtype the kernel computes, or add the operator and dtypes to the selection "
            "(python -m selective_build.select model.pte --merge yours.yaml)",
            file=sys.stderr,
        )
    if not found:
        print(f"check: ok: {len(needed)} operators provided")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
