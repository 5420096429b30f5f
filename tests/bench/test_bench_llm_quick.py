"""The LLM benchmark end to end in quick mode (`bench/run --llm --quick`: a 2-layer model with SmolLM's
vocabulary): every runner measured for fp32, int8 and 8da4w at 1 and 2 threads, the same prompt length everywhere,
full-length greedy runs, fp32 outputs equal to eager PyTorch's, the report's goals and decode's memory roofline.

Needs the ExecuTorch venv (tools/setup_executorch_venv.sh); skipped, saying so, without it. llama.cpp is checked
too when its venv (tools/setup_llamacpp_venv.sh, not built in CI) is there, and must be reported skipped otherwise.
"""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

ET_PYTHON = os.environ.get("EMBER_ET_PYTHON", os.path.join(ROOT, ".venv-executorch", "bin", "python3"))
pytestmark = pytest.mark.skipif(
    not os.path.exists(ET_PYTHON), reason=f"no ExecuTorch venv at {ET_PYTHON} (run tools/setup_executorch_venv.sh)"
)

LLAMACPP_PYTHON = os.environ.get("EMBER_LLAMACPP_PYTHON", os.path.join(ROOT, ".venv-llamacpp", "bin", "python3"))
HAS_LLAMACPP = os.path.exists(LLAMACPP_PYTHON)
VARIANTS = ["fp32", "int8", "8da4w"]
THREADS = [t for t in (1, 2) if t <= len(os.sched_getaffinity(0))]


@pytest.fixture(scope="module")
def llm_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("llm_out")
    work = tmp_path_factory.mktemp("llm_work")
    r = subprocess.run(
        [sys.executable, "-m", "bench", "--llm", "--quick", "--out", str(out), "--work", str(work), "--name", "quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, f"bench --llm --quick failed:\n{r.stderr[-4000:]}"
    with open(out / "quick.json") as f:
        return json.load(f), (out / "quick.md").read_text()


def runs(result):
    for t in THREADS:
        for v in VARIANTS:
            for fw in ("ember", "ember_py", "et") + (("llamacpp",) if HAS_LLAMACPP else ()):
                yield fw, v, t, result["runs"][f"{fw}/{v}/{t}"]
        yield "eager", "fp32", t, result["runs"][f"eager/fp32/{t}"]


def test_every_runner_measured(llm_run):
    result, _ = llm_run
    skipped = {fw: f["skipped"] for fw, f in result["frameworks"].items() if f["skipped"]}
    assert list(skipped) == ([] if HAS_LLAMACPP else ["llamacpp"]), skipped
    s = result["settings"]
    for fw, v, t, r in runs(result):
        assert "error" not in r, (fw, v, t, r.get("error"))
        assert r["prompt_tokens"] == s["prompt_tokens"], (fw, v, t, r["prompt_tokens"])
        assert r["generated_min"] == s["new_tokens"], (fw, v, t, "a run stopped early")
        # ExecuTorch's Stats count prefill in whole milliseconds: the quick run's tiny model can prefill within one,
        # and then no rate exists to report (None); anything measured must be positive.
        prefill_unmeasured = fw != "ember" and r.get("prefill_ms") == 0 and r["prefill_tps"] is None
        # By the same clock ExecuTorch's time to first token is then 0 ms too (seen on a quiet machine, 8da4w).
        ttft_unmeasured = fw == "et" and prefill_unmeasured and r["ttft_ms"] == 0
        assert r["decode_tps"] > 0 and (prefill_unmeasured or r["prefill_tps"] > 0), (fw, v, t, r)
        assert ttft_unmeasured or r["ttft_ms"] > 0, (fw, v, t, r)
        assert r["maxrss_kb"] > s["rss_floor_kb"], (fw, v, t, r["maxrss_kb"])
        if fw != "ember":
            assert 0 < r["rss_above_baseline_kb"] < r["maxrss_kb"], (fw, v, t, r)
    for fw in ("ember", "et") + (("llamacpp",) if HAS_LLAMACPP else ()):
        for v in VARIANTS:
            assert result["exports"][fw][v]["pte_bytes"] > 0, (fw, v)


def test_outputs_and_threads(llm_run):
    result, _ = llm_run
    n = result["settings"]["new_tokens"]
    for fw, v, t, r in runs(result):
        if v == "fp32":
            # Same weights everywhere (ExecuTorch's from a converted checkpoint), greedy: the same tokens.
            assert r["agree_with_eager"] == n, (fw, t, r["agree_with_eager"])
        if fw == "et":
            assert r["threadpool_threads"] == t, (v, t, r["threadpool_threads"])
        if fw == "ember":
            assert r["threads"] == t, (v, t, r)
        if fw == "llamacpp":
            # llama.cpp tokenized the prompt itself, to the benchmark's ids, and ran with the threads asked.
            assert r["prompt_ids_equal"] and r["n_threads"] == r["n_threads_batch"] == t, (v, t, r)
        assert r["cpus"] is None or len(r["cpus"]) == t


def test_report(llm_run):
    result, md = llm_run
    goals = md.split("## Goals", 1)[1].split("## 1 thread", 1)[0]
    rows = [line for line in goals.splitlines() if line.startswith("| Ember ")]
    # ExecuTorch: decode and two peak RSS rows per thread count; llama.cpp: prefill and decode.
    assert len(rows) == (5 if HAS_LLAMACPP else 3) * len(THREADS), goals
    assert ("### Against llama.cpp" in goals) == HAS_LLAMACPP, goals
    assert "not measured" not in goals, goals
    for t in THREADS:
        assert f"## {t} thread" in md
    assert "Ember llm_runner" in md and "ExecuTorch" in md and "eager PyTorch" in md
    assert ("| llama.cpp | fp32 (F32) |" in md) == HAS_LLAMACPP
    # Decode against the memory roofline: the bandwidth measured and every format's fraction of it.
    assert result["machine"]["memory_bandwidth"]["read_gbs"] > 0
    roof = md.split("## Decode against the memory roofline (1 thread)", 1)[1].split("\n## ", 1)[0]
    for v in VARIANTS:
        row = next(line for line in roof.splitlines() if line.startswith(f"| {v} |"))
        assert row.split("|")[8].strip().endswith("%"), row
