"""Per-model kernel registration for an installed Ember SDK bundle: a selection (selected_operators.yaml) ->
the C++ registration table to compile into the application (kernel_registry.cc).

The bundle's kernel libraries hold every operator and dtype; the table names only the selected operators, so
the linker keeps only their kernels (the libraries are compiled with function sections: link with
-Wl,--gc-sections). ember_register_kernels() in EmberConfig.cmake runs this; Makefile users run it themselves:

    python3 <sdk>/share/ember/register_kernels.py --selection mlp.yaml -o kernel_registry.cc

Needs a python3 with PyYAML and torchgen (part of the torch wheel; the Python that exports models with Ember has
both): the kernel manifests declare each operator by its schema, which torchgen parses. The selection comes from `python -m selective_build.select model.pte` (the Ember wheel
or a checkout) or is written by hand (examples/selections/).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

SHARE = os.path.dirname(os.path.abspath(__file__))


def manifest_args(chain: dict, skip: list) -> list:
    """gen_registration's --manifest arguments, in the bundle's registration priority."""
    args = []
    for lib in chain["libraries"]:
        if lib["component"] in skip:
            continue
        args += ["--manifest", f"{os.path.join(SHARE, lib['manifest'])}@{lib['namespace']}@{lib['include_dir']}"]
    return args


def beyond_bundle(selection: str, bundle_selection: str) -> list:
    """What `selection` asks for that the bundle's kernels were not compiled for (a bundle built with
    --//:manifest=<selection> has only those operators and dtypes): one line per operator or dtype."""
    from codegen.yaml_input import parse_selection, read_yaml

    def ops_of(path):
        data, lines = read_yaml(path, ValueError)
        return parse_selection(data, path, ValueError, lines)

    have = ops_of(bundle_selection)
    if have is None:
        return []
    want = ops_of(selection)
    if want is None:
        return ["every operator (include_all_operators: true)"]
    missing = []
    for op, dtypes in sorted(want.items()):
        if op not in have:
            missing.append(op)
        elif have[op]:
            # An empty list means every dtype the kernel computes.
            lacking = sorted(set(dtypes or ["<every dtype>"]) - set(have[op]))
            if lacking:
                missing.append(f"{op} dtypes {', '.join(lacking)}")
    return missing


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--selection", help="selected_operators.yaml (omit: every operator the bundle has)")
    ap.add_argument(
        "--skip",
        action="append",
        default=[],
        help="a kernel component not to register, e.g. kernels_optimized (repeatable)",
    )
    ap.add_argument("-o", "--output", required=True, help="the kernel_registry.cc to write")
    args = ap.parse_args(argv)
    with open(os.path.join(SHARE, "kernel_chain.json")) as f:
        chain = json.load(f)
    sys.path.insert(0, os.path.join(SHARE, "python"))
    try:
        import torchgen.model  # noqa: F401
        import yaml  # noqa: F401
    except ImportError as e:
        print(
            f"register_kernels: {sys.executable} lacks {e.name}: run it with a Python that has PyYAML and torch "
            "(torchgen comes with torch), e.g. cmake -DEMBER_PYTHON=<venv>/bin/python3",
            file=sys.stderr,
        )
        return 1
    from codegen import gen_registration

    gen_args = manifest_args(chain, args.skip)
    bundle_selection = os.path.join(SHARE, "bundle_selection.yaml")
    missing = beyond_bundle(args.selection, bundle_selection) if args.selection else []
    if not args.selection and os.path.exists(bundle_selection):
        missing = beyond_bundle(os.path.join(SHARE, "all_operators.yaml"), bundle_selection)
    if missing:
        print(
            f"register_kernels: this bundle's kernels were built for {bundle_selection} only; the selection "
            f"{args.selection or '(every operator)'} also needs: " + "; ".join(missing) + ". Build a bundle without "
            "--//:manifest (every operator and dtype) or with a selection that covers this one.",
            file=sys.stderr,
        )
        return 1
    if args.selection:
        gen_args += ["--selection", args.selection]
    with tempfile.TemporaryDirectory() as tmp:
        status = gen_registration.main(gen_args + ["--out-dir", tmp])
        if status != 0:
            return status
        # selected_dtypes.h is not needed: the bundle's kernels were compiled for every dtype.
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        shutil.copyfile(os.path.join(tmp, "kernel_registry.cc"), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
