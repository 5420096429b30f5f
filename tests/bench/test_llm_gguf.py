"""bench/llm_gguf.py's GGUF conversion, checked on llama.cpp itself (bench/llm_llamacpp_side.py in .venv-llamacpp):
the benchmark's tiny config (2 layers, SmolLM's vocabulary and tokenizer) as GGUF F32 gives eager PyTorch's greedy
tokens and last-position logits, and llama.cpp tokenizes the prompt to the benchmark's ids; Q8_0 and Q4_0 load,
generate every token and stay near eager's logits. A control converted without the rotary row interleave must
differ, so the check sees the q/k layout: q and k are scaled up so that attention is far from uniform, which it
nearly is with the model's own small initialization.

Needs .venv-llamacpp (tools/setup_llamacpp_venv.sh, several minutes of compiling, so not in CI); skipped, saying so,
without it.
"""

import json
import os
import subprocess

import numpy as np
import pytest

from tests.conftest import ROOT

LLAMACPP_PYTHON = os.environ.get("EMBER_LLAMACPP_PYTHON", os.path.join(ROOT, ".venv-llamacpp", "bin", "python3"))
pytestmark = pytest.mark.skipif(
    not os.path.exists(LLAMACPP_PYTHON),
    reason=f"no llama.cpp venv at {LLAMACPP_PYTHON} (run tools/setup_llamacpp_venv.sh)",
)

PROMPT_TOKENS = 16
NEW_TOKENS = 8
QK_SCALE = 8.0
QTYPES = ("F32", "Q8_0", "Q4_0")


def side(*args, timeout=600):
    r = subprocess.run(
        [LLAMACPP_PYTHON, "-m", "bench.llm_llamacpp_side", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert r.returncode == 0, f"llm_llamacpp_side {args[0]} failed:\n{r.stderr[-3000:]}"


def run_gguf(d, gguf, tag):
    out, logits = os.path.join(d, f"{tag}.json"), os.path.join(d, f"{tag}.npy")
    side(
        "run",
        "--gguf",
        gguf,
        "--prompt-file",
        os.path.join(d, "prompt.txt"),
        "--prompt-ids",
        os.path.join(d, "prompt_ids.json"),
        "--new-tokens",
        str(NEW_TOKENS),
        "--threads",
        "1",
        "--max-seq-len",
        str(PROMPT_TOKENS + NEW_TOKENS),
        "--out",
        out,
        "--logits-out",
        logits,
    )
    with open(out) as f:
        return json.load(f), np.load(logits)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    import torch

    from bench import llm_gguf, llm_tokenizer
    from bench.llm_measure import build_hf, greedy_hf
    from bench.llm_model import CONFIGS

    d = str(tmp_path_factory.mktemp("gguf"))
    config = CONFIGS["tiny"]
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f)
    tok = llm_tokenizer.write(os.path.join(d, "tokenizer.json"), config["vocab_size"])
    text = llm_tokenizer.prompt(PROMPT_TOKENS)
    ids = llm_tokenizer.encode_with_tokenizers(tok, text)
    with open(os.path.join(d, "prompt.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(d, "prompt_ids.json"), "w") as f:
        json.dump(ids, f)
    hf = build_hf(d)
    with torch.no_grad():
        for layer in hf.model.layers:
            layer.self_attn.q_proj.weight.mul_(QK_SCALE)
            layer.self_attn.k_proj.weight.mul_(QK_SCALE)
    ref_ids = greedy_hf(hf, ids, NEW_TOKENS)[0]
    with torch.inference_mode():
        ref_logits = hf(torch.tensor([ids])).logits[0, -1].numpy()
    weights = llm_gguf.save_state_dict(hf.state_dict(), os.path.join(d, "weights.npz"), tied=True)
    side(
        "convert",
        "--config",
        os.path.join(d, "config.json"),
        "--weights",
        weights,
        "--tokenizer",
        tok,
        "--out-dir",
        d,
        "--report",
        os.path.join(d, "convert.json"),
    )
    # The control: the same conversion with q/k rows left in transformers' half-split layout.
    control = os.path.join(d, "control_F32.gguf")
    r = subprocess.run(
        [
            LLAMACPP_PYTHON,
            "-c",
            "import json, sys; from bench import llm_gguf; "
            "llm_gguf.half_split_to_interleaved = lambda w, heads: w; "
            "c = json.load(open(sys.argv[1])); "
            "llm_gguf.write_gguf(c, llm_gguf.load_state_dict(sys.argv[2]), sys.argv[3], sys.argv[4], 'F32')",
            os.path.join(d, "config.json"),
            weights,
            tok,
            control,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    with open(os.path.join(d, "convert.json")) as f:
        report = json.load(f)
    runs = {q: run_gguf(d, os.path.join(d, f"llamacpp_{q}.gguf"), q) for q in QTYPES}
    runs["control"] = run_gguf(d, control, "control")
    return {"ids": ids, "ref_ids": ref_ids, "ref_logits": ref_logits, "report": report, "runs": runs}


def test_f32_matches_eager(converted):
    r, logits = converted["runs"]["F32"]
    assert r["prompt_ids_equal"] and r["prompt_tokens"] == PROMPT_TOKENS, r["prompt_tokens"]
    assert r["ids"] == converted["ref_ids"], (r["ids"], converted["ref_ids"])
    ref = converted["ref_logits"]
    scale = float(np.abs(ref).max())
    # About 1e-3 of the logits' scale here: summation order, and q and k scaled up make attention sensitive to it.
    assert np.abs(logits - ref).max() <= 5e-3 * scale, (np.abs(logits - ref).max(), scale)


def test_rotary_layout_is_seen(converted):
    """Without the interleave the logits move by far more than F32's tolerance: the test above checks the layout."""
    _, logits = converted["runs"]["control"]
    ref = converted["ref_logits"]
    assert np.abs(logits - ref).max() > 0.2 * float(np.abs(ref).max())
    assert np.corrcoef(logits, ref)[0, 1] < 0.9


def test_quantized_load_and_generate(converted):
    ref = converted["ref_logits"]
    scale = float(np.abs(ref).max())
    for q, bound, corr in (("Q8_0", 0.1, 0.99), ("Q4_0", 0.6, 0.85)):
        r, logits = converted["runs"][q]
        assert r["generated_tokens"] == NEW_TOKENS and r["decode_tps"] > 0 and r["prefill_tps"] > 0, (q, r)
        assert r["prompt_ids_equal"], q
        # Quantized weights move the logits, but they stay near eager's: every tensor was read in its format.
        assert np.abs(logits - ref).max() <= bound * scale, (q, np.abs(logits - ref).max(), scale)
        assert np.corrcoef(logits, ref)[0, 1] > corr, q


def test_formats_written_by_the_gguf_package(converted):
    report = converted["report"]
    for q in QTYPES:
        types = report[q]["tensors"]
        linears = [n for n in types if n.startswith("blk.") and "norm" not in n] + ["output.weight"]
        if q == "F32":
            assert "output.weight" not in types  # tied: llama.cpp reads token_embd.weight for the head
            linears.remove("output.weight")
        assert all(types[n] == q for n in linears), (q, types)
        assert types["token_embd.weight"] == "F32" and types["output_norm.weight"] == "F32"
    # Q8_0 keeps a byte a weight and Q4_0 half of one, plus an fp16 scale per 32 (the F32 embedding unchanged).
    assert report["Q4_0"]["bytes"] < report["Q8_0"]["bytes"]
