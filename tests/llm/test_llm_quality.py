"""bench/llm_quality at a small scale (issue 35 item 5): the corpus split is disjoint and fixed by its seed, a few
training steps on a slice of the standard library lower the held-out loss and give the same weights twice, the
windows score every token once, and the perplexity of an Ember fp32 .pte equals eager PyTorch's on the same model,
window by window, through prefill and decode calls."""

import math
import os

import pytest
import torch

from bench.llm_quality import corpus, llamacpp, perplexity, train
from bench.llm_quality import tokenizer as tok_mod
from bench.llm_quality.windows import windows
from tests.conftest import ROOT

TINY = dict(
    train.CONFIG,
    vocab_size=320,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    max_position_embeddings=32,
)
SETTINGS = train.Settings(steps=24, batch=8, context=32, lr=3e-3, warmup=4, eval_every=12, eval_windows=8)


@pytest.fixture(scope="module")
def small():
    """(tokenizer, train stream, held-out stream) from the first 60 files of the standard library."""
    c = corpus.load(seed=0, heldout_fraction=0.1, limit_files=60)
    tok = tok_mod.train(c.train.texts, TINY["vocab_size"])
    stream = torch.tensor(tok_mod.stream(tok, c.train.texts))
    heldout = torch.tensor(tok_mod.stream(tok, c.heldout.texts))
    return tok, stream, heldout


@pytest.fixture(scope="module")
def trained(small):
    _, stream, heldout = small
    model = train.build_model(SETTINGS.seed, TINY)
    log = train.train(model, stream, heldout, SETTINGS, log=lambda _: None)
    return model, log


def test_split_is_disjoint_and_fixed_by_its_seed():
    a, b, other = corpus.load(seed=0), corpus.load(seed=0), corpus.load(seed=1)
    assert not set(a.train.files) & set(a.heldout.files)
    assert sorted(a.train.files + a.heldout.files) == corpus.list_files(a.root)
    assert not any(part in corpus.SKIPPED_DIRS for f in a.train.files for part in f.split("/")[:-1])
    assert (a.train.digest(), a.heldout.digest()) == (b.train.digest(), b.heldout.digest())
    assert a.heldout.digest() != other.heldout.digest()
    # Held-out files are added until they reach the fraction of the bytes, and not one more.
    target = a.heldout_fraction * (a.heldout.n_bytes + a.train.n_bytes)
    last = len(a.heldout.texts[-1].encode("utf-8"))
    assert a.heldout.n_bytes - last < target <= a.heldout.n_bytes


def test_training_lowers_held_out_loss(trained):
    _, log = trained
    losses = [c["heldout_loss"] for c in log["heldout_checkpoints"]]
    assert [c["step"] for c in log["heldout_checkpoints"]] == [0, 12, 24]
    # From about ln(320) = 5.8 (random weights) the held-out loss falls at every checkpoint.
    assert losses[0] > losses[1] > losses[2]
    assert losses[2] < losses[0] - 0.5
    assert log["curve"][-1]["train_loss"] < math.log(TINY["vocab_size"]) - 0.5
    assert torch.get_num_threads() >= 1 and log["threads"] == 1


def test_same_seed_same_weights(small, trained):
    model, _ = trained
    _, stream, heldout = small
    again = train.build_model(SETTINGS.seed, TINY)
    train.train(again, stream, heldout, SETTINGS, log=lambda _: None)
    for (name, p), (_, q) in zip(model.state_dict().items(), again.state_dict().items()):
        assert torch.equal(p, q), name


@pytest.mark.parametrize("n,window,stride", [(2, 4, 4), (10, 4, 4), (11, 4, 4), (50, 8, 3), (33, 8, 1), (7, 16, 16)])
def test_windows_score_every_token_once(n, window, stride):
    scored = []
    for begin, end, first in windows(n, window, stride):
        assert 0 <= first < end - begin <= window
        scored += range(begin + first + 1, end + 1)
    assert scored == list(range(1, n))


def test_uniform_logits_give_the_vocabulary_size():
    r = perplexity.score(list(range(40)), lambda inputs, first: torch.zeros(len(inputs) - first, 57), 16, 5)
    assert r.tokens == 39 and r.ppl == pytest.approx(57, rel=1e-12)


def test_ember_fp32_perplexity_matches_eager(runtime, small, trained, tmp_path):
    """The trained model exported as the benchmark exports it; windows of 24 with stride 10 make each window after
    the first start with a multi-token prefill, then decode calls."""
    from examples.llm.export import export_decoder
    from examples.llm.model import Decoder

    model, _ = trained
    _, _, heldout = small
    tokens = heldout[:200].tolist()
    path = str(tmp_path / "tiny.pte")
    export_decoder(Decoder.from_hf(model, SETTINGS.context)).save(path)
    got = perplexity.ember_perplexity(path, tokens, window=24, stride=10)
    want = perplexity.eager_perplexity(model, tokens, window=24, stride=10)
    assert got.tokens == want.tokens == len(tokens) - 1
    torch.testing.assert_close(got.nll, want.nll, rtol=0, atol=1e-4)
    assert math.isclose(got.ppl, want.ppl, rel_tol=1e-5)
    # A trained model, not a uniform guess: the held-out perplexity is well under the vocabulary size.
    assert want.ppl < TINY["vocab_size"] / 2
    # The default window is the program's max_seq_len, stride the window: one prefill token, then decode calls.
    default = perplexity.ember_perplexity(path, tokens)
    assert (default.window, default.stride) == (SETTINGS.context, SETTINGS.context)
    torch.testing.assert_close(
        default.nll, perplexity.eager_perplexity(model, tokens, SETTINGS.context).nll, rtol=0, atol=1e-4
    )


@pytest.mark.skipif(
    not os.path.exists(llamacpp.python(ROOT)),
    reason=f"no llama.cpp venv at {llamacpp.python(ROOT)} (tools/setup_llamacpp_venv.sh)",
)
def test_llamacpp_f32_perplexity_matches_eager(small, trained, tmp_path):
    """llama.cpp's side scores the same windows: its F32 file (the same weights) agrees with eager per token, and
    Q4_0 costs perplexity (so the rows differ by format)."""
    model, _ = trained
    tok, _, heldout = small
    ckpt = str(tmp_path / "ckpt")
    model.save_pretrained(ckpt)
    tok.save(os.path.join(ckpt, "tokenizer.json"))
    tokens = heldout[:200].tolist()
    rows = {r["format"]: r for r in llamacpp.evaluate(ROOT, ckpt, tokens, 24, 10, str(tmp_path))}
    want = perplexity.eager_perplexity(model, tokens, window=24, stride=10)
    f32 = torch.tensor(rows["F32"]["nll"], dtype=torch.float64)
    torch.testing.assert_close(f32, want.nll, rtol=0, atol=1e-3)
    assert rows["Q4_0"]["bytes"] < rows["Q8_0"]["bytes"] < rows["F32"]["bytes"]
    assert float(torch.tensor(rows["Q4_0"]["nll"]).mean()) != pytest.approx(float(want.nll.mean()), rel=1e-4)


def test_paired_difference_of_a_constant_shift():
    """Every token's loss raised by 0.25 nats: the difference is 0.25 with no spread; against itself, zero."""
    base = perplexity.score(list(range(60)), lambda inputs, first: torch.randn(len(inputs) - first, 64), 16)
    shifted = perplexity.Perplexity(base.nll + 0.25, base.window, base.stride)
    d = perplexity.paired_difference(shifted, base)
    assert d["windows"] == 4 and d["mean_nll_difference"] == pytest.approx(0.25)
    assert d["standard_error"] == pytest.approx(0.0, abs=1e-12)
    assert perplexity.paired_difference(base, base)["mean_nll_difference"] == 0.0


def test_format_options_become_export_flags():
    from bench.llm_quality.__main__ import export_flags

    assert export_flags("fp32", 32) == []
    assert export_flags("int8+kv8", 32) == ["--quantize", "int8", "--quantize-kv-cache"]
    assert export_flags("8da4w+head4+kv8", 64) == [
        "--quantize",
        "8da4w",
        "--group-size",
        "64",
        "--quantize-head",
        "4bit",
        "--quantize-kv-cache",
    ]
    with pytest.raises(ValueError, match="unknown options \\['kv4'\\]"):
        export_flags("int8+kv4", 32)
    with pytest.raises(ValueError, match="must be fp32, int8 or 8da4w"):
        export_flags("q4+kv8", 32)
