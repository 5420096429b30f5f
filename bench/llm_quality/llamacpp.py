"""llama.cpp's rows of the quality table: the same checkpoint converted to GGUF F32, Q8_0 and Q4_0 by
bench/llm_gguf.py (the gguf package's own quantizers: blocks of 32 weights with an fp16 scale; every linear, the
output head included, in the format; embedding and norms F32, as Ember's int8 and 8da4w leave the embedding fp32),
and scored by llama-cpp-python over the same held-out tokens and windows (bench/llm_quality/llamacpp_side.py).

Both steps run in .venv-llamacpp (tools/setup_llamacpp_venv.sh builds it; EMBER_LLAMACPP_PYTHON points at another
interpreter). Without it `evaluate` raises Unavailable saying what is missing, and the report says the rows were
skipped and why.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import List, Sequence

FORMATS = ("F32", "Q8_0", "Q4_0")


class Unavailable(RuntimeError):
    """llama.cpp cannot be measured here; the message says what is missing."""


def python(root: str) -> str:
    return os.environ.get("EMBER_LLAMACPP_PYTHON", os.path.join(root, ".venv-llamacpp", "bin", "python3"))


def _side(root: str, module: str, *args: str) -> None:
    r = subprocess.run([python(root), "-m", module, *args], cwd=root, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{module} {' '.join(args[:2])} failed:\n{r.stderr[-3000:]}")


def convert(root: str, checkpoint: str, work: str) -> dict:
    """The checkpoint as GGUF in each format: {format: bench/llm_gguf.py's report of the file}."""
    from bench import llm_gguf
    from examples.llm.export import load_hf

    weights = os.path.join(work, "weights.npz")
    llm_gguf.save_state_dict(load_hf(checkpoint).state_dict(), weights)
    report = os.path.join(work, "gguf.json")
    _side(
        root,
        "bench.llm_llamacpp_side",
        "convert",
        "--config",
        os.path.join(checkpoint, "config.json"),
        "--weights",
        weights,
        "--tokenizer",
        os.path.join(checkpoint, "tokenizer.json"),
        "--out-dir",
        work,
        "--qtypes",
        ",".join(FORMATS),
        "--report",
        report,
    )
    os.remove(weights)
    with open(report) as f:
        return json.load(f)


def evaluate(root: str, checkpoint: str, tokens: Sequence[int], window: int, stride: int, work: str) -> List[dict]:
    """One row per llama.cpp format: {format, runtime, bytes, nll (per-target losses), seconds, versions}."""
    if not os.path.exists(python(root)):
        raise Unavailable(f"no llama.cpp venv at {python(root)} (tools/setup_llamacpp_venv.sh builds it)")
    import numpy as np

    work = os.path.join(work, "llamacpp")
    os.makedirs(work, exist_ok=True)
    files = convert(root, checkpoint, work)
    token_file = os.path.join(work, "tokens.json")
    with open(token_file, "w") as f:
        json.dump([int(t) for t in tokens], f)
    rows = []
    for fmt in FORMATS:
        out = os.path.join(work, f"nll_{fmt}.npy")
        _side(
            root,
            "bench.llm_quality.llamacpp_side",
            "--gguf",
            files[fmt]["path"],
            "--tokens",
            token_file,
            "--window",
            str(window),
            "--stride",
            str(stride),
            "--out",
            out,
        )
        with open(os.path.splitext(out)[0] + ".json") as f:
            info = json.load(f)
        rows.append(
            {
                "format": fmt,
                "runtime": "llama.cpp",
                "bytes": files[fmt]["bytes"],
                "nll": np.load(out).tolist(),
                "seconds": info["seconds"],
                "versions": dict(files.get("_versions", {}), **info["versions"]),
            }
        )
    return rows
