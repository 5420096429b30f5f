"""Write the selection (operators + dtypes, delegate backends, runtime features) that one or more programs need.

python -m selective_build.select model.pte [other.pte ...] [--merge existing.yaml ...] -o selected_operators.yaml
"""

from __future__ import annotations

import argparse
import sys

from exir.serialize import PteFormatError, deserialize_pte
from selective_build.selection import (
    SelectionError,
    delegates_of,
    dump,
    features_of,
    load,
    load_backends,
    load_features,
    merge,
    operators_of,
)


def main(argv=None, prog="python -m selective_build.select") -> int:
    ap = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("programs", nargs="*", help=".pte files")
    ap.add_argument("--merge", action="append", default=[], help="selection files to merge in")
    ap.add_argument("-o", "--output", help="where to write (default: stdout)")
    args = ap.parse_args(argv)
    if not args.programs and not args.merge:
        ap.error("give at least one .pte or --merge file")
    parts, backends, features = [], set(), set()
    try:
        for path in args.programs:
            with open(path, "rb") as f:
                pte = deserialize_pte(f.read())
            parts.append(operators_of(pte.program))
            features |= features_of(pte.program)
            # Delegates: their backends, and the operators of EmberPortable's sub-programs.
            named, delegated_ops, delegated_features = delegates_of(pte)
            backends |= named
            parts.append(delegated_ops)
            features |= delegated_features
        for path in args.merge:
            parts.append(load(path))
            backends |= load_backends(path)
            # A selection without `features` keeps every one, and so does the merge.
            kept = load_features(path)
            features = None if kept is None or features is None else features | kept
    except (OSError, PteFormatError, SelectionError) as e:
        print(f"select: {e}", file=sys.stderr)
        return 1
    text = dump(merge(parts), args.programs + args.merge, backends, features)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
