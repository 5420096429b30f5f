"""The C API (runtime/c_api/include/ember/ember.h, examples/llm/c_api/include/ember/ember_llm.h) through ctypes,
against the shared libraries an application links: small models exported with exir run through libember.so and
match eager PyTorch (tolerance per dtype); metadata and planned memory read before load; a tiny Llama decodes
through libember_llm.so's sessions to the same greedy tokens as ember.llm, and fork, rewind, save and restore
continue bit for bit; the tokenizer round-trips. Hostile calls come back as statuses with messages."""

import ctypes
import threading
import os

import pytest
import torch

import exir
from tests.conftest import ROOT, bazel_build
from tests.llm.test_llm_runner import tokenizer_file  # noqa: F401  (a pytest fixture)
from tests.llm.test_llm_sessions import MAX_SEQ_LEN, PROMPT, _hf

MAX_RANK = 16
OK, INVALID_ARGUMENT, BUFFER_TOO_SMALL, BAD_STRUCT_SIZE = 0x00, 0x12, 0x40, 0x41
DTYPES = {torch.float32: 6, torch.int64: 4, torch.int32: 3, torch.bool: 11, torch.uint8: 0}
TORCH_OF = {v: k for k, v in DTYPES.items()}
# Eager PyTorch vs Ember's kernels: fp32 sums may be blocked in another order; integer and bool results are exact.
TOLERANCE = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.int64: dict(rtol=0, atol=0), torch.bool: {}}


class ProgramOptions(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("threads", ctypes.c_int32),
        ("verification", ctypes.c_int32),
        ("data_file", ctypes.c_char_p),
        ("borrow_buffer", ctypes.c_int32),
    ]


class MethodInfo(ctypes.Structure):
    _fields_ = [
        (n, ctypes.c_size_t)
        for n in (
            "size",
            "num_inputs",
            "num_outputs",
            "num_instructions",
            "num_pools",
            "method_allocator_bytes",
            "scratch_bytes",
            "num_mutable_buffers",
        )
    ]


class TensorInfo(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("kind", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int32 * MAX_RANK),
        ("is_dynamic", ctypes.c_int32),
        ("nbytes", ctypes.c_size_t),
    ]


class Tensor(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int32 * MAX_RANK),
        ("data", ctypes.c_void_p),
        ("nbytes", ctypes.c_size_t),
    ]


class LlmInfo(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("max_seq_len", ctypes.c_int64),
        ("vocab_size", ctypes.c_int64),
        ("bos_id", ctypes.c_int64),
        ("num_eos_ids", ctypes.c_size_t),
        ("eos_ids", ctypes.c_int64 * 8),
        ("n_layers", ctypes.c_int64),
        ("session_bytes", ctypes.c_size_t),
        ("slot_bytes", ctypes.c_size_t),
    ]


def _declare(lib):
    p = ctypes.c_void_p
    pp = ctypes.POINTER(ctypes.c_void_p)
    sz = ctypes.POINTER(ctypes.c_size_t)
    sigs = {
        "ember_version": ([], ctypes.c_uint32),
        "ember_version_string": ([], ctypes.c_char_p),
        "ember_last_error": ([], ctypes.c_char_p),
        "ember_status_name": ([ctypes.c_int], ctypes.c_char_p),
        "ember_program_load_file": ([ctypes.c_char_p, p, pp], ctypes.c_int),
        "ember_program_load_mapped": ([ctypes.c_char_p, p, pp], ctypes.c_int),
        "ember_program_load_buffer": ([p, ctypes.c_size_t, p, pp], ctypes.c_int),
        "ember_program_destroy": ([p], None),
        "ember_program_method_count": ([p, sz], ctypes.c_int),
        "ember_program_method_name": ([p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p)], ctypes.c_int),
        "ember_method_get_info": ([p, ctypes.c_char_p, p], ctypes.c_int),
        "ember_method_input_info": ([p, ctypes.c_char_p, ctypes.c_size_t, p], ctypes.c_int),
        "ember_method_output_info": ([p, ctypes.c_char_p, ctypes.c_size_t, p], ctypes.c_int),
        "ember_method_pool_bytes": ([p, ctypes.c_char_p, ctypes.c_size_t, sz], ctypes.c_int),
        "ember_method_load": ([p, ctypes.c_char_p, p, pp], ctypes.c_int),
        "ember_method_destroy": ([p], None),
        "ember_method_set_input": ([p, ctypes.c_size_t, p], ctypes.c_int),
        "ember_method_execute": ([p], ctypes.c_int),
        "ember_method_output": ([p, ctypes.c_size_t, p], ctypes.c_int),
    }
    if hasattr(lib, "ember_llm_program_load"):
        i64p = ctypes.POINTER(ctypes.c_int64)
        fpp = ctypes.POINTER(ctypes.POINTER(ctypes.c_float))
        i32p = ctypes.POINTER(ctypes.c_int32)
        sigs.update(
            {
                "ember_llm_program_load": ([ctypes.c_char_p, p, pp], ctypes.c_int),
                "ember_llm_program_destroy": ([p], None),
                "ember_llm_program_info": ([p, p], ctypes.c_int),
                "ember_llm_session_create": ([p, p, pp], ctypes.c_int),
                "ember_llm_session_restore": ([p, ctypes.c_char_p, p, pp], ctypes.c_int),
                "ember_llm_session_destroy": ([p], None),
                "ember_llm_session_append": ([p, i64p, ctypes.c_size_t, fpp], ctypes.c_int),
                "ember_llm_session_rewind": ([p, ctypes.c_size_t], ctypes.c_int),
                "ember_llm_session_position": ([p, sz], ctypes.c_int),
                "ember_llm_session_tokens": ([p, i64p, ctypes.c_size_t, sz], ctypes.c_int),
                "ember_llm_session_fork": ([p, pp], ctypes.c_int),
                "ember_llm_session_save": ([p, ctypes.c_char_p], ctypes.c_int),
                "ember_llm_sampler_create": ([ctypes.c_float, ctypes.c_uint64, ctypes.c_float, pp], ctypes.c_int),
                "ember_llm_sampler_destroy": ([p], None),
                "ember_llm_sampler_sample": ([p, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t, i32p], ctypes.c_int),
                "ember_llm_tokenizer_load": ([ctypes.c_char_p, pp], ctypes.c_int),
                "ember_llm_tokenizer_destroy": ([p], None),
                "ember_llm_tokenizer_encode": (
                    [p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int32, i32p, ctypes.c_size_t, sz],
                    ctypes.c_int,
                ),
                "ember_llm_tokenizer_decode": (
                    [p, i32p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, sz],
                    ctypes.c_int,
                ),
            }
        )
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib


class Api:
    """Calls that must succeed raise with the library's own message when they do not."""

    def __init__(self, lib):
        self.lib = lib

    def __call__(self, name, *args):
        status = getattr(self.lib, name)(*args)
        assert status == OK, f"{name}: {self.lib.ember_status_name(status).decode()}: {self.error()}"

    def error(self):
        return self.lib.ember_last_error().decode()


@pytest.fixture(scope="module")
def libs():
    bazel_build("//runtime/c_api:libember.so", "//examples/llm/c_api:libember_llm.so")
    core = os.path.realpath(os.path.join(ROOT, "bazel-bin", "runtime", "c_api", "libember.so"))
    llm = os.path.realpath(os.path.join(ROOT, "bazel-bin", "examples", "llm", "c_api", "libember_llm.so"))
    return Api(_declare(ctypes.CDLL(core))), Api(_declare(ctypes.CDLL(llm)))


class SmallConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.conv(x)).mean(dim=(2, 3))
        return self.fc(y), y.sum(dim=1)


class IntMath(torch.nn.Module):
    def forward(self, a, b):
        return a * 3 + b, a > b


def _models():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return {
        "small_conv": (SmallConv().eval(), (torch.randn(2, 3, 12, 12, generator=g),)),
        "int_math": (
            IntMath(),
            (torch.randint(-50, 50, (4, 6), generator=g), torch.randint(-50, 50, (4, 6), generator=g)),
        ),
    }


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    d = tmp_path_factory.mktemp("c_api")
    out = {}
    for name, (module, args) in _models().items():
        path = str(d / f"{name}.pte")
        exir.to_edge({"forward": torch.export.export(module, args)}).to_executorch().save(path)
        with torch.no_grad():
            want = module(*args)
        out[name] = (path, args, want if isinstance(want, tuple) else (want,))
    return out


def _value(t: torch.Tensor) -> Tensor:
    v = Tensor(size=ctypes.sizeof(Tensor), dtype=DTYPES[t.dtype], rank=t.dim())
    for d, n in enumerate(t.shape):
        v.shape[d] = n
    v.data = t.data_ptr()
    v.nbytes = t.numel() * t.element_size()
    return v


def _copy_out(v: Tensor) -> torch.Tensor:
    dtype = TORCH_OF[v.dtype]
    shape = [v.shape[d] for d in range(v.rank)]
    raw = ctypes.string_at(v.data, v.nbytes)
    return torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape).clone()


def _run(api, program, inputs):
    method = ctypes.c_void_p()
    api("ember_method_load", program, b"forward", None, ctypes.byref(method))
    try:
        for i, t in enumerate(inputs):
            t = t.contiguous()
            api("ember_method_set_input", method, i, ctypes.byref(_value(t)))
        api("ember_method_execute", method)
        info = MethodInfo(size=ctypes.sizeof(MethodInfo))
        api("ember_method_get_info", program, b"forward", ctypes.byref(info))
        outs = []
        for o in range(info.num_outputs):
            v = Tensor(size=ctypes.sizeof(Tensor))
            api("ember_method_output", method, o, ctypes.byref(v))
            outs.append(_copy_out(v))
        return outs
    finally:
        api.lib.ember_method_destroy(method)


def _load(api, how, path, threads=1):
    program = ctypes.c_void_p()
    opts = ProgramOptions(size=ctypes.sizeof(ProgramOptions), threads=threads)
    if how == "buffer":
        data = open(path, "rb").read()
        api("ember_program_load_buffer", data, len(data), ctypes.byref(opts), ctypes.byref(program))
    else:
        api(f"ember_program_load_{how}", path.encode(), ctypes.byref(opts), ctypes.byref(program))
    return program


@pytest.mark.parametrize("how,threads", [("file", 1), ("buffer", 1), ("mapped", 2)])
def test_models_match_eager(libs, programs, how, threads):
    api, _ = libs
    for name, (path, args, want) in programs.items():
        program = _load(api, how, path, threads)
        try:
            got = _run(api, program, args)
        finally:
            api.lib.ember_program_destroy(program)
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, w.dtype, g.shape, w.shape)
            if w.dtype == torch.bool:
                assert torch.equal(g, w), name
            else:
                torch.testing.assert_close(g, w, **TOLERANCE[w.dtype], msg=name)


def test_metadata_and_planned_memory(libs, programs):
    api, _ = libs
    assert api.lib.ember_version() == int.from_bytes(b"\0" + bytes(map(int, _version().split("."))), "big")
    assert api.lib.ember_version_string().decode() == _version()
    path, args, want = programs["small_conv"]
    program = _load(api, "file", path)
    try:
        count = ctypes.c_size_t()
        api("ember_program_method_count", program, ctypes.byref(count))
        name = ctypes.c_char_p()
        api("ember_program_method_name", program, 0, ctypes.byref(name))
        assert count.value == 1 and name.value == b"forward"
        info = MethodInfo(size=ctypes.sizeof(MethodInfo))
        api("ember_method_get_info", program, b"forward", ctypes.byref(info))
        assert (info.num_inputs, info.num_outputs) == (1, 2) and info.num_pools >= 1
        assert info.method_allocator_bytes > 0 and info.num_instructions > 0
        pools = []
        for i in range(info.num_pools):
            b = ctypes.c_size_t()
            api("ember_method_pool_bytes", program, b"forward", i, ctypes.byref(b))
            pools.append(b.value)
        # The input and both outputs live in the planned pool: it holds at least their bytes.
        assert sum(pools) >= args[0].numel() * 4 + (2 * 5 + 2) * 4
        ti = TensorInfo(size=ctypes.sizeof(TensorInfo))
        api("ember_method_input_info", program, b"forward", 0, ctypes.byref(ti))
        assert (ti.dtype, ti.rank, list(ti.shape[:4]), ti.nbytes, ti.is_dynamic) == (
            6,
            4,
            [2, 3, 12, 12],
            2 * 3 * 144 * 4,
            0,
        )
        api("ember_method_output_info", program, b"forward", 0, ctypes.byref(ti))
        assert (ti.dtype, ti.rank, list(ti.shape[:2])) == (6, 2, [2, 5])
        # Hostile calls: a status and a message naming the fault.
        assert api.lib.ember_method_input_info(program, b"forward", 7, ctypes.byref(ti)) == INVALID_ARGUMENT
        assert "input 7" in api.error()
        assert api.lib.ember_method_get_info(program, b"forward", ctypes.byref(MethodInfo(size=8))) == BAD_STRUCT_SIZE
        method = ctypes.c_void_p()
        api("ember_method_load", program, b"forward", None, ctypes.byref(method))
        wrong = args[0].to(torch.int64)
        assert api.lib.ember_method_set_input(method, 0, ctypes.byref(_value(wrong))) == INVALID_ARGUMENT
        assert "input 0" in api.error() and "Long" in api.error()
        api.lib.ember_method_destroy(method)
    finally:
        api.lib.ember_program_destroy(program)
    data = open(path, "rb").read()
    program = ctypes.c_void_p()
    for cut in (0, 16, 100, len(data) // 3):
        status = api.lib.ember_program_load_buffer(data[:cut], cut, None, ctypes.byref(program))
        assert status != OK and api.error(), cut


def _version():
    return open(os.path.join(ROOT, "VERSION")).read().strip()


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    from examples.llm import layout
    from examples.llm.export import export_decoder
    from examples.llm.model import Decoder

    model = Decoder.from_hf(_hf(0), MAX_SEQ_LEN).eval()
    layout.block_linears(model)
    path = str(tmp_path_factory.mktemp("llm") / "tiny.pte")
    export_decoder(model, sessions=True).save(path)
    return path


def _greedy(api, session, prompt, new_tokens, vocab):
    sampler = ctypes.c_void_p()
    api("ember_llm_sampler_create", 0.0, 0, 1.0, ctypes.byref(sampler))
    logits = ctypes.POINTER(ctypes.c_float)()
    ids = (ctypes.c_int64 * len(prompt))(*prompt)
    api("ember_llm_session_append", session, ids, len(prompt), ctypes.byref(logits))
    out = []
    token = ctypes.c_int32()
    for _ in range(new_tokens):
        api("ember_llm_sampler_sample", sampler, logits, vocab, ctypes.byref(token))
        out.append(token.value)
        one = (ctypes.c_int64 * 1)(token.value)
        api("ember_llm_session_append", session, one, 1, ctypes.byref(logits))
    api.lib.ember_llm_sampler_destroy(sampler)
    return out, torch.tensor(logits[:vocab])


def test_llm_sessions_match_ember_llm(libs, tiny_llama, tmp_path):
    _, api = libs
    program = ctypes.c_void_p()
    api("ember_llm_program_load", tiny_llama.encode(), None, ctypes.byref(program))
    try:
        info = LlmInfo(size=ctypes.sizeof(LlmInfo))
        api("ember_llm_program_info", program, ctypes.byref(info))
        assert (info.max_seq_len, info.vocab_size) == (MAX_SEQ_LEN, 200) and info.session_bytes > 0
        vocab = info.vocab_size
        s = ctypes.c_void_p()
        api("ember_llm_session_create", program, None, ctypes.byref(s))
        got, last = _greedy(api, s, PROMPT, 8, vocab)

        # The same greedy decode through ember.llm (the Python session API over the same DecoderProgram).
        from ember import llm as ember_llm

        bazel_build("//examples/llm:_ember_llm.so")
        py_session = ember_llm.load(tiny_llama).new_session()
        logits = py_session.append(PROMPT)
        want = []
        for _ in range(8):
            want.append(int(torch.argmax(logits.reshape(-1)[-vocab:])))
            logits = py_session.append([want[-1]])
        assert got == want
        assert torch.equal(last, logits.reshape(-1)[-vocab:].float())

        position = ctypes.c_size_t()
        api("ember_llm_session_position", s, ctypes.byref(position))
        assert position.value == len(PROMPT) + 8
        tokens = (ctypes.c_int64 * 64)()
        count = ctypes.c_size_t()
        api("ember_llm_session_tokens", s, tokens, 64, ctypes.byref(count))
        assert list(tokens[: count.value]) == PROMPT + got
        assert api.lib.ember_llm_session_tokens(s, tokens, 3, ctypes.byref(count)) == BUFFER_TOO_SMALL
        assert count.value == len(PROMPT) + 8 and "room for 3" in api.error()

        # Fork, save/restore and rewind continue bit for bit as the original.
        fork = ctypes.c_void_p()
        api("ember_llm_session_fork", s, ctypes.byref(fork))
        saved = str(tmp_path / "s.session")
        api("ember_llm_session_save", s, saved.encode())
        restored = ctypes.c_void_p()
        api("ember_llm_session_restore", program, saved.encode(), None, ctypes.byref(restored))
        nxt = (ctypes.c_int64 * 1)(5)
        results = []
        for session in (s, fork, restored):
            lp = ctypes.POINTER(ctypes.c_float)()
            api("ember_llm_session_append", session, nxt, 1, ctypes.byref(lp))
            results.append(torch.tensor(lp[:vocab]))
        assert torch.equal(results[0], results[1]) and torch.equal(results[0], results[2])
        api("ember_llm_session_rewind", s, len(PROMPT))
        lp = ctypes.POINTER(ctypes.c_float)()
        first = (ctypes.c_int64 * 1)(got[0])
        api("ember_llm_session_append", s, first, 1, ctypes.byref(lp))
        fresh = ctypes.c_void_p()
        api("ember_llm_session_create", program, None, ctypes.byref(fresh))
        whole = (ctypes.c_int64 * (len(PROMPT) + 1))(*(PROMPT + [got[0]]))
        lq = ctypes.POINTER(ctypes.c_float)()
        # Split differently (one prefill of prompt + token): fp32 may differ in the last bit, so compare closely.
        rewound = torch.tensor(lp[:vocab])
        api("ember_llm_session_append", fresh, whole, len(PROMPT) + 1, ctypes.byref(lq))
        torch.testing.assert_close(rewound, torch.tensor(lq[:vocab]), rtol=1e-5, atol=1e-5)

        # A token outside the vocabulary and a corrupt session file: statuses with messages.
        bad = (ctypes.c_int64 * 1)(vocab + 7)
        assert api.lib.ember_llm_session_append(fresh, bad, 1, ctypes.byref(lq)) == INVALID_ARGUMENT
        assert api.error()
        with open(saved, "r+b") as f:
            f.seek(40)
            f.write(b"\xff\xff\xff\xff")
        broken = ctypes.c_void_p()
        assert api.lib.ember_llm_session_restore(program, saved.encode(), None, ctypes.byref(broken)) != OK
        assert saved in api.error()
        for h in (s, fork, restored, fresh):
            api.lib.ember_llm_session_destroy(h)
    finally:
        api.lib.ember_llm_program_destroy(program)


def test_llm_tokenizer_round_trip(libs, tokenizer_file):  # noqa: F811
    _, api = libs
    hf, path = tokenizer_file
    tok = ctypes.c_void_p()
    api("ember_llm_tokenizer_load", path.encode(), ctypes.byref(tok))
    try:
        text = "hello world edge runtime 12."
        raw = text.encode()
        ids = (ctypes.c_int32 * 64)()
        n = ctypes.c_size_t()
        api("ember_llm_tokenizer_encode", tok, raw, len(raw), 0, ids, 64, ctypes.byref(n))
        assert list(ids[: n.value]) == hf.encode(text).ids
        assert api.lib.ember_llm_tokenizer_encode(tok, raw, len(raw), 0, ids, 1, ctypes.byref(n)) == BUFFER_TOO_SMALL
        buf = ctypes.create_string_buffer(128)
        length = ctypes.c_size_t()
        api("ember_llm_tokenizer_decode", tok, ids, n.value, buf, 128, ctypes.byref(length))
        assert buf.value.decode() == text and length.value == len(raw)
        assert api.lib.ember_llm_tokenizer_decode(tok, ids, n.value, buf, 4, ctypes.byref(length)) == BUFFER_TOO_SMALL
    finally:
        api.lib.ember_llm_tokenizer_destroy(tok)


def test_llm_tokenizer_refusal_says_what_and_where(libs, tmp_path):
    """A broken tokenizer.json: a status, no handle, and the loader's own line (byte, line and column) in
    ember_last_error(), as the Python binding and llm_runner show it."""
    _, api = libs
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"model": {"type": "BPE",\n "vocab": {"a": 0 "b": 1}}}')
    tok = ctypes.c_void_p()
    assert api.lib.ember_llm_tokenizer_load(str(bad).encode(), ctypes.byref(tok)) != OK
    assert not tok.value
    assert str(bad) in api.error() and "byte 44 (line 2, column 19)" in api.error(), api.error()


def test_external_data_file(libs, tmp_path):
    """A program whose weights live in a .ptd: refused without the file (naming a tensor), equal to eager with it."""
    api, _ = libs
    module, args = _models()["small_conv"]
    prog = exir.to_edge({"forward": torch.export.export(module, args)}).to_executorch(
        exir.ExecutorchBackendConfig(external_constants=True)
    )
    path = str(tmp_path / "conv.pte")
    prog.save(path)
    ptd = str(tmp_path / "_default_external_constant.ptd")
    assert os.path.exists(ptd)
    with torch.no_grad():
        want = module(*args)
    program = _load(api, "mapped", path)
    try:
        method = ctypes.c_void_p()
        assert api.lib.ember_method_load(program, b"forward", None, ctypes.byref(method)) != OK
        assert "forward" in api.error() and "weight" in api.error()
    finally:
        api.lib.ember_program_destroy(program)
    program = ctypes.c_void_p()
    opts = ProgramOptions(size=ctypes.sizeof(ProgramOptions), threads=1, data_file=ptd.encode())
    api("ember_program_load_mapped", path.encode(), ctypes.byref(opts), ctypes.byref(program))
    try:
        got = _run(api, program, args)
    finally:
        api.lib.ember_program_destroy(program)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, **TOLERANCE[torch.float32])


def test_scalar_outputs_of_constant_methods(libs, tiny_llama):
    """A decoder's constant methods (get_max_seq_len, get_vocab_size) through the core API: rank-0 INT64 views."""
    api, _ = libs
    program = _load(api, "mapped", tiny_llama)
    try:
        for method, want in ((b"get_max_seq_len", MAX_SEQ_LEN), (b"get_vocab_size", 200)):
            info = TensorInfo(size=ctypes.sizeof(TensorInfo))
            api("ember_method_output_info", program, method, 0, ctypes.byref(info))
            assert (info.kind, info.dtype, info.rank) == (1, DTYPES[torch.int64], 0)  # EMBER_VALUE_INT
            m = ctypes.c_void_p()
            api("ember_method_load", program, method, None, ctypes.byref(m))
            api("ember_method_execute", m)
            v = Tensor(size=ctypes.sizeof(Tensor))
            api("ember_method_output", m, 0, ctypes.byref(v))
            assert (v.dtype, v.rank, v.nbytes) == (DTYPES[torch.int64], 0, 8)
            assert ctypes.c_int64.from_address(v.data).value == want
            api.lib.ember_method_destroy(m)
    finally:
        api.lib.ember_program_destroy(program)


def test_last_error_is_per_thread(libs, programs):
    """Two threads fail differently at the same time; each reads its own message (ctypes releases the GIL)."""
    api, _ = libs
    path, args, _ = programs["small_conv"]
    program = _load(api, "file", path)
    barrier = threading.Barrier(2)
    seen = {}

    def fail(index, tensor):
        m = ctypes.c_void_p()
        api("ember_method_load", program, b"forward", None, ctypes.byref(m))
        status = api.lib.ember_method_set_input(m, index, ctypes.byref(_value(tensor)))
        barrier.wait()  # both failures recorded before either message is read
        seen[index] = (status, api.error())
        api.lib.ember_method_destroy(m)

    try:
        threads = [
            threading.Thread(target=fail, args=(0, args[0].to(torch.int64))),
            threading.Thread(target=fail, args=(9, args[0])),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        api.lib.ember_program_destroy(program)
    assert seen[0][0] == INVALID_ARGUMENT and "input 0" in seen[0][1] and "Long" in seen[0][1]
    assert seen[9][0] == INVALID_ARGUMENT and "input 9" in seen[9][1] and "takes 1" in seen[9][1]
