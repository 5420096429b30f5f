"""Manifests + selection -> C++: the registration table and the per-kernel dtype masks.

Outputs (written to --out-dir):
  kernel_registry.cc   unboxing wrappers and a sorted constexpr table of KernelEntry, exactly as large as the
                       selection (no slack slots; ExecuTorch's fixed 2000-slot registry costs ~48 KB of BSS)
  selected_dtypes.h    one constexpr uint32_t mask per kernel: bit n set = ScalarType n compiled in

The table also says which runtime features the selection's programs use (codegen/features.py): the executor links
the code of those only.

    python -m codegen.gen_registration --manifest kernels/portable/kernels.yaml@ember::portable@kernels/portable \
        [--selection selected_operators.yaml] --out-dir DIR
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple


from codegen.features import parse_selected_features, render_support
from codegen.manifest import KernelDecl, ManifestError, load_manifest, merge_chains
from codegen.yaml_input import parse_selected_backends, parse_selection, read_yaml
from schema import argument_codes, scalar_types
from schema._yaml import ContractError


def _type_key(t) -> str:
    s = str(t)
    # Fixed-size lists (int[2], bool[3]) unbox like their unsized forms.
    if "[" in s and "]" in s:
        head, rest = s.split("[", 1)
        tail = rest.split("]", 1)[1]
        s = f"{head}[]{tail}"
    return s


def _unbox(decl: KernelDecl, i: int, arg) -> Tuple[str, str]:
    """(argument code, C++ expression over `a[i]` yielding the kernel's parameter, or "" when not passed), by the
    contract's argument codes (schema/argument_codes.yaml), which Method checks against the program's values."""
    if arg.annotation is not None and arg.annotation.is_write:
        if _type_key(arg.type) == "Tensor[]":
            # A list out (split_copy.Tensor_out): the list holds tensor handles, each one writable.
            code = argument_codes.for_schema_type("Tensor[]")
            return code.code, f"a[{i}]->{code.unbox}()"
        written = argument_codes.WRITTEN
        return written.code, f"a[{i}]->{written.unbox_written}()"
    code = argument_codes.for_schema_type(_type_key(arg.type))
    if code is None:
        raise ManifestError(
            f"{decl.op}: argument '{arg.name}' has type {arg.type}, which no argument code carries "
            f"(schema/argument_codes.yaml)"
        )
    return code.code, f"a[{i}]->{code.unbox}()" if code.unbox else ""


def kernel_symbol(op: str) -> str:
    """The generated function that unboxes `op`'s arguments and calls its kernel (size reports look it up)."""
    return "k_" + op.replace("::", "_").replace(".", "_")


def arg_signature(decl: KernelDecl) -> Tuple[str, List[str]]:
    """(arg_types string incl. the return, C++ arguments of the kernel call)."""
    codes, exprs = [], []
    for i, arg in enumerate(decl.schema.arguments.flat_all):
        code, expr = _unbox(decl, i, arg)
        codes.append(code)
        if expr:
            exprs.append(expr)
    returns = decl.schema.returns
    n = len(decl.schema.arguments.flat_all)
    if len(returns) == 1 and str(returns[0].type) != "Tensor":
        # A number result (prim ops): the kernel writes the method's value for it.
        code = argument_codes.for_schema_type(_type_key(returns[0].type))
        if code is None:
            raise ManifestError(f"{decl.op}: return type {returns[0].type} is not supported")
        codes.append(code.code)
        exprs.append(f"*a[{n}]")
    elif len(returns) == 1:
        codes.append(argument_codes.for_schema_type("Tensor").code)
    elif len(returns) > 1:
        codes.append(argument_codes.for_schema_type("Tensor[]").code)
    else:
        # `-> ()` with out= arguments (split_copy.Tensor_out writes a Tensor[]): ExecuTorch's emitter still
        # passes the out value as the call's return, so programs carry one more value, of the out's code.
        # Only out= arguments: a mutated `self` (et_copy_index) is not a result, and ExecuTorch passes no return.
        out_names = {a.name for a in decl.schema.arguments.out}
        outs = [c for c, a in zip(codes, decl.schema.arguments.flat_all) if a.name in out_names]
        if len(outs) == 1:
            codes.append(outs[0])
    return "".join(codes), exprs


def _apply_selection(
    chains: Sequence[Sequence[KernelDecl]], selection: Optional[Dict]
) -> List[Tuple[KernelDecl, int, List[Tuple[KernelDecl, int]]]]:
    """Per selected op: (registered decl, table mask, [(decl, mask) for every library kernel compiled for it]).

    The registered kernel is the first library's; the selected dtypes it does not compute go to the next
    library's kernel for the same op, which the first one calls (kernels/optimized hands non-Float to portable).
    Without a selection: every op, every dtype any of its kernels computes.
    """

    def split(chain: Sequence[KernelDecl], wanted_mask: int) -> List[Tuple[KernelDecl, int]]:
        masks, left = [], wanted_mask
        for d in chain:
            m = left & d.dtype_mask
            masks.append((d, m))
            if not d.partial:  # a partial kernel hands some calls of its dtypes on: the next one keeps them
                left &= ~m
        return masks

    by_op = {c[0].op: c for c in chains}
    chosen = []
    missing = []
    if selection is None or selection.get("include_all_operators"):
        for chain in chains:
            every = 0
            for d in chain:
                every |= d.dtype_mask
            per = split(chain, every)
            chosen.append((chain[0], _union(per), per))
        return chosen
    for op, info in sorted((selection.get("operators") or {}).items()):
        chain = by_op.get(op)
        if chain is None:
            missing.append(op)
            continue
        computable = 0
        for d in chain:
            computable |= d.dtype_mask
        wanted = info.get("dtypes") if isinstance(info, dict) else None
        mask = computable
        if wanted:
            try:
                sel = scalar_types.mask(wanted)
            except ContractError as e:
                raise ManifestError(f"{op}: {e}") from None
            # Selections record every tensor dtype a call sees (a Long indices output, say); the kernel is
            # compiled for the ones it computes. None of them computable means the build cannot run the op.
            if not sel & computable:
                raise ManifestError(
                    f"{op}: the selection needs dtypes {sorted(wanted)}, which kernel "
                    f"{chain[0].kernel} does not implement ({chain[0].library})"
                )
            mask = sel & computable
        per = split(chain, mask)
        chosen.append((chain[0], _union(per), per))
    if missing:
        raise ManifestError("the selection needs operators no kernel library implements: " + ", ".join(missing))
    return chosen


def _union(per: Sequence[Tuple[KernelDecl, int]]) -> int:
    m = 0
    for _, x in per:
        m |= x
    return m


def _mask_name(d: KernelDecl) -> str:
    return f"{d.kernel}_{d.namespace.split('::')[-1]}"


@dataclasses.dataclass(frozen=True)
class BackendDecl:
    id: str  # BackendDelegate.id, as programs name it
    symbol: str  # C++ name of the backend's `const ember::Backend`
    header: str  # the header declaring it


def parse_backend(spec: str) -> BackendDecl:
    parts = spec.split("@")
    if len(parts) != 3 or not all(parts):
        raise ManifestError(f"--backend '{spec}': expected ID@C++SYMBOL@HEADER")
    return BackendDecl(*parts)


def select_backends(available: Sequence[BackendDecl], wanted: Optional[Sequence[str]]) -> List[BackendDecl]:
    """The backends of the table: those the selection names (`wanted`), or every available one without a
    selection. A named backend the build does not offer is an error naming it."""
    by_id = {b.id: b for b in available}
    if wanted is None:
        return sorted(available, key=lambda b: b.id)
    missing = [w for w in wanted if w not in by_id]
    if missing:
        raise ManifestError(
            f"the selection needs delegate backends this build does not offer: {', '.join(missing)} "
            f"(available: {', '.join(sorted(by_id)) or 'none'}; add them with --backend)"
        )
    return [by_id[w] for w in sorted(wanted)]


def _render_backends(backends: Sequence[BackendDecl]) -> List[str]:
    # Only an executor built with delegates (--config=delegates, which defines EMBER_DELEGATES for everything
    # depending on it) asks for delegate_support(); without it the table references no backend, so a runner
    # links none of them, nor their strings. registered_backends() exists either way for shared-library links.
    if not backends:
        return [
            "#ifdef EMBER_DELEGATES",
            "const DelegateSupport* delegate_support() { return &kNoDelegates; }  // refuses delegate calls",
            "#endif",
            "Span<const Backend* const> registered_backends() { return {}; }",
        ]
    rows = ", ".join(f"&{b.symbol}" for b in backends)
    return [
        "#ifdef EMBER_DELEGATES",
        f"constexpr const Backend* kBackends[{len(backends)}] = {{{rows}}};  // sorted by id",
        f"Span<const Backend* const> registered_backends() {{ return {{kBackends, {len(backends)}}}; }}",
        "const DelegateSupport* delegate_support() { return &kDelegateSupport; }",
        "#else",
        "Span<const Backend* const> registered_backends() { return {}; }  // built without delegates",
        "#endif",
    ]


def render(
    selected: Sequence[Tuple[KernelDecl, int, Sequence[Tuple[KernelDecl, int]]]],
    all_decls: Sequence[KernelDecl] = (),
    backends: Sequence[BackendDecl] = (),
    features: Optional[Sequence[str]] = None,
) -> Tuple[str, str]:
    """The registry source and the dtype header. Every kernel of `all_decls` gets a mask (0 when not selected),
    so unselected kernel sources still compile, to nothing: a 0 mask instantiates no dtype case. `features`: the
    runtime features the table points the executor at (None: all of them)."""
    headers = sorted({f'#include "{d.library}/kernels.h"' for d, _, _ in selected})
    # The executor's prepare-step code is linked only when a registered kernel has a prepare step.
    prepares = any(d.memory or d.prepare for d, _, _ in selected)
    wrappers, rows, masks = [], [], []
    named = set()
    for d, mask, per in sorted(selected, key=lambda x: x[0].op):
        sig, exprs = arg_signature(d)
        sym = kernel_symbol(d.op)
        call = f"{d.namespace}::{d.kernel}(ctx{''.join(', ' + e for e in exprs)});"
        wrappers.append(f"void {sym}(::ember::KernelContext& ctx, ::ember::EValue** a) {{\n  (void)a;\n  {call}\n}}")
        memory = f"&{d.namespace}::{d.memory}" if d.memory else "nullptr"
        prepare = f"&{d.namespace}::{d.prepare}" if d.prepare else "nullptr"
        rows.append(f'    {{"{d.op}", &{sym}, "{sig}", 0x{mask:08x}u, {memory}, {prepare}}},')
        for k, (kd, m) in enumerate(per):
            how = "" if k == 0 else f" (falls through from {d.library})"
            name = _mask_name(kd)
            if name in named:
                # Two operators of one library share a kernel name (helium's Float aten::avg_pool2d.out and its
                # int8 ember_quantized::avg_pool2d.out, overloads in C++): one mask, the union of their dtypes;
                # each overload dispatches over its own dtypes only.
                i = next(i for i, line in enumerate(masks) if line.startswith(f"constexpr uint32_t {name} = "))
                value = int(masks[i].split(" = ")[1].split("u;")[0], 16) | m
                comment = masks[i].split("  // ", 1)[1]
                masks[i] = f"constexpr uint32_t {name} = 0x{value:08x}u;  // {comment}; {kd.op}{how}"
                continue
            masks.append(f"constexpr uint32_t {name} = 0x{m:08x}u;  // {kd.op}{how}")
            named.add(name)
    for d in sorted(all_decls, key=lambda d: d.op):
        if _mask_name(d) not in named:
            masks.append(f"constexpr uint32_t {_mask_name(d)} = 0u;  // {d.op}: not selected")
            named.add(_mask_name(d))
    registry = "\n".join(
        [
            "// Generated by codegen/gen_registration.py from kernel manifests and a selection. Do not edit.",
            '#include "runtime/kernel/operator_registry.h"',
            *(['#include "runtime/executor/prepare_support.h"'] if prepares else []),
            *headers,
            '#include "runtime/backend/backend.h"',
            '#include "runtime/executor/delegate_support.h"',
            '#include "runtime/executor/feature_support.h"',
            *sorted({f'#include "{b.header}"' for b in backends}),
            "",
            "namespace {",
            "",
            "\n\n".join(wrappers),
            "",
            "// Sorted by name: lookup is a binary search.",
            f"constexpr ::ember::KernelEntry kKernels[{max(1, len(rows))}] = {{",
            *(rows or ['    {"", nullptr, "", 0u, nullptr, nullptr},']),
            "};",
            "",
            "}  // namespace",
            "",
            "namespace ember {",
            f"Span<const KernelEntry> registered_kernels() {{ return {{kKernels, {len(rows)}}}; }}",
            (
                "const PrepareSupport* prepare_support() { return &kPrepareSupport; }"
                if prepares
                else "const PrepareSupport* prepare_support() { return nullptr; }  // no kernel here has a prepare step"
            ),
            *_render_backends(backends),
            *render_support(features),
            "}  // namespace ember",
            "",
        ]
    )
    dtypes = "\n".join(
        [
            "// Generated by codegen/gen_registration.py. Do not edit.",
            "// Per kernel: the ScalarTypes this build compiles (bit n = ScalarType n). Kernels dispatch over these only.",
            "#pragma once",
            "#include <cstdint>",
            "",
            "namespace ember {",
            "namespace selected_dtypes {",
            *masks,
            "}  // namespace selected_dtypes",
            "}  // namespace ember",
            "",
        ]
    )
    return registry, dtypes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--manifest",
        action="append",
        required=True,
        help="PATH@C++NAMESPACE@BAZEL_PACKAGE, repeatable; earlier manifests win for the same op",
    )
    ap.add_argument("--selection", help="selected_operators.yaml (omit for every operator of the manifests)")
    ap.add_argument(
        "--backend",
        action="append",
        default=[],
        help="ID@C++SYMBOL@HEADER, repeatable: a delegate backend the build offers; the table holds "
        "those the selection's 'backends' names (all of them without a selection)",
    )
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args(argv)
    try:
        libs = []
        for spec in args.manifest:
            parts = spec.split("@")
            if len(parts) != 3:
                raise ManifestError(f"--manifest '{spec}': expected PATH@C++NAMESPACE@BAZEL_PACKAGE")
            path, namespace, package = parts
            libs.append(load_manifest(path, namespace=namespace, library=package))
        chains = merge_chains(libs)
        decls = [d for chain in chains for d in chain]
        selection = None
        available = [parse_backend(b) for b in args.backend]
        wanted_backends = None
        features = None
        if args.selection:
            data, lines = read_yaml(args.selection, ManifestError)
            ops = parse_selection(data, args.selection, ManifestError, lines)
            selection = (
                {"include_all_operators": True}
                if ops is None
                else {"operators": {op: {"dtypes": dtypes} for op, dtypes in ops.items()}}
            )
            wanted_backends = parse_selected_backends(data, args.selection, ManifestError, lines)
            features = parse_selected_features(data, args.selection, ManifestError, lines)
        registry, dtypes = render(
            _apply_selection(chains, selection), decls, select_backends(available, wanted_backends), features
        )
    except (ManifestError, OSError) as e:
        print(f"codegen: {e}", file=sys.stderr)
        return 1
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "kernel_registry.cc"), "w") as f:
        f.write(registry)
    with open(os.path.join(args.out_dir, "selected_dtypes.h"), "w") as f:
        f.write(dtypes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
