"""A custom operator, end to end: `ember_example::scaled_tanh(x, scale) = scale * tanh(x)`.

Registered here with torch.library so that models using it export; its out variant (what the runtime calls) is
declared the same way, and its C++ kernel lives beside this file (kernels.yaml, scaled_tanh.cc). Importing this
module registers the op.
"""

import torch

NAMESPACE = "ember_example"

_lib = torch.library.Library(NAMESPACE, "DEF")
_lib.define("scaled_tanh(Tensor x, float scale) -> Tensor")
_lib.define("scaled_tanh.out(Tensor x, float scale, *, Tensor(a!) out) -> Tensor(a!)")


def _scaled_tanh(x, scale):
    return torch.tanh(x) * scale


def _scaled_tanh_out(x, scale, *, out):
    return out.copy_(torch.tanh(x) * scale)


_lib.impl("scaled_tanh", _scaled_tanh, "CompositeExplicitAutograd")
_lib.impl("scaled_tanh.out", _scaled_tanh_out, "CompositeExplicitAutograd")
torch.library.register_fake(f"{NAMESPACE}::scaled_tanh")(lambda x, scale: torch.empty_like(x))


class ScaledTanhModel(torch.nn.Module):
    def forward(self, x):
        return torch.ops.ember_example.scaled_tanh(x, 2.0) + x
