"""The public model zoo: model definitions nobody here wrote (torchvision, timm, Hugging Face transformers).

Every entry builds its module with random weights from a fixed seed, in one of two sizes:
- "ci": small enough that the whole zoo exports and runs on both builds in a few minutes on 2 cores (32-64 px
  images, reduced widths or depths where the library's constructor takes them, tiny transformer configs);
- "full": the published architecture at its usual input size (the slow tier, `--size full`).

Nothing is downloaded: torchvision and timm are asked for `weights=None` / `pretrained=False`, and Hugging Face
models are built from a config object, never `from_pretrained`.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable, Dict, Tuple

import torch
from torch import nn

from zoo.public import torchvision_cpu

SIZES = ("ci", "full")

# Nothing here needs the Hugging Face hub; make sure nothing in timm or transformers reaches for it.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@dataclasses.dataclass(frozen=True)
class PublicModel:
    name: str
    source: str  # "torchvision 0.28.0 resnet18", ...
    # size -> (module in eval mode, example inputs); weights drawn from torch's global generator, seeded by build().
    make: Callable[[str], Tuple[nn.Module, Tuple[torch.Tensor, ...]]]
    seed: int = 0

    def build(self, size: str = "ci"):
        if size not in SIZES:
            raise ValueError(f"size {size!r}: choose one of {SIZES}")
        # Before anything imports torchvision: timm does at import, and transformers does for its image utils.
        torchvision_cpu.ensure()
        torch.manual_seed(self.seed)
        module, inputs = self.make(size)
        module.eval()
        # Some libraries zero-initialize a layer on purpose (torchvision's ViT head, residual branches' last
        # norm): with random weights elsewhere that makes the output constant, and parity with eager meaningless.
        with torch.no_grad():
            for p in module.parameters():
                if p.dim() >= 2 and not bool(p.any()):
                    p.normal_(0.0, 0.02, generator=torch.Generator().manual_seed(self.seed + 2))
        # Batch norm's running statistics start at mean 0, variance 1, which hides any mistake in how they are
        # applied; random ones make parity mean something.
        g = torch.Generator().manual_seed(self.seed + 1)
        with torch.no_grad():
            for m in module.modules():
                if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                    m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                    m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) * 0.5 + 0.75)
        return module, inputs


class FirstTensor(nn.Module):
    """Returns the tensors a library model answers with as a tuple: segmentation models return a dict, Hugging
    Face models a ModelOutput; export wants tensors."""

    def __init__(self, model, key):
        super().__init__()
        self.model = model
        self.key = key

    def forward(self, *args):
        out = self.model(*args)
        return out[self.key]


def _image(size_ci, size_full, size, channels=3, seed=7):
    side = size_ci if size == "ci" else size_full
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(1, channels, side, side, generator=g),)


def _tokens(vocab, length, seed=11):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, vocab, (1, length), generator=g),)


# --- torchvision ------------------------------------------------------------------------------------------------


def _tv():
    return torchvision_cpu.ensure().models


def _tv_classifier(fn_name, ci_px=32, full_px=224, ci_kwargs=None, **kwargs):
    def make(size):
        fn = getattr(_tv(), fn_name)
        extra = dict(kwargs)
        if size == "ci":
            extra.update(ci_kwargs or {})
        return fn(weights=None, **extra), _image(ci_px, full_px, size)

    return make


def _tv_vit(size):
    models = _tv()
    if size == "full":
        return models.vit_b_16(weights=None), _image(0, 224, size)
    vit = models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128, num_classes=10
    )
    return vit, _image(32, 0, size)


def _tv_swin(size):
    models = _tv()
    if size == "full":
        return models.swin_t(weights=None), _image(0, 224, size)
    swin = models.SwinTransformer(
        patch_size=[4, 4],
        embed_dim=24,
        depths=[2, 2, 2, 2],
        num_heads=[2, 2, 4, 4],
        window_size=[4, 4],
        stochastic_depth_prob=0.0,
        num_classes=10,
    )
    return swin, _image(64, 0, size)


def _tv_convnext(size):
    models = _tv()
    if size == "full":
        return models.convnext_tiny(weights=None), _image(0, 224, size)
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    blocks = [
        CNBlockConfig(16, 32, 1),
        CNBlockConfig(32, 64, 1),
        CNBlockConfig(64, 128, 2),
        CNBlockConfig(128, None, 1),
    ]
    return ConvNeXt(blocks, num_classes=10), _image(32, 0, size)


def _tv_segmentation(fn_name):
    def make(size):
        seg = getattr(_tv().segmentation, fn_name)(weights=None, weights_backbone=None, num_classes=4)
        return FirstTensor(seg, "out"), _image(64, 224, size)

    return make


# --- timm ---------------------------------------------------------------------------------------------------------


def _timm(name, ci_px, full_px=224, ci_kwargs=None):
    def make(size):
        import timm

        kwargs = dict(pretrained=False)
        if size == "ci":
            kwargs.update(ci_kwargs or {})
        return timm.create_model(name, **kwargs), _image(ci_px, full_px, size)

    return make


# --- Hugging Face transformers ------------------------------------------------------------------------------------


def _hf(model_cls_name, config_cls_name, ci_config, full_config, seq_ci=16, seq_full=128, key=0, inputs=None):
    def make(size):
        import transformers

        config_cls = getattr(transformers, config_cls_name)
        config = config_cls(**(ci_config if size == "ci" else full_config))
        if hasattr(config, "use_cache"):
            config.use_cache = False
        model = getattr(transformers, model_cls_name)(config)
        if inputs is not None:
            example = inputs(config, size)
        else:
            example = _tokens(config.vocab_size, seq_ci if size == "ci" else seq_full)
        return FirstTensor(model, key), example

    return make


def _whisper_encoder(size):
    import transformers
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    if size == "ci":
        config = transformers.WhisperConfig(
            d_model=32,
            encoder_layers=2,
            encoder_attention_heads=4,
            encoder_ffn_dim=64,
            num_mel_bins=16,
            max_source_positions=32,
        )
    else:  # whisper-tiny's encoder
        config = transformers.WhisperConfig(
            d_model=384,
            encoder_layers=4,
            encoder_attention_heads=6,
            encoder_ffn_dim=1536,
            num_mel_bins=80,
            max_source_positions=1500,
        )
    g = torch.Generator().manual_seed(13)
    features = torch.randn(1, config.num_mel_bins, 2 * config.max_source_positions, generator=g)
    return FirstTensor(WhisperEncoder(config), 0), (features,)


def _hf_vit_inputs(config, size):
    g = torch.Generator().manual_seed(7)
    return (torch.randn(1, 3, config.image_size, config.image_size, generator=g),)


_TINY_TEXT = dict(vocab_size=128, max_position_embeddings=64)

MODELS: Dict[str, PublicModel] = {
    m.name: m
    for m in [
        # torchvision classification
        PublicModel("resnet18", "torchvision", _tv_classifier("resnet18", num_classes=10)),
        PublicModel("mobilenet_v2", "torchvision", _tv_classifier("mobilenet_v2", ci_kwargs={"width_mult": 0.5})),
        PublicModel("mobilenet_v3_small", "torchvision", _tv_classifier("mobilenet_v3_small")),
        PublicModel("mobilenet_v3_large", "torchvision", _tv_classifier("mobilenet_v3_large")),
        PublicModel("efficientnet_b0", "torchvision", _tv_classifier("efficientnet_b0")),
        PublicModel("shufflenet_v2_x0_5", "torchvision", _tv_classifier("shufflenet_v2_x0_5")),
        PublicModel("regnet_x_400mf", "torchvision", _tv_classifier("regnet_x_400mf")),
        PublicModel("convnext_tiny", "torchvision", _tv_convnext),
        PublicModel("swin_t", "torchvision", _tv_swin),
        PublicModel("vit_b_16", "torchvision", _tv_vit),
        PublicModel("squeezenet1_1", "torchvision", _tv_classifier("squeezenet1_1", ci_px=48)),
        PublicModel("mnasnet0_5", "torchvision", _tv_classifier("mnasnet0_5")),
        PublicModel("googlenet", "torchvision", _tv_classifier("googlenet", aux_logits=False, init_weights=True)),
        # torchvision segmentation
        PublicModel("deeplabv3_mobilenet_v3_large", "torchvision", _tv_segmentation("deeplabv3_mobilenet_v3_large")),
        PublicModel("lraspp_mobilenet_v3_large", "torchvision", _tv_segmentation("lraspp_mobilenet_v3_large")),
        # timm edge models
        PublicModel("mixnet_s", "timm", _timm("mixnet_s", 32)),
        PublicModel("mobilevitv2_050", "timm", _timm("mobilevitv2_050", 64, 256)),
        PublicModel("efficientvit_b0", "timm", _timm("efficientvit_b0", 64)),
        PublicModel("edgenext_xx_small", "timm", _timm("edgenext_xx_small", 64, 256)),
        PublicModel("deit_tiny_patch16_224", "timm", _timm("deit_tiny_patch16_224", 32, ci_kwargs={"img_size": 32})),
        PublicModel("mobilenetv4_conv_small", "timm", _timm("mobilenetv4_conv_small", 32)),
        # Hugging Face transformers
        PublicModel(
            "bert",
            "transformers",
            _hf(
                "BertModel",
                "BertConfig",
                dict(_TINY_TEXT, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64),
                {},
            ),
        ),  # BertConfig() is bert-base
        PublicModel(
            "distilbert",
            "transformers",
            _hf(
                "DistilBertModel",
                "DistilBertConfig",
                dict(_TINY_TEXT, dim=32, n_layers=2, n_heads=4, hidden_dim=64),
                {},
            ),
        ),
        PublicModel(
            "gpt2",
            "transformers",
            _hf(
                "GPT2Model",
                "GPT2Config",
                dict(vocab_size=128, n_positions=64, n_embd=32, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0),
                {},
            ),
        ),
        PublicModel(
            "llama",
            "transformers",
            _hf(
                "LlamaModel",
                "LlamaConfig",
                dict(
                    _TINY_TEXT,
                    hidden_size=32,
                    intermediate_size=64,
                    num_hidden_layers=2,
                    num_attention_heads=4,
                    num_key_value_heads=2,
                ),
                # SmolLM-135M's shape (a LlamaConfig() is 7B)
                dict(
                    vocab_size=49152,
                    hidden_size=576,
                    intermediate_size=1536,
                    num_hidden_layers=30,
                    num_attention_heads=9,
                    num_key_value_heads=3,
                    max_position_embeddings=2048,
                    tie_word_embeddings=True,
                ),
            ),
        ),
        PublicModel(
            "vit_hf",
            "transformers",
            _hf(
                "ViTModel",
                "ViTConfig",
                dict(
                    image_size=32,
                    patch_size=8,
                    hidden_size=32,
                    num_hidden_layers=2,
                    num_attention_heads=4,
                    intermediate_size=64,
                ),
                {},
                inputs=_hf_vit_inputs,
            ),
        ),  # ViTConfig() is vit-base-patch16-224
        PublicModel("whisper_encoder", "transformers", _whisper_encoder),
        PublicModel(
            "t5_encoder",
            "transformers",
            _hf(
                "T5EncoderModel",
                "T5Config",
                dict(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4),
                {},
            ),
        ),  # T5Config() is t5-small
    ]
}


def source_of(model: PublicModel) -> str:
    import importlib.metadata

    return f"{model.source} {importlib.metadata.version(model.source)}"
