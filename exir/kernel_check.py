"""Export refuses what its runtime cannot run.

Every kernel call of a lowered program is checked against the kernel libraries of the runtime it will run on,
read from their manifests (kernels/*/kernels.yaml, through codegen.manifest), before anything is written: an
operator no library implements, or a dtype its kernels do not compute, fails the export naming the operator,
the dtype and the user's source line, instead of failing on the device with OperatorMissing.

The runtime is described by a KernelTarget: by default the libraries of the default build (optimized, portable,
quantized, prim ops); `manifests` adds a user's own libraries (custom operators, examples/custom_ops), and
`selection` narrows the build to a selected_operators.yaml, as `bazel build --//:manifest=...` does.

The dtype rule is the runtime's (Method::load): the first Tensor argument of a call (by schema order, out=
tensors included) must have a dtype in the op's registration mask, which is the union of the dtypes its
libraries' kernels compute, narrowed by the selection. Every other tensor of the call must at least have a dtype
that some kernel of the build computes: a float8 output of a cast has no kernel to write it.
"""

from __future__ import annotations

import dataclasses
import os
from collections import OrderedDict
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

import torch

from exir.lowering.ir import MethodGraph, TensorValue
from schema.resources import repo_path


# (manifest, C++ namespace, Bazel package) of each library of the default build, in codegen.defs' priority order
# (--//kernels:optimized=true is the default off bare metal; its kernels hand other dtypes to portable's).
DEFAULT_LIBRARIES: Tuple[Tuple[str, str, str], ...] = tuple(
    (repo_path("kernels", lib, "kernels.yaml"), f"ember::{ns}", f"kernels/{lib}")
    for lib, ns in (
        ("optimized", "optimized"),
        ("portable", "portable"),
        ("quantized", "quantized"),
        ("prim_ops", "prim"),
    )
)

ManifestSpec = Union[str, Tuple[str, str, str]]


class KernelMissingError(RuntimeError):
    """The program calls an operator, or a dtype of one, that the target runtime's kernels do not provide."""


@dataclasses.dataclass
class KernelTarget:
    """The kernels of the runtime a program is exported for.

    manifests: your own kernel libraries, each the path of its kernels.yaml (or PATH, C++ namespace, Bazel
        package, as selective_build.check's --manifest takes them); checked ahead of the built-in ones.
    selection: the selected_operators.yaml the runtime is built from (a path, or a mapping op -> dtypes); None
        means the whole libraries, as the default `bazel build //:runner`.
    default_libraries: False to check against `manifests` alone (a runtime built with your libraries only).
    """

    manifests: Sequence[ManifestSpec] = ()
    selection: Optional[Union[str, Mapping[str, Iterable[str]]]] = None
    default_libraries: bool = True


@dataclasses.dataclass
class _Provided:
    masks: Dict[str, Set[str]]  # op -> dtype names the registered kernel accepts (runtime's mask)
    computed: Set[str]  # every dtype any kernel of the build computes
    libraries: List[str]  # for messages
    selected: Optional[Set[str]]  # ops in the selection, when there is one
    library_masks: Dict[str, Set[str]]  # op -> dtypes before the selection narrowed them


def _manifest_tuple(spec: ManifestSpec) -> Tuple[str, str, str]:
    if isinstance(spec, str):
        return spec, "ember::user", os.path.dirname(spec) or "."
    if isinstance(spec, (tuple, list)) and len(spec) == 3 and all(isinstance(x, str) for x in spec):
        return tuple(spec)
    raise ValueError(
        f"KernelTarget.manifests: {spec!r} is neither the path of a kernels.yaml nor "
        f"(path, C++ namespace, Bazel package)"
    )


def _selection(sel) -> Optional[Dict[str, Set[str]]]:
    if sel is None:
        return None
    if isinstance(sel, (str, os.PathLike)):
        from codegen.yaml_input import parse_selection, read_yaml

        data, lines = read_yaml(str(sel), KernelMissingError)
        ops = parse_selection(data, str(sel), KernelMissingError, lines)
        return None if ops is None else {op: set(d or ()) for op, d in ops.items()}
    if isinstance(sel, Mapping):
        return {op: set(d or ()) for op, d in sel.items()}
    raise ValueError(
        f"KernelTarget.selection: expected a selected_operators.yaml path or a mapping op -> dtypes, "
        f"got {type(sel).__name__}"
    )


_MANIFESTS: Dict[Tuple[str, str, str, int, int], list] = {}


def _load_manifest(path: str, namespace: str, library: str) -> list:
    """A manifest's declarations, parsed once per version of the file (by modification time and size): parsing
    the default build's four manifests took about 3 s per export, more than exporting a small model."""
    from codegen.manifest import load_manifest

    st = os.stat(path)
    key = (os.path.realpath(path), namespace, library, st.st_mtime_ns, st.st_size)
    if key not in _MANIFESTS:
        _MANIFESTS[key] = load_manifest(path, namespace=namespace, library=library)
    return list(_MANIFESTS[key])


def provided(target: Optional[KernelTarget] = None) -> _Provided:
    """What the target runtime's kernels provide: per operator, the dtypes its registration accepts."""
    from codegen.manifest import ManifestError, merge_chains
    from schema import scalar_types

    target = target or KernelTarget()
    libs = [_manifest_tuple(m) for m in target.manifests]
    if target.default_libraries:
        missing = [lib[0] for lib in DEFAULT_LIBRARIES if not os.path.exists(lib[0])]
        if missing:
            # Never a silent pass: without the manifests every program would look runnable (or none would).
            raise KernelMissingError(
                f"the default kernel manifests are not beside exir ({', '.join(missing)}); "
                f"run from an Ember checkout, or a build step that has kernels/*/kernels.yaml "
                f"as inputs (//exir:sources carries them)"
            )
        libs += list(DEFAULT_LIBRARIES)
    for path, _, _ in libs:
        if not os.path.exists(path):
            raise KernelMissingError(
                f"kernel manifest '{path}' does not exist; pass the path of your library's "
                f"kernels.yaml (format: kernels/README.md)"
            )
    try:
        chains = merge_chains([_load_manifest(p, n, l) for p, n, l in libs])
    except ManifestError as e:
        raise KernelMissingError(f"cannot read a kernel manifest: {e}") from None
    names = {t.number: t.name for t in scalar_types.SCALAR_TYPES}
    library_masks = {c[0].op: {names[n] for d in c for n in d.dtypes} for c in chains}
    computed = set().union(*library_masks.values()) if library_masks else set()
    selection = _selection(target.selection)
    masks = dict(library_masks)
    if selection is not None:
        # As codegen compiles it: the selected dtypes the kernels compute, or all of them when none are listed.
        masks = {
            op: (library_masks[op] & dtypes if dtypes else library_masks[op])
            for op, dtypes in selection.items()
            if op in library_masks
        }
    return _Provided(
        masks, computed, [l for _, _, l in libs], None if selection is None else set(selection), library_masks
    )


def _dtype_name(dtype: torch.dtype) -> str:
    from schema.scalar_types import by_torch

    info = by_torch(dtype)
    return info.name if info is not None else str(dtype).replace("torch.", "")


def _tensors(value) -> List[TensorValue]:
    if isinstance(value, TensorValue):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, TensorValue)]
    return []


def _first_tensor(call) -> Optional[TensorValue]:
    """The value Method::load checks: the first argument whose schema type is a plain Tensor."""
    for a, v in zip(call.op._schema.arguments, call.args):
        if isinstance(a.type, torch.TensorType) and isinstance(v, TensorValue):
            return v
    return None


def _op_key(call) -> str:
    name = call.op._schema.name
    overload = call.op._overloadname
    return name + (f".{overload}" if overload and overload != "default" else "")


def problems(graphs: Mapping[str, MethodGraph], target: Optional[KernelTarget] = None) -> List[str]:
    """One line per missing operator or (operator, dtype), each with the source lines of its calls."""
    have = provided(target)
    found: "OrderedDict[Tuple[str, str], Tuple[str, List[str]]]" = OrderedDict()

    def add(key, what, source):
        entry = found.setdefault(key, (what, []))
        if source and source not in entry[1]:
            entry[1].append(source)

    for method, graph in graphs.items():
        for i, call in enumerate(graph.calls):
            if call.op is None:
                continue  # a control-flow Label or Jump: no kernel
            op = _op_key(call)
            where = call.source or f"method '{method}' instruction {i}"
            if op not in have.library_masks:
                add((op, ""), f"{op}: no kernel library of the build implements it", where)
                continue
            if have.selected is not None and op not in have.selected:
                add((op, "selection"), f"{op}: the selection leaves it out", where)
                continue
            mask = have.masks[op]
            first = _first_tensor(call)
            if first is not None:
                dtype = _dtype_name(first.dtype)
                if dtype not in mask:
                    if dtype in have.library_masks[op]:
                        add(
                            (op, dtype),
                            f"{op} with {dtype}: the selection leaves this dtype out (it keeps {sorted(mask)})",
                            where,
                        )
                    else:
                        add(
                            (op, dtype),
                            f"{op} with {dtype}: its kernels compute {_list(have.library_masks[op])}",
                            where,
                        )
                    continue
            for a, v in zip(call.op._schema.arguments, call.args):
                for t in _tensors(v):
                    dtype = _dtype_name(t.dtype)
                    if dtype not in have.computed:
                        add(
                            (op, dtype),
                            f"{op} with {dtype} ('{a.name}'): no kernel of the build computes {dtype}",
                            where,
                        )
    lines = []
    for what, sources in found.values():
        at = "; ".join(sources[:3]) + (f" and {len(sources) - 3} more" if len(sources) > 3 else "")
        lines.append(f"  {what}; at {at}")
    return lines


def _list(dtypes: Set[str]) -> str:
    return "[" + ", ".join(sorted(dtypes)) + "]" if dtypes else "no dtypes"


ADVICE = (
    "What to do: for an operator without a kernel, write one in a kernel library of your own (examples/custom_ops "
    "shows the manifest, the C++ and the build) and pass its manifest, exir.KernelTarget(manifests=['path/to/"
    "kernels.yaml']), or change the model so that it decomposes to operators that have kernels "
    "(EdgeCompileConfig(decompositions={op: fn})); for a dtype without a kernel, cast to one its kernels compute "
    "(x.float()), or write a kernel for it; for an operator or dtype the selection leaves out, add it to the "
    "selection (python -m selective_build.select model.pte --merge yours.yaml). To export anyway, for a runtime "
    "you build differently: ExecutorchBackendConfig(check_kernels=False)."
)


def check(graphs: Mapping[str, MethodGraph], target: Optional[KernelTarget] = None) -> None:
    """Raises KernelMissingError naming every operator and dtype the target runtime cannot run."""
    lines = problems(graphs, target)
    if lines:
        libs = ", ".join(provided(target).libraries)
        sel = target.selection if target is not None and target.selection is not None else None
        against = f"kernel libraries {libs}" + (
            f", selection {sel if isinstance(sel, str) else '(given)'}" if sel is not None else ""
        )
        raise KernelMissingError(
            f"the program calls operators the runtime cannot run ({against}):\n" + "\n".join(lines) + "\n" + ADVICE
        )
