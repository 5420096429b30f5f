"""Decoders exported with examples/llm (issue 18 items 1 and 4): greedy generation on Ember's runtime yields the
token ids of Hugging Face `generate` on the same random-weight model (fp32), for a grouped-query Llama and a Qwen2
(attention biases, tied embeddings: the head reads the embedding's table in place), on the default and portable
builds; the KV cache is updated in place and
planned once; the metadata is in constant methods; a position past the cache is refused by name."""

import pytest
import torch

from zoo.public import torchvision_cpu

torchvision_cpu.ensure()

import transformers  # noqa: E402  (after torchvision_cpu.ensure)

from examples.llm.export import export_decoder  # noqa: E402
from tests.llm import tiny_models  # noqa: E402
from examples.llm.model import Decoder  # noqa: E402

MAX_SEQ_LEN = 48
NEW_TOKENS = 24


def _llama():
    return tiny_models.llama(181, intermediate_size=160)


def _qwen2():
    torch.manual_seed(182)
    cfg = transformers.Qwen2Config(
        vocab_size=300,
        hidden_size=48,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=6,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
    )
    return transformers.Qwen2ForCausalLM(cfg).eval()


MODELS = {"llama_gqa": _llama, "qwen2_tied": _qwen2}
PROMPT = [1, 17, 42, 7, 99, 5]


@pytest.fixture(scope="module")
def exported():
    out = {}
    for name, make in MODELS.items():
        hf = make()
        model = Decoder.from_hf(hf, MAX_SEQ_LEN)
        # As examples/llm/export.py does: a tied float head reads the embedding's table (ember_llm::linear).
        assert model.tie_head() == hf.config.tie_word_embeddings
        out[name] = (hf, export_decoder(model))
    return out


def _hf_greedy(hf, prompt, n):
    with torch.no_grad():
        ids = hf.generate(torch.tensor([prompt]), max_new_tokens=n, do_sample=False, eos_token_id=None, pad_token_id=0)
    return ids[0, len(prompt) :].tolist()


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_greedy_generation_matches_hugging_face(runtime, exported, name, kernels):
    from ember import llm

    hf, prog = exported[name]
    program = runtime.load(prog.buffer, kernels=kernels)
    result = llm.generate(program, PROMPT, NEW_TOKENS, eos_ids=[])
    assert result.ids == _hf_greedy(hf, PROMPT, NEW_TOKENS)
    assert result.prompt_tokens == len(PROMPT) and len(result.ids) == NEW_TOKENS
    # A second generation on the same loaded program overwrites the cache from position 0 and agrees again.
    assert llm.generate(program, PROMPT[:3], 8, eos_ids=[]).ids == _hf_greedy(hf, PROMPT[:3], 8)


def test_prefill_logits_match_eager(runtime, exported):
    hf, prog = exported["llama_gqa"]
    program = runtime.load(prog.buffer)
    got = program.run("forward", [torch.tensor([PROMPT]), torch.tensor([0])])[0]
    with torch.no_grad():
        want = hf(torch.tensor([PROMPT])).logits[:, -1]
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_the_cache_is_written_in_place_and_planned_once(exported):
    _, prog = exported["llama_gqa"]
    graph = prog.method_graphs["forward"]
    ops = [c.op_name for c in graph.calls]
    # No write-back copies and no expand/permute copies of the caches: index_put writes them, the fused attention
    # reads them where they lie.
    assert "aten::copy_" not in ops
    caches = [b for b in graph.buffers if b.fqn.endswith(("k_cache", "v_cache"))]
    assert len(caches) == 4
    writes = [c for c in graph.calls if c.op_name.startswith("aten::index_put")]
    assert sorted(id(c.outs[0]) for c in writes) == sorted(id(b) for b in caches)
    assert sum(op.startswith("ember_llm::sdpa_with_cache") for op in ops) == 2
    readers = {op for c in graph.calls for op in [c.op_name] if any(t in caches for t in c.input_tensors())}
    assert readers <= {"aten::index_put.out", "ember_llm::sdpa_with_cache.out"}, readers
    # Planned once, in the pool, at max_seq_len: 2 layers x (K, V) x 48 x 2 KV heads x 16 x 4 bytes.
    assert sum(b.nbytes for b in caches) == 4 * MAX_SEQ_LEN * 2 * 16 * 4
    assert all(b.is_planned for b in caches)


def test_a_tied_head_reads_the_embedding_table_in_place(exported):
    hf, prog = exported["qwen2_tied"]
    ops = [c.op_name for c in prog.method_graphs["forward"].calls]
    assert "ember_llm::linear.out" in ops and "aten::mm.out" in ops
    # Without tying, the head's mm holds a transposed copy of the [vocab, dim] table: one table more in the file.
    untied = export_decoder(Decoder.from_hf(hf, MAX_SEQ_LEN))
    table = hf.config.vocab_size * hf.config.hidden_size * 4
    assert abs(len(untied.buffer) - len(prog.buffer) - table) < 4096  # constants are padded to alignment


def test_metadata_constant_methods(runtime, exported):
    hf, prog = exported["qwen2_tied"]
    program = runtime.load(prog.buffer)
    from ember import llm

    meta = llm.metadata(program)
    assert meta == {
        "get_max_seq_len": MAX_SEQ_LEN,
        "get_vocab_size": 300,
        "get_bos_id": 1,
        "get_eos_ids": [2],
        "get_n_layers": 2,
    }
    assert program.run("use_kv_cache", []) == [True]


def test_positions_past_the_cache_are_refused(runtime, exported):
    _, prog = exported["llama_gqa"]
    program = runtime.load(prog.buffer)
    # Positions 46..48 of a 48-position cache: the first op that would read past its table (the rotary cos/sin
    # lookup) refuses, by name, before anything is written.
    with pytest.raises(RuntimeError, match=r"aten::index\.Tensor_out\) failed: InvalidArgument"):
        program.run("forward", [torch.tensor([[5, 6, 7]]), torch.tensor([MAX_SEQ_LEN - 2])])
    # The method is still usable afterwards.
    assert program.run("forward", [torch.tensor([[5]]), torch.tensor([0])])[0].shape == (1, 320)
    from ember import llm

    with pytest.raises(ValueError, match="exceed the program's max_seq_len 48"):
        llm.generate(program, PROMPT, MAX_SEQ_LEN)


def test_sampling_is_seeded(runtime, exported):
    from ember import llm

    _, prog = exported["llama_gqa"]
    program = runtime.load(prog.buffer)
    a = llm.generate(program, PROMPT, 12, temperature=1.0, seed=7, eos_ids=[]).ids
    b = llm.generate(program, PROMPT, 12, temperature=1.0, seed=7, eos_ids=[]).ids
    c = llm.generate(program, PROMPT, 12, temperature=1.0, seed=8, eos_ids=[]).ids
    assert a == b and a != c
