"""The public model zoo (examples/public_zoo): torchvision, timm and Hugging Face models, at CI sizes, exported with
exir and run on the default and the portable-only runtime, each matching eager PyTorch.

A model that does not pass yet is an expected failure (strict): EXPECTED_FAILURES records why it fails today.
- When it starts passing, the test fails as XPASS(strict): remove its entry.
- While it fails for the recorded reason, or a part of it (some of its missing operators gained kernels), it
  xfails.
- When it fails for any other reason, the test fails, naming the new cause.
`python -m examples.public_zoo.status` prints the same causes for every model.
"""
import pytest

from examples.public_zoo.check import check
from examples.public_zoo.models import MODELS

# model -> the causes it fails with today (Result.causes(): "no kernel: <op>", "not core ATen: <op>", or the error).
_SPLIT_2 = "LoweringError: aten::split_with_sizes_copy.out writes 1 outputs but node 'split_with_sizes' has 2"
_SPLIT_3 = "LoweringError: aten::split_with_sizes_copy.out writes 1 outputs but node 'split_with_sizes' has 3"
# What exporting attention (scaled_dot_product_attention's decomposition) needs.
_ATTENTION = ["no kernel: aten::any.out", "no kernel: aten::eq.Scalar_out", "no kernel: aten::full_like.out",
              "no kernel: aten::logical_not.out"]
EXPECTED_FAILURES = {
    "shufflenet_v2_x0_5": [_SPLIT_2],
    "convnext_tiny": ["no kernel: aten::as_strided_copy.out"],
    "swin_t": ["RuntimeError: self.dim() cannot be 0 to view Float as Byte (different element sizes)"],
    "vit_b_16": _ATTENTION,
    "deeplabv3_mobilenet_v3_large": ["no kernel: aten::upsample_bilinear2d.vec_out"],
    "lraspp_mobilenet_v3_large": ["no kernel: aten::upsample_bilinear2d.vec_out"],
    "mixnet_s": [_SPLIT_2],
    "mobilevitv2_050": [_SPLIT_3],
    "efficientvit_b0": [_SPLIT_3],
    "edgenext_xx_small": ["not core ATen: aten::linalg_vector_norm"],
    "deit_tiny_patch16_224": _ATTENTION,
    "bert": _ATTENTION,
    "distilbert": _ATTENTION,
    "gpt2": [_SPLIT_3],
    "llama": _ATTENTION,
    "vit_hf": _ATTENTION,
    "whisper_encoder": _ATTENTION,
    "t5_encoder": _ATTENTION,
}


class RecordedFailure(Exception):
    """The model failed for (part of) the reason EXPECTED_FAILURES records."""


def _param(name):
    if name not in EXPECTED_FAILURES:
        return name
    return pytest.param(name, marks=pytest.mark.xfail(strict=True, raises=RecordedFailure,
                                                      reason="; ".join(EXPECTED_FAILURES[name])))


@pytest.mark.parametrize("name", [_param(n) for n in MODELS])
def test_public_model_matches_eager_on_both_builds(runtime, name):
    r = check(MODELS[name], "ci", runtime)
    if r.ok:
        return
    recorded = EXPECTED_FAILURES.get(name)
    if recorded is not None and set(r.causes()) <= set(recorded):
        raise RecordedFailure("; ".join(r.causes()))
    assert r.ok, (f"{name} ({r.source}) failed at {r.stage}: {r.cause}"
                  + (f"\n(EXPECTED_FAILURES records: {recorded})" if recorded else ""))
