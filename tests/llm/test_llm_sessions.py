"""Sessions over one decoder program (issue 34 item 1): append prefills only the new tokens, rewind, fork, save and
restore continue bit for bit as a session fed the same calls; corrupted or foreign session files are refused by
name; the prefix cache's sessions equal fresh prefills; a full context is a named error or slides a window of sink
and recent tokens; a program exported before sessions still runs one. The memory figures are MethodMeta's:
one session costs its KV cache's bytes, the rest is the slot's."""

import os
import threading

import pytest
import torch

from tests.conftest import bazel_build
from zoo.public import torchvision_cpu

torchvision_cpu.ensure()

from examples.llm import kv_cache, layout  # noqa: E402
from examples.llm import quantize as quant  # noqa: E402
from examples.llm.export import export_decoder  # noqa: E402
from examples.llm.model import Decoder  # noqa: E402
from tests.llm import tiny_models  # noqa: E402

MAX_SEQ_LEN = 48
VOCAB = 200
PROMPT = [1] + [(7 * i + 3) % VOCAB for i in range(1, 20)]


def _hf(seed):
    return tiny_models.llama(seed, vocab_size=VOCAB, max_position_embeddings=MAX_SEQ_LEN)


@pytest.fixture(scope="module")
def llm():
    bazel_build("//examples/llm:_ember_llm.so")
    from ember import llm as ember_llm

    return ember_llm


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    """name -> (.pte path, eager Decoder): fp32 (blocked linears, as export.py writes it), 8da4w (integer sums: a
    position's logits have the same bits however the tokens are split into calls), fp32 with the int8 KV cache,
    fp32 from other weights, and fp32 in the layout of programs exported before sessions."""
    d = tmp_path_factory.mktemp("sessions")
    out = {}
    for name, seed in (("fp32", 0), ("8da4w", 0), ("kv8", 0), ("other", 1), ("legacy", 0)):
        model = Decoder.from_hf(_hf(seed), MAX_SEQ_LEN).eval()
        if name == "8da4w":
            quant.quantize(model, "8da4w", 32)
        else:
            layout.block_linears(model)
        if name == "kv8":
            kv_cache.quantize_kv_cache(model)  # int8 rows and float scales: all of them the session's state
        path = str(d / f"{name}.pte")
        export_decoder(model, sessions=name != "legacy").save(path)
        out[name] = (path, model)
    return out


@pytest.fixture(scope="module")
def programs(llm, paths):
    return {name: llm.load(path) for name, (path, _) in paths.items()}


def _eager_logits(model, ids):
    model.reset_cache()
    with torch.no_grad():
        return model(torch.tensor([ids]), torch.tensor([0]))[0]


def test_memory_figures(llm, paths, programs):
    for name in ("fp32", "8da4w", "kv8"):
        path, model = paths[name]
        mem = llm.plan(path)
        assert mem == programs[name].memory  # known before load, and what load allocated
        assert len(mem["pools"]) == 2 and mem["session_bytes"] == mem["pools"][1]
        assert mem["session_bytes"] == kv_cache.cache_bytes(model)  # the KV cache and nothing else
        assert (
            mem["slot_bytes"]
            == mem["total"] - mem["session_bytes"]
            == mem["pools"][0] + mem["method_allocator"] + mem["scratch"]
        )
        s = programs[name].new_session()
        assert s.state_bytes == mem["session_bytes"] and len(s.state()) == 0
        s.append(PROMPT[:5])  # state(): the rows of its tokens, what fork copies and save writes
        assert len(s.state()) == mem["session_bytes"] * 5 // MAX_SEQ_LEN
    legacy = programs["legacy"].memory
    assert len(legacy["pools"]) == 1 and legacy["session_bytes"] == 0 and legacy["slot_bytes"] == legacy["total"]
    assert programs["legacy"].metadata["session_memory_id"] == 0


def test_append_prefills_only_new_tokens(programs, paths):
    for name in ("fp32", "8da4w"):
        p = programs[name]
        whole = p.new_session().append(PROMPT)
        s = p.new_session()
        s.append(PROMPT[:7])
        s.append(PROMPT[7:12])
        split = s.append(PROMPT[12:])
        assert s.tokens == PROMPT and s.position == len(PROMPT)
        eager = _eager_logits(paths[name][1], PROMPT)
        torch.testing.assert_close(whole, eager, rtol=1e-4, atol=1e-4)
        if name == "8da4w":
            assert torch.equal(split, whole)
        else:
            torch.testing.assert_close(split, whole, rtol=1e-5, atol=1e-5)


def test_rewind_then_append_equals_fresh(programs):
    p = programs["fp32"]
    s = p.new_session()
    s.append(PROMPT)
    s.append([11, 12, 13])
    s.rewind(10)
    assert s.tokens == PROMPT[:10]
    again = s.append([50, 51])
    fresh = p.new_session()
    fresh.append(PROMPT[:10])
    assert torch.equal(again, fresh.append([50, 51]))
    with pytest.raises(RuntimeError, match="cannot rewind to position 13: the session holds 12 tokens"):
        s.rewind(13)


@pytest.mark.parametrize("name", ["fp32", "kv8"])
def test_save_restore_bit_exact(programs, tmp_path, name):
    p = programs[name]
    s = p.new_session()
    s.append(PROMPT)
    path = str(tmp_path / "a.session")
    s.save(path)
    r = p.restore_session(path)
    assert r.tokens == s.tokens and r.state() == s.state()
    for t in (5, 9, 17, 3):  # decode steps, interleaved between the two sessions
        assert torch.equal(s.append([t]), r.append([t]))
    assert r.state() == s.state()


def test_bad_session_files_refused(programs, tmp_path):
    p = programs["fp32"]
    s = p.new_session()
    s.append(PROMPT)
    path = str(tmp_path / "good.session")
    s.save(path)
    data = open(path, "rb").read()

    def refused(raw, match, program=p):
        bad = str(tmp_path / "bad.session")
        with open(bad, "wb") as f:
            f.write(raw)
        with pytest.raises(RuntimeError, match=match):
            program.restore_session(bad)

    refused(data[:-1], f"{len(data) - 1} bytes; its header says {len(data)}")
    refused(data[:30], "less than the 56 of a header and checksum")
    refused(b"GARBAGE!" + data[8:], "not the magic")
    flipped = bytearray(data)
    flipped[200] ^= 4
    refused(bytes(flipped), "checksum .* does not match")
    refused(data, "saved from another program", program=programs["other"])
    with pytest.raises(RuntimeError, match="AccessFailed"):
        p.restore_session(str(tmp_path / "missing.session"))


def test_fork_is_independent(programs):
    p = programs["fp32"]
    s = p.new_session()
    s.append(PROMPT[:10])
    f = s.fork()
    a1, b1 = s.append([20, 21]), f.append([30])
    a2, b2 = s.append([22]), f.append([31, 32, 33])
    x = p.new_session()
    x.append(PROMPT[:10])
    y = p.new_session()
    y.append(PROMPT[:10])
    assert torch.equal(a1, x.append([20, 21])) and torch.equal(b1, y.append([30]))
    assert torch.equal(a2, x.append([22])) and torch.equal(b2, y.append([31, 32, 33]))
    assert s.tokens == PROMPT[:10] + [20, 21, 22] and f.tokens == PROMPT[:10] + [30, 31, 32, 33]


def test_prefix_cache(llm, programs):
    p = programs["8da4w"]
    system, user = PROMPT[:12], [40, 41, 42, 43]
    cache = llm.PrefixCache(p, max_entries=2)
    cache.add(system)
    s, logits, reused = cache.start(system + user)
    assert reused == len(system) and s.tokens == system + user
    fresh = p.new_session().append(system + user)
    assert torch.equal(logits, fresh)  # 8da4w: one prefill and two give the same bits
    s2, logits2, reused2 = cache.start(system)  # exactly the cached tokens: nothing to prefill
    assert reused2 == len(system) and torch.equal(logits2, p.new_session().append(system))
    assert torch.equal(s2.append(user), fresh)
    # Bounded: a third prefix drops the least recently used one.
    cache.add(PROMPT[:3])
    cache.add(PROMPT[:5])
    assert cache.size == 2 and cache.bytes >= 2 * p.memory["session_bytes"]
    _, _, reused3 = cache.start(system + user)
    assert reused3 == 5  # the longest cached prefix left
    _, _, miss = cache.start([9, 9, 9])
    assert miss == 0


def test_context_full(llm, programs):
    p = programs["8da4w"]
    s = p.new_session()
    s.append(PROMPT * 2)  # 40 of 48
    with pytest.raises(llm.ContextFullError, match="context full: 40 tokens \\+ 9 new pass max_seq_len 48"):
        s.append(list(range(3, 12)))
    assert s.position == 40  # unchanged
    w = p.new_session(context_full="sliding_window", sink_tokens=2)
    history = PROMPT * 2
    w.append(history)
    new = list(range(3, 12))
    logits = w.append(new)
    recent = history[-((MAX_SEQ_LEN - 2) // 2) :]  # half the context after the sinks
    assert w.slides == 1 and w.tokens == history[:2] + recent + new
    # As a session fed the sinks, then the recent tokens, then the new ones.
    ref = p.new_session()
    ref.append(history[:2])
    ref.append(recent)
    assert torch.equal(logits, ref.append(new))
    too_long = p.new_session(context_full="sliding_window", sink_tokens=2)
    too_long.append([1, 2, 3])
    with pytest.raises(llm.ContextFullError, match="47 new tokens after 2 sink tokens"):
        too_long.append([5] * 47)


def test_program_exported_before_sessions(programs, paths):
    legacy = programs["legacy"]
    s = legacy.new_session()
    logits = s.append(PROMPT)
    assert torch.equal(logits, programs["fp32"].new_session().append(PROMPT))  # same weights, same kernels
    with pytest.raises(RuntimeError, match="NotSupported: .*exported before sessions"):
        legacy.new_session()
    with pytest.raises(RuntimeError, match="NotSupported: .*cannot be forked"):
        s.fork()
    del s  # its one session ended: another may start
    assert legacy.new_session().position == 0
    assert os.path.getsize(paths["legacy"][0]) > 0


def test_slots_run_sessions_at_once(llm, paths, programs):
    """Two slots: two sessions append from two threads at once (append releases the GIL), each getting the bits a
    one-slot program gives it alone."""
    p2 = llm.load(paths["fp32"][0], slots=2)
    assert p2.slots == 2 and p2.memory == programs["fp32"].memory  # the figures are per slot and per session
    steps = {0: [5, 9, 17, 3, 8, 21, 60, 61], 1: [40, 41, 42, 43, 44, 45, 46, 47]}
    expected = {}
    for k, toks in steps.items():
        s = programs["fp32"].new_session()
        expected[k] = [s.append(PROMPT[: 10 + k])] + [s.append([t]) for t in toks]
    results = {}

    def run(k):
        s = p2.new_session()
        results[k] = [s.append(PROMPT[: 10 + k])] + [s.append([t]) for t in steps[k]]

    threads = [threading.Thread(target=run, args=(k,)) for k in steps]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in steps:
        assert len(results[k]) == len(expected[k])
        assert all(torch.equal(a, b) for a, b in zip(results[k], expected[k])), k
    with pytest.raises(RuntimeError, match="NotSupported: .*2 slots asked"):
        llm.load(paths["legacy"][0], slots=2)
