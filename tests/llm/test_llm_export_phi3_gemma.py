"""Phi-3 and Gemma decoders exported with examples/llm (issue 34): the program's prefill logits equal transformers'
eager Phi3ForCausalLM / GemmaForCausalLM logits (fp32, the tolerances of test_llm_export.py), and greedy
generation on Ember (the Python runner on the default and portable kernels, and the C++ llm_runner) yields
transformers' `generate` ids. Tiny seeded random models; their norms get random weights too, so Gemma's (1 + weight)
is exercised (transformers initializes them to the identity). Phi-3's fused qkv / gate_up projections are split at
load; Gemma has a head_dim other than hidden / heads, one KV head, tied embeddings, a GeGLU MLP and a scaled
embedding."""

import os
import subprocess

import pytest
import torch

from tests.conftest import ROOT, bazel_build
from zoo.public import torchvision_cpu

torchvision_cpu.ensure()

import transformers  # noqa: E402  (after torchvision_cpu.ensure)

from examples.llm.export import export_decoder  # noqa: E402
from examples.llm.model import Decoder  # noqa: E402

MAX_SEQ_LEN = 48
NEW_TOKENS = 20
PROMPT = [1, 17, 42, 7, 99, 5]


def _randomize_norms(hf):
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(torch.randn_like(p) * 0.3 + (0.0 if hf.config.model_type == "gemma" else 1.0))
    return hf


def _phi3():
    torch.manual_seed(341)
    cfg = transformers.Phi3Config(
        vocab_size=320,
        hidden_size=64,
        intermediate_size=160,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    return _randomize_norms(transformers.Phi3ForCausalLM(cfg).eval())


def _gemma():
    torch.manual_seed(342)
    cfg = transformers.GemmaConfig(
        vocab_size=300,
        hidden_size=48,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=16,  # not hidden / heads (12), as Gemma's 256
        max_position_embeddings=128,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        # Larger weights than transformers' 0.02: with the scaled, tied embedding a small random Gemma repeats its
        # last prompt token forever, which would not tell a wrong layer from a right one.
        initializer_range=0.4,
    )
    assert cfg.tie_word_embeddings and cfg.hidden_act == "gelu_pytorch_tanh"
    return _randomize_norms(transformers.GemmaForCausalLM(cfg).eval())


MODELS = {"phi3": _phi3, "gemma": _gemma}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = {}
    for name, make in MODELS.items():
        hf = make()
        model = Decoder.from_hf(hf, MAX_SEQ_LEN)
        assert model.tie_head() == hf.config.tie_word_embeddings
        prog = export_decoder(model)
        path = str(tmp_path_factory.mktemp(name) / f"{name}.pte")
        prog.save(path)
        out[name] = (hf, prog, path)
    return out


def _hf_greedy(hf, prompt, n):
    with torch.no_grad():
        ids = hf.generate(torch.tensor([prompt]), max_new_tokens=n, do_sample=False, eos_token_id=None, pad_token_id=0)
    ids = ids[0, len(prompt) :].tolist()
    assert len(set(ids)) > 4, f"the reference repeats itself ({ids}): a weak check of the decoder"
    return ids


@pytest.mark.parametrize("name", sorted(MODELS))
def test_prefill_logits_match_eager(runtime, exported, name):
    hf, prog, _ = exported[name]
    program = runtime.load(prog.buffer)
    got = program.run("forward", [torch.tensor([PROMPT]), torch.tensor([0])])[0]
    with torch.no_grad():
        want = hf(torch.tensor([PROMPT])).logits[:, -1]
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    # Decode steps too: one token at a time after the prompt, against eager on the whole sequence.
    got = program.run("forward", [torch.tensor([[23]]), torch.tensor([len(PROMPT)])])[0]
    with torch.no_grad():
        want = hf(torch.tensor([PROMPT + [23]])).logits[:, -1]
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_greedy_generation_matches_hugging_face(runtime, exported, name, kernels):
    from ember import llm

    hf, prog, _ = exported[name]
    program = runtime.load(prog.buffer, kernels=kernels)
    assert llm.generate(program, PROMPT, NEW_TOKENS, eos_ids=[]).ids == _hf_greedy(hf, PROMPT, NEW_TOKENS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_llm_runner_greedy_ids_match_hugging_face(exported, name):
    hf, _, path = exported[name]
    bazel_build("//examples/llm:llm_runner")
    runner = os.path.realpath(os.path.join(ROOT, "bazel-bin", "examples", "llm", "llm_runner"))
    args = ["--model", path, "--prompt-ids", " ".join(map(str, PROMPT)), "--ids", "--ignore-eos"]
    r = subprocess.run([runner, *args, "--max-new-tokens", str(NEW_TOKENS)], capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    assert [int(t) for t in r.stdout.decode().split()] == _hf_greedy(hf, PROMPT, NEW_TOKENS)


def test_unsupported_variants_are_refused_by_name():
    cfg = transformers.Phi3Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        partial_rotary_factor=0.5,
    )
    with pytest.raises(ValueError, match="phi3: partial rotary embeddings are not supported"):
        Decoder.from_hf(transformers.Phi3ForCausalLM(cfg).eval(), 16)
