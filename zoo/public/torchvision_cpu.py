"""Import torchvision's model definitions on the CPU build of torch.

The torchvision wheel on PyPI (0.28.0 is the release for torch 2.13) ships a compiled extension (`_C.so`, the
detection operators NMS and RoIAlign) linked against CUDA torch's libraries. With Ember's CPU torch that
extension cannot load; torchvision copes with that (its operators raise "Couldn't load custom C++ ops" when
called) except in one place: `_meta_registrations` registers fake kernels for `torchvision::nms` and
`torchvision::qnms` whether or not the extension defined them, so `import torchvision` dies with "operator
torchvision::nms does not exist".

`ensure()` declares those two operators' schemas (no kernels) when, and only when, the extension cannot load, then
imports torchvision normally. Everything in torchvision.models is plain Python and works; calling NMS raises
torchvision's own error. Call it before anything imports torchvision (timm does, at import).
"""

import importlib.util
import os
import sys

import torch

_SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}
_declared = []  # keeps the Library alive: dropping it would undo the definitions


def _extension_loads(package_dir):
    path = os.path.join(package_dir, "_C.so")
    if not os.path.exists(path):
        return False
    try:
        torch.ops.load_library(path)
        return True
    except (OSError, ImportError):
        return False


def ensure():
    """Import and return torchvision, declaring the operator schemas its import needs if its extension can't load."""
    module = sys.modules.get("torchvision")
    if module is not None and hasattr(module, "models"):
        return module
    # A failed earlier import leaves half-initialized modules behind; start clean.
    for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
        del sys.modules[name]
    spec = importlib.util.find_spec("torchvision")
    if spec is None:
        raise ImportError("torchvision is not installed: run ./setup.sh (requirements.txt pins torchvision==0.28.0)")
    package_dir = os.path.dirname(spec.origin)
    if not _extension_loads(package_dir):
        missing = {
            op: s
            for op, s in _SCHEMAS.items()
            if not torch._C._dispatch_has_kernel(f"torchvision::{op}") and not _has_schema(f"torchvision::{op}")
        }
        if missing:
            lib = torch.library.Library("torchvision", "FRAGMENT")
            for schema in missing.values():
                lib.define(schema)
            _declared.append(lib)
    import torchvision

    return torchvision


def _has_schema(qualname):
    try:
        torch._C._get_schema(qualname, "")
        return True
    except RuntimeError:
        return False
