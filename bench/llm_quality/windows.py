"""The windows perplexity is scored over (bench/llm_quality/perplexity.py explains them). Plain Python, no torch:
a runtime evaluated in a venv of its own (llama.cpp's) cuts the stream the same way from this file."""

from __future__ import annotations

from typing import Iterator, Tuple


def windows(n_tokens: int, window: int, stride: int) -> Iterator[Tuple[int, int, int]]:
    """(begin, end, first) per window of a stream of n_tokens: inputs are tokens[begin:end] (at positions 0 ..
    end - begin - 1), targets tokens[begin + 1 : end + 1]; the ones scored are those predicted from input index
    `first` (relative to begin) on, so that each token after the stream's first is scored exactly once."""
    if window < 1 or not 1 <= stride <= window:
        raise ValueError(f"window {window}, stride {stride}: need window >= 1 and 1 <= stride <= window")
    scored_up_to = 0  # the last target scored so far (token 0 is never a target)
    begin = 0
    while scored_up_to < n_tokens - 1:
        end = min(begin + window, n_tokens - 1)
        yield begin, end, scored_up_to - begin
        scored_up_to = end
        begin += stride
