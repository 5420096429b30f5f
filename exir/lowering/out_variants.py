"""Functional ATen overloads -> the out= overloads the runtime's kernels implement.

The runtime never allocates, so every kernel writes into a tensor the planner placed: for `aten.add.Tensor`
the kernel is `aten::add.out`. The match is by schema, as torchgen does it: same non-out arguments (name and
type), plus out= arguments. View ops have no out= form; they become their `*_copy` ops (as in ExecuTorch's edge
dialect), which have one.
"""

from __future__ import annotations

import functools
from typing import Dict, Tuple

import torch

aten = torch.ops.aten

# Views whose results must be materialized: name of the functional view -> name of its copy op.
_VIEW_TO_COPY: Dict[str, str] = {
    "view": "view_copy",
    "_unsafe_view": "view_copy",
    "reshape": "view_copy",
    "permute": "permute_copy",
    "expand": "expand_copy",
    "slice": "slice_copy",
    "select": "select_copy",
    "squeeze": "squeeze_copy",
    "unsqueeze": "unsqueeze_copy",
    "t": "t_copy",
    "transpose": "transpose_copy",
    "alias": "alias_copy",
    "as_strided": "as_strided_copy",
    "diagonal": "diagonal_copy",
    "unfold": "unfold_copy",
    "split": "split_copy",
    "split_with_sizes": "split_with_sizes_copy",
    "unbind": "unbind_copy",
    "detach": "detach_copy",
    "lift_fresh": "lift_fresh_copy",
}


class OutVariantError(RuntimeError):
    pass


# Arguments an out= overload may drop: the out tensor itself carries its dtype, layout and device.
_TENSOR_OPTIONS = frozenset({"dtype", "layout", "device", "pin_memory"})


def _signature(schema, drop_options: bool = False) -> Tuple[Tuple[str, str], ...]:
    return tuple(
        (a.name, str(a.type))
        for a in schema.arguments
        if not a.is_out and not (drop_options and a.name in _TENSOR_OPTIONS)
    )


def _packet(namespace: str, name: str):
    ns = getattr(torch.ops, namespace)
    try:
        return getattr(ns, name)
    except (AttributeError, RuntimeError):
        return None


@functools.lru_cache(maxsize=None)
def out_variant(op) -> torch._ops.OpOverload:
    """Returns the out= overload computing `op`. Raises OutVariantError naming the op if there is none."""
    if any(a.is_out for a in op._schema.arguments):
        return op  # already an out variant
    ns, rest = op.name().split("::", 1)
    base = rest.split(".", 1)[0]
    overload = op._overloadname
    packet_name = _VIEW_TO_COPY.get(base, base)
    packet = _packet(ns, packet_name)
    if packet is None:
        raise OutVariantError(f"{op.name()} has no out= variant ({ns}::{packet_name} does not exist)")
    if packet_name != base:
        # The copy op has the same overload names as the view (view_copy.default <-> view.default).
        functional = getattr(packet, overload, None)
        if functional is None:
            raise OutVariantError(f"{op.name()}: {ns}::{packet_name} has no overload '{overload}'")
    else:
        functional = op
    want = _signature(functional._schema)
    want_without_options = _signature(functional._schema, drop_options=True)
    candidates = []
    for name in packet.overloads():
        cand = getattr(packet, name)
        if not any(a.is_out for a in cand._schema.arguments):
            continue
        if _signature(cand._schema) in (want, want_without_options):
            candidates.append(cand)
    if not candidates:
        raise OutVariantError(
            f"{op.name()} has no out= variant with the same arguments; the runtime cannot run it without "
            f"allocating. Decompose it, or register a custom out= kernel for it."
        )
    if len(candidates) > 1:
        # Prefer the conventional names: 'out' for 'default', '<overload>_out' otherwise.
        preferred = "out" if overload == "default" else f"{overload}_out"
        for c in candidates:
            if c._overloadname == preferred:
                return c
    return candidates[0]


def out_arguments(op):
    """The schema's out= arguments, in order."""
    return [a for a in op._schema.arguments if a.is_out]
