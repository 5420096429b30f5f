"""Text generation from an exported decoder (examples/llm/export.py) on Ember's C++ runtime.

    from ember import llm, runtime
    result = llm.generate(runtime.load("model.pte"), prompt_ids=[1, 15, 27], max_new_tokens=32)
    result.ids, result.prefill_tokens_per_s, result.decode_tokens_per_s

The program's metadata comes from its constant methods (get_max_seq_len, get_eos_ids, ... as ExecuTorch's LLM
runner reads them). The prompt is prefilled in one call of `forward(tokens [1, T], input_pos [1])`; each new
token is then one call with T = 1. Greedy at temperature 0; otherwise softmax(logits / temperature) sampled with
a torch.Generator seeded by `seed`.

Sessions (examples/llm/session.h, through the _ember_llm extension): several conversations over one program, each
with its own KV cache, sharing the mapped weights and the activations.

    program = llm.load("model.pte")                     # llm.plan("model.pte"): the memory, before load
    program.memory["session_bytes"], program.memory["slot_bytes"]
    s = program.new_session()                           # context_full="sliding_window", sink_tokens=4 to slide
    logits = s.append([1, 15, 27])                      # float32 [vocab]; only the new tokens are prefilled
    s.rewind(2); t = s.fork(); s.save("chat.session"); program.restore_session("chat.session")
    cache = llm.PrefixCache(program, max_entries=4); cache.add(system_ids); s, logits, reused = cache.start(ids)
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import time
from typing import Callable, List, Optional, Sequence, Tuple

import torch

from ember import _tools


@dataclasses.dataclass
class GenerationResult:
    ids: List[int]  # generated tokens only (the prompt excluded)
    prompt_tokens: int
    time_to_first_token_s: float  # prefill and the first sampled token
    prefill_tokens_per_s: float
    decode_tokens_per_s: float  # tokens after the first, per second of decode calls (0 when none)
    stopped_at_eos: bool


def metadata(program) -> dict:
    """The constant methods an exported decoder carries, as Python values."""
    out = {}
    for name in ("get_max_seq_len", "get_vocab_size", "get_bos_id", "get_eos_ids", "get_n_layers"):
        if name in program.methods:
            values = program.run(name, [])
            out[name] = values if name == "get_eos_ids" else values[0]
    return out


def _pick(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> int:
    # [vocab], or [rows, vocab] from a program exported with --logits-rows: the last position's row.
    logits = logits.reshape(-1, logits.shape[-1])[-1]
    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


def generate(
    program,
    prompt_ids: Sequence[int],
    max_new_tokens: int,
    temperature: float = 0.0,
    seed: int = 0,
    eos_ids: Optional[Sequence[int]] = None,
    on_token: Optional[Callable[[int], None]] = None,
) -> GenerationResult:
    """Generates up to `max_new_tokens` after `prompt_ids`, stopping at an EOS id (the program's get_eos_ids unless
    `eos_ids` is given). `on_token(id)` is called as each token is produced (for streaming)."""
    meta = metadata(program)
    max_seq_len = meta.get("get_max_seq_len")
    if max_seq_len is None:
        raise ValueError("the program has no get_max_seq_len method: export it with python -m examples.llm.export")
    prompt = [int(t) for t in prompt_ids]
    if not prompt:
        raise ValueError("the prompt is empty: give at least one token (the BOS id, for example)")
    if len(prompt) + max_new_tokens > max_seq_len:
        raise ValueError(
            f"{len(prompt)} prompt tokens + {max_new_tokens} new ones exceed the program's max_seq_len "
            f"{max_seq_len}: export with a larger --max-seq-len or ask for fewer tokens"
        )
    stop = set(meta.get("get_eos_ids", []) if eos_ids is None else eos_ids)
    generator = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    logits = program.run("forward", [torch.tensor([prompt]), torch.tensor([0])])[0]
    prefill_s = time.perf_counter() - start
    ids: List[int] = []
    token = _pick(logits[0], temperature, generator)
    first_token_s = time.perf_counter() - start
    decode_s, stopped = 0.0, False
    while True:
        ids.append(token)
        if on_token is not None:
            on_token(token)
        if token in stop:
            stopped = True
            break
        if len(ids) >= max_new_tokens:
            break
        t0 = time.perf_counter()
        logits = program.run("forward", [torch.tensor([[token]]), torch.tensor([len(prompt) + len(ids) - 1])])[0]
        decode_s += time.perf_counter() - t0
        token = _pick(logits[0], temperature, generator)
    return GenerationResult(
        ids=ids,
        prompt_tokens=len(prompt),
        time_to_first_token_s=first_token_s,
        prefill_tokens_per_s=len(prompt) / prefill_s if prefill_s > 0 else 0.0,
        decode_tokens_per_s=(len(ids) - 1) / decode_s if decode_s > 0 else 0.0,
        stopped_at_eos=stopped,
    )


_LLM_LIB = None


def _extension():
    """_ember_llm.so (//examples/llm:_ember_llm.so): the wheel's, or in a checkout built on first use when missing;
    EMBER_LLM_LIB points at another build."""
    global _LLM_LIB
    if _LLM_LIB is not None:
        return _LLM_LIB
    path = os.environ.get("EMBER_LLM_LIB") or _tools.find_extension("//examples/llm:_ember_llm.so")
    spec = importlib.util.spec_from_file_location("_ember_llm", os.path.realpath(path))
    lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lib)
    _LLM_LIB = lib
    return lib


class ContextFullError(RuntimeError):
    """append would pass the program's max_seq_len and the session's policy is context_full="error"."""


def _logits(raw: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(raw), dtype=torch.float32)


def _call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except _extension().ContextFullError as e:
        raise ContextFullError(str(e)) from None


def plan(path: str, threads: int = 1) -> dict:
    """forward's memory from MethodMeta, without loading it: pools, method_allocator, scratch, session_bytes (one
    session's KV cache), slot_bytes (activations, bookkeeping and scratch: what running costs besides sessions),
    total."""
    return _extension().plan(path, threads)


class Session:
    """One conversation: its tokens and its own KV cache (see examples/llm/session.h)."""

    def __init__(self, raw):
        self._raw = raw

    def append(self, ids: Sequence[int]) -> torch.Tensor:
        """Prefills `ids` after the session's tokens; the last position's logits, float32 [vocab]."""
        return _logits(_call(self._raw.append, [int(i) for i in ids]))

    def rewind(self, position: int) -> None:
        self._raw.rewind(position)

    def fork(self) -> "Session":
        return Session(self._raw.fork())

    def save(self, path: str) -> None:
        self._raw.save(path)

    @property
    def position(self) -> int:
        return self._raw.position

    @property
    def tokens(self) -> List[int]:
        return list(self._raw.tokens)

    @property
    def slides(self) -> int:
        return self._raw.slides

    @property
    def state_bytes(self) -> int:
        """The session pool's bytes: what the session costs."""
        return self._raw.state_bytes

    def state(self) -> bytes:
        """The KV bytes of its tokens' cache rows, buffer after buffer (what fork copies and save writes)."""
        return self._raw.state()


class DecoderProgram:
    """A decoder .pte for sessions: one mapped program, `slots` loaded copies of its forward method (each with its
    own activations: that many sessions run at once, from as many threads; append releases the GIL), any number of
    sessions. `data_files`: the .ptd files of a program exported with external constants (its weights)."""

    def __init__(self, path: str, threads: int = 1, slots: int = 1, data_files: Sequence[str] = ()):
        self._raw = _extension().Program(str(path), threads, slots, [str(f) for f in data_files])

    @property
    def slots(self) -> int:
        return self._raw.slots

    @property
    def metadata(self) -> dict:
        return self._raw.metadata

    @property
    def memory(self) -> dict:
        return self._raw.memory

    def new_session(self, context_full: str = "error", sink_tokens: int = 4) -> Session:
        """context_full: "error" (ContextFullError past max_seq_len) or "sliding_window" (keep the first
        `sink_tokens` and the most recent tokens, and prefill the recent ones again)."""
        return Session(self._raw.new_session(context_full, sink_tokens))

    def restore_session(self, path: str, context_full: str = "error", sink_tokens: int = 4) -> Session:
        return Session(self._raw.restore_session(path, context_full, sink_tokens))


def load(path: str, threads: int = 1, slots: int = 1, data_files: Sequence[str] = ()) -> DecoderProgram:
    return DecoderProgram(path, threads, slots, data_files)


class PrefixCache:
    """Up to `max_entries` prefilled prefixes (a system prompt); start() forks the longest one a prompt begins with
    and prefills only the rest. Each entry costs memory["session_bytes"] plus its tokens and one row of logits."""

    def __init__(self, program: DecoderProgram, max_entries: int):
        self._program = program
        self._raw = _extension().PrefixCache(program._raw, max_entries)

    def add(self, ids: Sequence[int]) -> None:
        _call(self._raw.add, [int(i) for i in ids])

    def start(
        self, ids: Sequence[int], context_full: str = "error", sink_tokens: int = 4
    ) -> Tuple[Session, torch.Tensor, int]:
        """(session holding `ids`, its last position's logits, tokens taken from the cache)."""
        raw = _call(self._raw.start, [int(i) for i in ids], context_full, sink_tokens)
        return Session(raw), _logits(self._raw.last_logits), self._raw.last_reused

    @property
    def size(self) -> int:
        return self._raw.size

    @property
    def bytes(self) -> int:
        return self._raw.bytes
