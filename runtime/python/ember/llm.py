"""Text generation from an exported decoder (examples/llm/export.py) on Ember's C++ runtime.

    from ember import llm, runtime
    result = llm.generate(runtime.load("model.pte"), prompt_ids=[1, 15, 27], max_new_tokens=32)
    result.ids, result.prefill_tokens_per_s, result.decode_tokens_per_s

The program's metadata comes from its constant methods (get_max_seq_len, get_eos_ids, ... as ExecuTorch's LLM
runner reads them). The prompt is prefilled in one call of `forward(tokens [1, T], input_pos [1])`; each new
token is then one call with T = 1. Greedy at temperature 0; otherwise softmax(logits / temperature) sampled with
a torch.Generator seeded by `seed`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, List, Optional, Sequence

import torch


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
