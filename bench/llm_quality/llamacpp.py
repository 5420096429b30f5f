"""llama.cpp's rows of the quality table: the same checkpoint converted to GGUF (F32, Q8_0, Q4_0) and scored by
llama-cpp-python over the same held-out tokens and windows (bench/llm_quality/windows.py).

The converter (bench/llm_gguf.py) and the venv holding llama-cpp-python (.venv-llamacpp, made by
tools/setup_llamacpp_venv.sh) come from the llama.cpp comparison; until both are in the tree, `evaluate` raises
Unavailable saying which is missing, and the report says the rows were skipped and why.
"""

from __future__ import annotations

import os
from typing import List, Sequence

FORMATS = ("F32", "Q8_0", "Q4_0")


class Unavailable(RuntimeError):
    """llama.cpp cannot be measured here; the message says what is missing."""


def missing(root: str) -> List[str]:
    needs = {
        "bench/llm_gguf.py": "the GGUF converter",
        "tools/setup_llamacpp_venv.sh": "the llama-cpp-python venv's setup",
    }
    return [f"{path} ({what})" for path, what in needs.items() if not os.path.exists(os.path.join(root, path))]


def evaluate(root: str, checkpoint: str, tokens: Sequence[int], window: int, stride: int, work: str) -> List[dict]:
    """One row per llama.cpp format: {format, runtime, path, bytes, nll (list of floats), seconds}."""
    absent = missing(root)
    if absent:
        raise Unavailable("not in this tree: " + ", ".join(absent))
    raise Unavailable("bench/llm_gguf.py is present but bench/llm_quality has no driver for it yet")
