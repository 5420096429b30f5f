"""bench/llm_roofline.py's bytes per decode token against what the exporter writes: for a small Llama config in
each weight format, the file's constants less the analytic weights, head and embedding table must be the same
remainder (norms and RoPE tables, identical in every format), so each format's byte formula is exact; and the
bandwidth tool builds and reports a positive bandwidth."""

import json
import os
import re
import subprocess

import pytest

from bench import llm_roofline
from examples.llm import export as llm_export

CONFIG = {
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 512,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0,
    "tie_word_embeddings": True,
    "max_position_embeddings": 256,
    "hidden_act": "silu",
    "bos_token_id": 0,
    "eos_token_id": 0,
    "attention_bias": False,
    "mlp_bias": False,
}


def _constants(tmp_path, variant) -> int:
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(CONFIG))
    argv = ["--model", str(cfg), "--max-seq-len", "64", "-o", str(tmp_path / f"{variant}.pte")]
    if variant != "fp32":
        argv += ["--quantize", variant, "--group-size", "32"]
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        llm_export.main(argv)
    return int(re.search(r"^constants: (\d+) B$", out.getvalue(), re.M).group(1))


def test_bytes_per_token_match_the_exported_weights(tmp_path):
    table = CONFIG["vocab_size"] * CONFIG["hidden_size"] * 4
    remainders = {}
    for v in ("fp32", "int8", "8da4w"):
        b = llm_roofline.decode_bytes(CONFIG, v, 32, position=10)
        # fp32's tied head is the embedding table itself; the quantized formats hold the table and their own head.
        held = b["weights"] + b["head"] + (table if v != "fp32" else 0)
        remainders[v] = _constants(tmp_path, v) - held
    assert len(set(remainders.values())) == 1, remainders
    assert 0 <= remainders["fp32"] < 0.02 * (remainders["fp32"] + 1_441_792), remainders


def test_kv_cache_bytes_grow_with_the_position():
    a = llm_roofline.decode_bytes(CONFIG, "8da4w", 32, position=0)["kv_cache"]
    b = llm_roofline.decode_bytes(CONFIG, "8da4w", 32, position=9)["kv_cache"]
    per_position = 2 * CONFIG["num_hidden_layers"] * CONFIG["num_key_value_heads"] * 32 * 4
    assert b - a == 9 * per_position


def test_bandwidth_tool(tmp_path):
    exe = tmp_path / "membw"
    src = os.path.join(os.path.dirname(llm_roofline.__file__), "membw.c")
    subprocess.run(["gcc", "-O3", "-march=native", src, "-o", str(exe)], check=True)
    r = subprocess.run([str(exe), "16", "2"], capture_output=True, text=True, check=True)
    got = json.loads(r.stdout)
    assert got["read_gbs"] > 0 and got["copy_gbs"] > 0 and got["buffer_mib"] == 16
    bad = subprocess.run([str(exe), "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_roofline_is_bandwidth_over_bytes():
    r = llm_roofline.roofline(CONFIG, ["int8"], 32, 8, 8, read_gbs=10.0)["int8"]
    assert r["roofline_tps"] == pytest.approx(10e9 / r["bytes"]["total"])
