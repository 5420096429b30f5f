"""The decoder's byte-saving export options (examples/llm/export.py): --quantize-kv-cache (an int8 KV cache with a
float32 scale per position and KV head, examples/llm/kv_cache.py) and --quantize-head 4bit (the output head alone
as linear_8da4w). Each exported program runs on Ember's runtime and matches the Python model with the same
quantization (its operators' PyTorch references) over a prompt and decode steps; the int8 cache is written in
place and planned at about a quarter of the float cache's bytes; the head option leaves an 8da4w export as it was.

Tolerance for the runtime against the quantized Python model: 1e-4 of the logits' magnitude (float32 sums in
another order; the quantized values themselves are computed bit for bit alike)."""

import pytest
import torch

from zoo.public import torchvision_cpu

torchvision_cpu.ensure()

from examples.llm import kv_cache  # noqa: E402
from examples.llm import quantize as quant  # noqa: E402
from examples.llm.export import export_decoder, main  # noqa: E402
from examples.llm.model import Decoder  # noqa: E402
from tests.llm import tiny_models  # noqa: E402

MAX_SEQ_LEN = 40
PROMPT = [1, 17, 42, 7, 99, 5, 63]
DECODE = [11, 250, 3, 180]


def _hf(tied=False):
    return tiny_models.llama(3505, intermediate_size=160, tie_word_embeddings=tied)


def _model(hf, linears=None, head=False, kv8=False):
    """As export.py's main builds it."""
    model = Decoder.from_hf(hf, MAX_SEQ_LEN)
    if head and linears != "8da4w":
        quant.quantize_head(model, "4bit", 32)
    if linears:
        quant.quantize(model, linears, 32)
    if kv8:
        kv_cache.quantize_kv_cache(model)
    model.tie_head()
    return model


def _steps(run):
    """Logits of the prompt's prefill and of each decode step after it."""
    out = [run(torch.tensor([PROMPT]), torch.tensor([0]))]
    for i, tok in enumerate(DECODE):
        out.append(run(torch.tensor([[tok]]), torch.tensor([len(PROMPT) + i])))
    return torch.cat(out)


VARIANTS = {
    "fp32+kv8": dict(kv8=True),
    "8da4w+kv8": dict(linears="8da4w", kv8=True),
    "int8+head4+kv8": dict(linears="int8", head=True, kv8=True),
    "fp32+head4": dict(head=True),  # with tied embeddings
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_runtime_matches_the_quantized_python_model(runtime, name):
    model = _model(_hf(tied=name == "fp32+head4"), **VARIANTS[name])
    prog = export_decoder(model)
    model.reset_cache()
    with torch.no_grad():
        want = _steps(lambda t, p: model(t, p))
    program = runtime.load(prog.buffer)
    got = _steps(lambda t, p: program.run("forward", [t, p])[0])
    torch.testing.assert_close(got, want, rtol=0, atol=1e-4 * float(want.abs().max()))
    ops = [c.op_name for c in prog.method_graphs["forward"].calls]
    if VARIANTS[name].get("kv8"):
        assert ops.count("ember_llm::sdpa_with_int8_cache.out") == 2 and "ember_llm::sdpa_with_cache.out" not in ops
    if VARIANTS[name].get("head"):
        assert model.lm_head.__class__ is quant.Linear8da4w


def test_int8_cache_is_close_to_the_float_cache():
    hf = _hf()
    f, q = _model(hf), _model(hf, kv8=True)
    with torch.no_grad():
        a, b = _steps(lambda t, p: f(t, p)), _steps(lambda t, p: q(t, p))
    # Random weights give near-uniform logits, so this bounds the cache's error relative to their spread.
    assert float((a - b).abs().max()) <= 0.02 * float(a.abs().max())


def test_the_int8_cache_is_written_in_place_and_a_quarter_of_the_bytes():
    hf = _hf()
    fp, q8 = _model(hf), _model(hf, kv8=True)
    prog = export_decoder(q8)
    graph = prog.method_graphs["forward"]
    ops = [c.op_name for c in graph.calls]
    assert "aten::copy_" not in ops
    caches = [b for b in graph.buffers if b.fqn.endswith(("k_cache", "v_cache", "k_scales", "v_scales"))]
    assert len(caches) == 8 and all(b.is_planned for b in caches)
    writes = [c for c in graph.calls if c.op_name.startswith("aten::index_put")]
    assert sorted(id(c.outs[0]) for c in writes) == sorted(id(b) for b in caches)
    # 2 layers x (K, V) x 40 positions x 2 KV heads x (16 int8 values + one float32 scale).
    assert sum(b.nbytes for b in caches) == kv_cache.cache_bytes(q8) == 4 * MAX_SEQ_LEN * 2 * (16 + 4)
    assert kv_cache.cache_bytes(fp) == 4 * MAX_SEQ_LEN * 2 * 16 * 4


def test_an_8da4w_head_is_left_as_it_is():
    model = _model(_hf())
    quant.quantize(model, "8da4w", 32)
    head = model.lm_head
    assert quant.quantize_head(model, "4bit", 32) is False and model.lm_head is head


def test_export_command_line(tmp_path, capsys):
    hf = _hf(tied=True)
    hf.save_pretrained(tmp_path / "ckpt")
    sizes = {}
    for name, flags in {"fp32": [], "fp32+head4+kv8": ["--quantize-head", "4bit", "--quantize-kv-cache"]}.items():
        out = tmp_path / f"{name}.pte"
        assert main(["--model", str(tmp_path / "ckpt"), "--max-seq-len", str(MAX_SEQ_LEN), "-o", str(out)] + flags) == 0
        sizes[name] = out.stat().st_size
        said = capsys.readouterr().out
        assert ("head 4bit, KV cache int8 (6,400 bytes)" in said) == ("kv8" in name), said
    # Tied: the fp32 file holds the table once; with a 4-bit head it holds the table plus the head's int4 copy
    # (320 x 64 / 2 bytes and a float32 scale per 32 values: 12,800 bytes), the cache being planned, not stored.
    assert 12_800 <= sizes["fp32+head4+kv8"] - sizes["fp32"] <= 12_800 + 4096
    with pytest.raises(SystemExit):
        main(["--model", str(tmp_path / "ckpt"), "--quantize-head", "4bit", "--group-size", "256", "-o", "x.pte"])
    assert "--group-size 256 does not divide the head's input size [64]" in capsys.readouterr().err
