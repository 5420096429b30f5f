"""Ember's own operators that exir's passes emit (ember::convolution_clamp, convolution_silu, convolution_general,
max_pool2d, safe_softmax, winograd_conv2d): each defined once, from its schema in the format contract
(schema/operators.yaml, which the kernel manifests name too), with a PyTorch reference that export, the reference
interpreter and the tests run."""

from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple

import torch

from schema import operators

_libraries: Dict[str, torch.library.Library] = {}


def define(name: str, reference: Callable, fake: Optional[Callable] = None) -> Tuple[object, object]:
    """Defines `namespace::op` and `namespace::op.out` from the contract: `reference` computes the functional form,
    the out form copies its result into `out`, and `fake` (default: `reference`) gives export's shapes. Returns the
    (functional, out) overloads."""
    op = operators.find(name)
    lib = _libraries.get(op.namespace)
    if lib is None:
        lib = _libraries[op.namespace] = torch.library.Library(op.namespace, "FRAGMENT")
    lib.define(op.functional)
    lib.define(op.out)
    short = name.split("::", 1)[1]

    def out_variant(*args, out):
        # copy_, never a resize: `out` is a view into the planned arena when the reference interpreter runs this.
        return out.copy_(reference(*args))

    lib.impl(short, reference, "CompositeExplicitAutograd")
    lib.impl(f"{short}.out", out_variant, "CompositeExplicitAutograd")
    torch.library.register_fake(name)(fake or reference)
    packet = getattr(getattr(torch.ops, op.namespace), short)
    return packet.default, packet.out
