"""ember_llm::embedding_int8 and ember_llm::embedding_4bit (kernels/portable/op_llm_embedding.cc) against their
PyTorch references (kernels/portable/llm_ops.py), on both builds (the default build has no kernel of its own for
them and takes portable's): index shapes of a decode step, a prompt and a batch, Int and Long indices, every
group size, Float/Half/BFloat16 tables.

Exact: each value is one float32 product of an integer and its scale, rounded once to the output's dtype, in the
kernel as in the reference."""

import pytest
import torch

import exir
from kernels.portable.llm_ops import embedding_4bit, embedding_int8, pack_int4

g = torch.Generator().manual_seed(2511)


class Int8(torch.nn.Module):
    def forward(self, w, s, idx):
        return embedding_int8(w, s, idx)


class Four(torch.nn.Module):
    def __init__(self, group):
        super().__init__()
        self.group = group

    def forward(self, w, s, idx):
        return embedding_4bit(w, s, self.group, idx)


def _run(runtime, module, inputs, kernels):
    prog = exir.to_edge(torch.export.export(module, tuple(inputs))).to_executorch()
    return runtime.load(prog.buffer, kernels=kernels).run("forward", inputs)[0]


V, D = 50, 128
INDICES = {
    "decode": lambda dt: torch.tensor([[7]], dtype=dt),
    "prompt": lambda dt: torch.randint(0, V, (1, 13), generator=g).to(dt),
    "batch_edges": lambda dt: torch.tensor([[0, V - 1, 3], [V - 1, 0, 0]], dtype=dt),
}


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32], ids=str)
@pytest.mark.parametrize("shape", sorted(INDICES))
def test_embedding_int8_matches_the_reference(runtime, kernels, dtype, index_dtype, shape):
    w = torch.randint(-127, 128, (V, D), generator=g, dtype=torch.int8)
    s = (torch.rand(V, generator=g) * 0.02 + 0.001).to(dtype)
    idx = INDICES[shape](index_dtype)
    got = _run(runtime, Int8(), [w, s, idx], kernels)
    want = embedding_int8(w, s, idx)
    assert got.dtype == dtype and got.shape == (*idx.shape, D)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("group", [32, 64, 128])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", sorted(INDICES))
def test_embedding_4bit_matches_the_reference(runtime, kernels, group, dtype, shape):
    q = torch.randint(-8, 8, (V, D), generator=g, dtype=torch.int8)
    s = (torch.rand(V, D // group, generator=g) * 0.1 + 0.01).to(dtype)
    idx = INDICES[shape](torch.int64)
    got = _run(runtime, Four(group), [pack_int4(q), s, idx], kernels)
    want = embedding_4bit(pack_int4(q), s, group, idx)
    assert got.dtype == dtype and got.shape == (*idx.shape, D)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    # And the reference is the plain dequantization of the unpacked table.
    plain = (q[idx].float() * s.float()[idx].repeat_interleave(group, dim=-1)).to(dtype)
    torch.testing.assert_close(got, plain, rtol=0, atol=0)


@pytest.mark.parametrize("kernels", ["default", "portable"])
def test_an_index_outside_the_table_is_refused_by_value_and_position(runtime, kernels, capfd, monkeypatch):
    monkeypatch.setenv("EMBER_LOG", "1")
    w = torch.randint(-127, 128, (V, D), generator=g, dtype=torch.int8)
    s = torch.rand(V, generator=g)
    prog = exir.to_edge(torch.export.export(Int8(), (w, s, torch.tensor([[1, 2, 3]])))).to_executorch()
    method = runtime.load(prog.buffer, kernels=kernels)
    for idx, message in (
        ([1, 2, V], "index 50 at position 2 is outside the table's rows 0 .. 49"),
        ([-1, 2, 3], "index -1 at position 0 is outside"),
    ):
        with pytest.raises(RuntimeError, match=r"ember_llm::embedding_int8.out\) failed"):
            method.run("forward", [w, s, torch.tensor([idx])])
        assert f"ember_llm::embedding_int8.out: {message}" in capfd.readouterr().err


@pytest.mark.parametrize("kernels", ["default", "portable"])
def test_scales_that_do_not_match_the_groups_are_refused(runtime, kernels, capfd, monkeypatch):
    monkeypatch.setenv("EMBER_LOG", "1")
    q = pack_int4(torch.randint(-8, 8, (V, D), generator=g, dtype=torch.int8))
    inputs = [q, torch.rand(V, 3, generator=g), torch.tensor([[1]])]  # 128 values in groups of 64 need 2 scales
    prog = exir.to_edge(torch.export.export(Four(64), tuple(inputs))).to_executorch()
    method = runtime.load(prog.buffer, kernels=kernels)
    with pytest.raises(RuntimeError, match=r"ember_llm::embedding_4bit.out\) failed"):
        method.run("forward", inputs)
    assert "embedding_4bit.out: scales must be [50, groups] for a 50-row table" in capfd.readouterr().err
