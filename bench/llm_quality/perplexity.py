"""Perplexity of a causal LM over a token stream, from any source of next-token logits: an Ember LLM .pte (every
program examples/llm/export.py writes, whatever its quantization), eager PyTorch, or another runtime.

    from bench.llm_quality import perplexity
    r = perplexity.ember_perplexity("model_8da4w.pte", tokens)          # window: the program's max_seq_len
    r.ppl, r.tokens, r.bits_per_byte(n_bytes)

Windows: the stream is cut into windows of `window` context tokens, window k starting at token k * stride. In a
window the model reads tokens b .. b + window - 1 from position 0 (a fresh context: nothing carries over from the
previous window) and predicts b + 1 .. b + window; only the targets after the previous window's last one are
scored, so every token but the stream's first is scored exactly once. With stride == window (the default) windows
share only their boundary token, and a target's context is 1 to window tokens (about window / 2 on average); a
smaller stride gives each scored token more context at window / stride times the cost.

An Ember program returns only the last position's logits, so a window is run as generation runs it: the tokens
before the first scored target in one prefill call at input_pos 0, then one decode call (T = 1) per further token,
through the program's own KV cache. The loss is summed in float64 from each logits row's log-softmax.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, List, Optional, Sequence

import torch

from bench.llm_quality.windows import windows

# logits_fn(inputs, first): the logits [len(inputs) - first, vocab] that follow inputs[: first + 1], ...,
# inputs[: len(inputs)], each row predicting the next token; `inputs` start at position 0.
LogitsFn = Callable[[List[int], int], torch.Tensor]


@dataclasses.dataclass
class Perplexity:
    nll: torch.Tensor  # float64 [scored tokens]: each scored target's negative log-likelihood, in nats
    window: int
    stride: int

    @property
    def tokens(self) -> int:
        return int(self.nll.numel())

    @property
    def mean_nll(self) -> float:
        return float(self.nll.sum()) / self.tokens

    @property
    def ppl(self) -> float:
        return math.exp(self.mean_nll)

    def bits_per_byte(self, n_bytes: int) -> float:
        """Total loss in bits over the bytes the scored tokens spell (a measure that does not depend on the
        tokenizer)."""
        return float(self.nll.sum()) / math.log(2) / n_bytes


def score(tokens: Sequence[int], logits_fn: LogitsFn, window: int, stride: Optional[int] = None) -> Perplexity:
    stride = stride or window
    tokens = [int(t) for t in tokens]
    if len(tokens) < 2:
        raise ValueError(f"{len(tokens)} tokens: perplexity needs at least 2")
    parts = []
    for begin, end, first in windows(len(tokens), window, stride):
        logits = logits_fn(tokens[begin:end], first)
        expected = end - begin - first
        if tuple(logits.shape[:1]) != (expected,):
            raise ValueError(f"window at token {begin}: {tuple(logits.shape)} logits for {expected} targets")
        targets = torch.tensor(tokens[begin + first + 1 : end + 1])
        logp = torch.log_softmax(logits.double(), dim=-1)
        parts.append(-logp.gather(1, targets[:, None])[:, 0])
    return Perplexity(torch.cat(parts), window, stride)


def ember_logits_fn(program, max_seq_len: int) -> LogitsFn:
    """Logits from a loaded Ember decoder program (ember.runtime.load): prefill, then one decode call per token."""
    longest_call = max_seq_len - 1  # forward's token dimension is bounded by max_seq_len - 1

    def run(inputs: List[int], first: int) -> torch.Tensor:
        if len(inputs) > max_seq_len:
            raise ValueError(f"a window of {len(inputs)} tokens does not fit the program's max_seq_len {max_seq_len}")
        pos = 0
        while pos < first + 1:  # the context before the first scored target (in chunks the program accepts)
            n = min(first + 1 - pos, longest_call)
            last = program.run("forward", [torch.tensor([inputs[pos : pos + n]]), torch.tensor([pos])])[0]
            pos += n
        rows = [last[0]]
        for i in range(first + 1, len(inputs)):
            rows.append(program.run("forward", [torch.tensor([[inputs[i]]]), torch.tensor([i])])[0][0])
        return torch.stack(rows)

    return run


def eager_logits_fn(hf_model) -> LogitsFn:
    """Logits from a transformers causal LM: one forward over the window, every position's logits."""

    def run(inputs: List[int], first: int) -> torch.Tensor:
        with torch.inference_mode():
            return hf_model(input_ids=torch.tensor([inputs]), use_cache=False).logits[0, first:].float()

    return run


def ember_perplexity(
    pte,
    tokens: Sequence[int],
    window: Optional[int] = None,
    stride: Optional[int] = None,
    threads: int = 1,
    kernels: str = "default",
) -> Perplexity:
    """Perplexity of an Ember LLM program (a path, or a loaded ember.runtime program) over `tokens`. `window`
    defaults to the program's max_seq_len (get_max_seq_len), `stride` to `window`."""
    from ember import llm, runtime

    program = runtime.load(pte, kernels=kernels, threads=threads) if isinstance(pte, (str, bytes)) else pte
    max_seq_len = llm.metadata(program).get("get_max_seq_len")
    if max_seq_len is None:
        raise ValueError("the program has no get_max_seq_len method: export it with python -m examples.llm.export")
    window = window or max_seq_len
    return score(tokens, ember_logits_fn(program, max_seq_len), window, stride)


def eager_perplexity(hf_model, tokens: Sequence[int], window: int, stride: Optional[int] = None) -> Perplexity:
    return score(tokens, eager_logits_fn(hf_model), window, stride)


def paired_difference(a: Perplexity, b: Perplexity) -> dict:
    """a's loss per token minus b's over the same scored tokens (nats), with its standard error estimated from the
    windows' summed differences (a window's tokens share their context, so the window, not the token, is the unit
    that varies independently). Perplexities a few standard errors apart are told apart by this text; closer ones
    are not."""
    if a.nll.shape != b.nll.shape or (a.window, a.stride) != (b.window, b.stride):
        raise ValueError("paired_difference needs two results over the same tokens and windows")
    sizes = [end - begin - first for begin, end, first in windows(a.tokens + 1, a.window, a.stride)]
    sums = torch.stack([d.sum() for d in (a.nll - b.nll).split(sizes)])
    n, mean = len(sizes), float(sums.sum()) / a.tokens
    # The ratio estimator's standard error, windows as clusters: residuals of each window's sum from what the mean
    # predicts for its size (so unequal windows, the stream's last one, add no spread of their own).
    residuals = sums - mean * torch.tensor(sizes, dtype=sums.dtype)
    se = math.sqrt(n / (n - 1) * float((residuals**2).sum())) / a.tokens if n > 1 else float("nan")
    return {"mean_nll_difference": mean, "standard_error": se, "windows": n}
