"""Which of PyTorch's 702 OpInfos the sweep runs: those named after an operator of Ember's kernel manifests.

An OpInfo is in scope when its name, without a `nn.functional.`, `special.`, `linalg.` or `_refs.` prefix, is the
base name of a manifest operator (`add` for aten::add.out and add.Scalar_out; `roll`; `max`), that base name
without `_copy`, a leading underscore, `native_`, `_with_indices` or `_legit...` (`permute` for permute_copy,
`softmax` for _softmax), or is listed in ALIASES (OpInfos whose op lowers to a differently named kernel:
conv2d -> convolution, relu6 -> hardtanh, pad -> constant_pad_nd and the pads, interpolate -> upsample...).
The samples are attributed to every kernel their programs really call, whatever the OpInfo's name: the scope
only decides which OpInfos are exported at all (sweeping all 702, about 117,000 samples, would take most of a
day on this machine, and most of them test composites such as linalg.svd, not a kernel).
"""

from __future__ import annotations

from typing import Dict, List

from tests.opinfo.programs import manifest_ops

PREFIXES = ("nn.functional.", "special.", "linalg.", "_refs.")

# OpInfo name (prefix stripped) -> the manifest base name it reaches.
ALIASES: Dict[str, str] = {
    "conv1d": "convolution",
    "conv2d": "convolution",
    "conv3d": "convolution",
    "conv_transpose1d": "convolution",
    "conv_transpose2d": "convolution",
    "conv_transpose3d": "convolution",
    "linear": "addmm",
    "matmul": "mm",
    "addmm.decomposed": "addmm",
    "relu6": "hardtanh",
    "layer_norm": "native_layer_norm",
    "batch_norm": "_native_batch_norm_legit_no_training",
    "group_norm": "native_group_norm",
    "softmax": "_softmax",
    "log_softmax": "_log_softmax",
    "max_pool2d": "max_pool2d_with_indices",
    "adaptive_avg_pool2d": "_adaptive_avg_pool2d",
    "avg_pool2d": "avg_pool2d",
    "cdist": "_cdist_forward",
    "pdist": "_pdist_forward",
    "pad": "constant_pad_nd",
    "interpolate": "upsample_bilinear2d",
    "upsample_bilinear": "upsample_bilinear2d",
    "upsample_nearest": "upsample_nearest2d",
    "grid_sample": "grid_sampler_2d",
    "dropout": "native_dropout",
    "embedding": "embedding",
    "to": "_to_copy",
    "double": "_to_copy",
    "float": "_to_copy",
    "half": "_to_copy",
    "bfloat16": "_to_copy",
    "bool": "_to_copy",
    "byte": "_to_copy",
    "char": "_to_copy",
    "int": "_to_copy",
    "long": "_to_copy",
    "short": "_to_copy",
    "type_as": "_to_copy",
    "contiguous": "clone",
    "empty_like": "empty",
    "zeros_like": "zeros",
    "ones_like": "ones",
    "new_zeros": "zeros",
    "new_ones": "ones",
    "new_full": "full",
    "new_empty": "empty",
    "rand_like": "rand",
    "randn_like": "randn",
    "view": "view_copy",
    "reshape": "view_copy",
    "flatten": "view_copy",
    "view_as": "view_copy",
    "reshape_as": "view_copy",
    "unflatten": "view_copy",
    "expand_as": "expand_copy",
    "broadcast_to": "expand_copy",
    "narrow": "slice_copy",
    "chunk": "split_copy",
    "tensor_split": "split_copy",
    "movedim": "permute_copy",
    "swapaxes": "transpose_copy",
    "clamp_min": "clamp",
    "clamp_max": "clamp",
    "clip": "clamp",
    "true_divide": "div",
    "std": "var",
    "std_mean": "var_mean",
    "__getitem__": "index",
    "take_along_dim": "gather",
    "index_add": "index_put",
    "masked_fill": "masked_fill",
    "__rsub__": "rsub",
    "logaddexp": "exp",
    "hardsigmoid": "hardtanh",
    "threshold": "where",
}


def _base(op: str) -> str:
    return op.split("::")[-1].split(".")[0]


def _short(base: str) -> str:
    for part in ("_copy", "_with_indices", "_legit_no_training", "_legit"):
        base = base.replace(part, "")
    return base.lstrip("_").replace("native_", "")


def strip(name: str) -> str:
    for p in PREFIXES:
        if name.startswith(p):
            return name[len(p) :]
    return name


def manifest_bases() -> Dict[str, str]:
    """Every name an OpInfo may carry -> the manifest base name it stands for."""
    bases = {}
    for op in list(manifest_ops("portable")) + list(manifest_ops("optimized")):
        b = _base(op)
        bases.setdefault(b, b)
        bases.setdefault(b.lstrip("_"), b)
        bases.setdefault(_short(b), b)
    for alias, b in ALIASES.items():
        bases.setdefault(alias, b)
    return bases


def in_scope(db) -> List:
    """The OpInfos the sweep exports, in op_db order."""
    bases = manifest_bases()
    return [op for op in db if strip(op.name) in bases]
