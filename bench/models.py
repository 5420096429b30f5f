"""The benchmark's model set, in two groups:

- "zoo" (the default set): the zoo's models (zoo/models.py) plus a chain of 200 tiny elementwise ops, which
  measures what a runtime spends per operator when the operators themselves cost almost nothing;
- "real" (`--models real`): published architectures from the public zoo (zoo/public/models.py:
  torchvision and Hugging Face transformers definitions, random seeded weights): ResNet18, MobileNetV2,
  MobileNetV3-Small and EfficientNet-B0 at 224x224, a BERT encoder in BERT-mini's shape (4 layers, hidden 256,
  sequence 128) and a ViT encoder in DeiT-Tiny's shape (12 layers, hidden 192, 224x224, patches of 16);
- "int8" (`--models int8`): ResNet18 and torchvision's MobileNetV2 (the real group's), each quantized to int8 by
  each framework's own PT2E quantizer (Ember's EmberQuantizer, ExecuTorch's XNNPACKQuantizer, per-channel
  symmetric weights) calibrated on the same seeded inputs (calibration.npz in the model's work folder);
- "layers" (`--models layers`): single convolutions in the shapes that carry the CNNs' time (LAYERS below), each
  with its bias and activation, to compare kernels shape by shape.

Importable in every venv the benchmark uses (it needs torch only). The real models' definitions need
torchvision/transformers, which only the project's .venv has: the harness exports them there once
(torch.export.save, `program.pt2` in the model's work folder) and the peers' venvs start from that file
(`exported()` below), so every framework sees the same graph. Weights and inputs are seeded: every framework in
one run, and every run, sees the same numbers.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable, Dict, List, Tuple

import torch
from torch import nn

from zoo.models import ZOO

CHAIN_OPS = 200


class ElementwiseChain(nn.Module):
    """CHAIN_OPS elementwise ops on a [1, 16] tensor, cycling x + 0.5, x * 0.75, x - 0.25, relu(x): each op is one
    kernel call on 16 floats, and the values settle near 0.5 (no overflow, no denormals) however long the chain."""

    def __init__(self, n: int = CHAIN_OPS):
        super().__init__()
        self.n = n

    def forward(self, x):
        for i in range(self.n):
            k = i % 4
            if k == 0:
                x = x + 0.5
            elif k == 1:
                x = x * 0.75
            elif k == 2:
                x = x - 0.25
            else:
                x = torch.relu(x)
        return x


def _chain():
    torch.manual_seed(11)
    g = torch.Generator().manual_seed(11)
    return ElementwiseChain().eval(), (torch.randn(1, 16, generator=g),)


@dataclasses.dataclass(frozen=True)
class BenchModel:
    name: str
    label: str  # for tables and plots
    build: Callable[[], Tuple[nn.Module, Tuple[torch.Tensor, ...]]]
    ops: int = 0  # operator count the per-op overhead divides by (the chain only)
    small: bool = False  # part of --quick
    group: str = "zoo"  # "zoo" (the default set) or "real" (--models real)
    # The definition imports torchvision/timm/transformers (the project's .venv only): peers load program.pt2.
    needs_zoo_libs: bool = False
    # Quantized to int8 before lowering, by each framework's PT2E quantizer, calibrated on calibration().
    int8: bool = False


def _zoo(name: str, label: str, small: bool = False) -> BenchModel:
    return BenchModel(name, label, ZOO[name].build, small=small)


def _public(name: str, label: str, make=None, zoo_name: str = "", int8: bool = False) -> BenchModel:
    """A public-zoo model (zoo_name, default name) at its published size ("full": 224x224 images), or a public
    definition in another configuration (make: size -> (module, inputs), built through the zoo's seeding)."""

    def build():
        from zoo.public import models as Z

        model = Z.MODELS[zoo_name or name] if make is None else Z.PublicModel(name, "transformers", make)
        return model.build("full")

    return BenchModel(name, label, build, group="int8" if int8 else "real", needs_zoo_libs=True, int8=int8)


def _bert_mini(size):
    """BERT-mini's shape (google/bert_uncased_L-4_H-256_A-4: 4 layers, hidden 256, 4 heads, FFN 1024, BERT's
    30,522-token vocabulary), 128 tokens, no pooler; transformers' BertModel."""
    import transformers
    from zoo.public import models as Z

    config = transformers.BertConfig(
        hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024
    )
    return Z.FirstTensor(transformers.BertModel(config, add_pooling_layer=False), 0), Z._tokens(config.vocab_size, 128)


def _vit_tiny(size):
    """DeiT-Tiny's shape (12 layers, hidden 192, 3 heads, MLP 768, 224x224 in 16x16 patches: 197 tokens), no
    pooler; transformers' ViTModel."""
    import transformers
    from zoo.public import models as Z

    config = transformers.ViTConfig(
        image_size=224,
        patch_size=16,
        hidden_size=192,
        num_hidden_layers=12,
        num_attention_heads=3,
        intermediate_size=768,
    )
    return Z.FirstTensor(transformers.ViTModel(config, add_pooling_layer=False), 0), Z._hf_vit_inputs(config, size)


class ConvLayer(nn.Module):
    """One convolution of a real CNN, with the bias its batch norm folds into and the activation after it: the
    "layers" group times each framework's kernel for one shape alone, where the whole models give only totals."""

    def __init__(self, cin, cout, k, stride, groups, act):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=True)
        self.act = {"relu": nn.ReLU(), "relu6": nn.ReLU6(), "silu": nn.SiLU(), "none": nn.Identity()}[act]

    def forward(self, x):
        return self.act(self.conv(x))


# name: (label, in channels, out channels, kernel, stride, groups, input height = width, activation). The shapes
# that carry most of the CNNs' time: ResNet18's dense 3x3 stages, MobileNetV2's pointwise expansions and
# projections and its depthwise 3x3s, EfficientNet-B0's depthwise 5x5s.
LAYERS = {
    "l_r18_stem": ("ResNet18 stem 7x7/2 3->64 @224", 3, 64, 7, 2, 1, 224, "relu"),
    "l_r18_3x3_64": ("ResNet18 3x3 64->64 @56", 64, 64, 3, 1, 1, 56, "relu"),
    "l_r18_3x3_128s2": ("ResNet18 3x3/2 64->128 @56", 64, 128, 3, 2, 1, 56, "relu"),
    "l_r18_3x3_128": ("ResNet18 3x3 128->128 @28", 128, 128, 3, 1, 1, 28, "relu"),
    "l_r18_3x3_256": ("ResNet18 3x3 256->256 @14", 256, 256, 3, 1, 1, 14, "relu"),
    "l_r18_3x3_512": ("ResNet18 3x3 512->512 @7", 512, 512, 3, 1, 1, 7, "relu"),
    "l_mv2_pw_16_96": ("MobileNetV2 1x1 16->96 @112", 16, 96, 1, 1, 1, 112, "relu6"),
    "l_mv2_dw_96s2": ("MobileNetV2 dw3x3/2 96 @112", 96, 96, 3, 2, 96, 112, "relu6"),
    "l_mv2_pw_144_24": ("MobileNetV2 1x1 144->24 @56", 144, 24, 1, 1, 1, 56, "none"),
    "l_mv2_pw_24_144": ("MobileNetV2 1x1 24->144 @56", 24, 144, 1, 1, 1, 56, "relu6"),
    "l_mv2_dw_144": ("MobileNetV2 dw3x3 144 @56", 144, 144, 3, 1, 144, 56, "relu6"),
    "l_mv2_pw_64_384": ("MobileNetV2 1x1 64->384 @14", 64, 384, 1, 1, 1, 14, "relu6"),
    "l_mv2_dw_384": ("MobileNetV2 dw3x3 384 @14", 384, 384, 3, 1, 384, 14, "relu6"),
    "l_mv2_pw_384_64": ("MobileNetV2 1x1 384->64 @14", 384, 64, 1, 1, 1, 14, "none"),
    "l_mv2_pw_160_960": ("MobileNetV2 1x1 160->960 @7", 160, 960, 1, 1, 1, 7, "relu6"),
    "l_mv2_pw_320_1280": ("MobileNetV2 1x1 320->1280 @7", 320, 1280, 1, 1, 1, 7, "relu6"),
    "l_eff_dw5_240s2": ("EfficientNet-B0 dw5x5/2 240 @28", 240, 240, 5, 2, 240, 28, "silu"),
    "l_eff_dw5_672": ("EfficientNet-B0 dw5x5 672 @14", 672, 672, 5, 1, 672, 14, "silu"),
}


def _layer(name: str) -> BenchModel:
    label, cin, cout, k, stride, groups, hw, act = LAYERS[name]

    def build():
        torch.manual_seed(sum(map(ord, name)))
        g = torch.Generator().manual_seed(7)
        return ConvLayer(cin, cout, k, stride, groups, act).eval(), (torch.randn(1, cin, hw, hw, generator=g),)

    return BenchModel(name, label, build, group="layers")


MODELS: Dict[str, BenchModel] = {
    m.name: m
    for m in [
        _zoo("add", "add [1,4]", small=True),
        _zoo("softmax", "softmax [1,4]"),
        _zoo("linear", "linear 4->4", small=True),
        BenchModel("chain200", f"{CHAIN_OPS} elementwise ops [1,16]", _chain, ops=CHAIN_OPS, small=True),
        _zoo("mlp", "MLP 784-256-256-10", small=True),
        _zoo("small_cnn", "small CNN 32x32"),
        _zoo("mobilenet_v2_035_96", "MobileNetV2 0.35 @96"),
        _zoo("mobilenet_v2", "MobileNetV2 1.0 @224"),
        _zoo("transformer_block", "transformer block 16x64"),
        _public("resnet18", "ResNet18 @224"),
        _public("tv_mobilenet_v2", "torchvision MobileNetV2 @224", zoo_name="mobilenet_v2"),
        _public("mobilenet_v3_small", "MobileNetV3-Small @224"),
        _public("efficientnet_b0", "EfficientNet-B0 @224"),
        _public("bert_mini", "BERT-mini, 128 tokens", _bert_mini),
        _public("vit_tiny", "ViT-Tiny @224", _vit_tiny),
        _public("resnet18_int8", "ResNet18 @224 int8", zoo_name="resnet18", int8=True),
        _public("tv_mobilenet_v2_int8", "torchvision MobileNetV2 @224 int8", zoo_name="mobilenet_v2", int8=True),
    ]
    + [_layer(n) for n in LAYERS]
}

QUICK_MODELS: List[str] = [m.name for m in MODELS.values() if m.small]
# --models takes these group names too: "zoo" (the default set), "real", "int8", "layers", "all".
GROUPS: Dict[str, List[str]] = {
    "zoo": [m.name for m in MODELS.values() if m.group == "zoo"],
    "real": [m.name for m in MODELS.values() if m.group == "real"],
    "int8": [m.name for m in MODELS.values() if m.group == "int8"],
    "layers": [m.name for m in MODELS.values() if m.group == "layers"],
    "all": list(MODELS),
}
# Calibration inputs per int8 model: the same seeded set for every framework's quantizer.
CALIBRATION_SAMPLES = 16
# The real group's convolutional networks (the goal "within 1.5x of ExecuTorch + XNNPACK" names them).
REAL_CNNS: List[str] = ["resnet18", "tv_mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0"]


def calibration_path(work: str, name: str) -> str:
    return os.path.join(work, name, "calibration.npz")


def save_calibration(work: str, name: str, inputs) -> None:
    """CALIBRATION_SAMPLES input tuples shaped like `inputs`, seeded apart from the measured inputs, for the int8
    models' quantizers (each framework's reads the same file)."""
    import numpy as np

    g = torch.Generator().manual_seed(20261128)
    arrays = {}
    for k in range(CALIBRATION_SAMPLES):
        for i, x in enumerate(inputs):
            arrays[f"sample_{k}_input_{i}"] = torch.randn(x.shape, generator=g).numpy()
    np.savez(calibration_path(work, name), **arrays)


def calibration(work: str, name: str):
    """The input tuples save_calibration wrote."""
    import numpy as np

    arrays = np.load(calibration_path(work, name))
    count = sum(1 for k in arrays.files if k.endswith("_input_0"))
    inputs = sum(1 for k in arrays.files if k.startswith("sample_0_"))
    return [tuple(torch.from_numpy(arrays[f"sample_{k}_input_{i}"]) for i in range(inputs)) for k in range(count)]


def program_path(work: str, name: str) -> str:
    """Where the harness saves a model's torch.export program for the peers (models that need_zoo_libs)."""
    return os.path.join(work, name, "program.pt2")


def exported(name: str, work: str):
    """(ExportedProgram or None, module or None, example inputs) for a peer's export: for a model whose definition
    needs the public zoo's libraries, the program the harness saved (its inputs from inputs.npz); otherwise the
    module built here (the peer exports it as usual)."""
    import numpy as np

    if MODELS[name].needs_zoo_libs:
        ep = torch.export.load(program_path(work, name))
        arrays = np.load(os.path.join(work, name, "inputs.npz"))
        args = tuple(torch.from_numpy(arrays[f"input_{i}"]) for i in range(len(arrays.files)))
        return ep, None, args
    module, args = MODELS[name].build()
    return None, module, args
