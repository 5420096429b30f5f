"""Decoders on threads (issue 18's "at 1 and at 2 threads"): kernels/optimized splits the LLM linears' output
features (fp32 GEMM, int8, 8da4w) and attention's (token, head) rows over the method's pool, each attention part
on a score row of its own, so a program loaded with threads=2 (Python) or run with `llm_runner --threads 2`
gives the single-threaded logits bit for bit. The model is large enough for every one of those calls to split
(compute/parallel.h: a part must read 64 KiB of weights, or attend 64K multiply-adds): 2 layers,
dim 256, MLP 1024, 8 query and 4 KV heads of 32, vocab 2048, a 48-token prompt."""

import os
import subprocess

import pytest
import torch

from zoo.public import torchvision_cpu
from tests.conftest import ROOT, bazel_build

torchvision_cpu.ensure()

from examples.llm import quantize as quant  # noqa: E402
from examples.llm.export import export_decoder  # noqa: E402
from examples.llm.model import Decoder  # noqa: E402
from tests.llm import tiny_models  # noqa: E402

MAX_SEQ_LEN = 96
PROMPT = [1] + [(37 * i + 11) % 2048 for i in range(47)]
STEPS = 6


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    hf = tiny_models.llama(
        1825, vocab_size=2048, hidden_size=256, intermediate_size=1024, num_attention_heads=8, num_key_value_heads=4
    )
    out = {}
    folder = tmp_path_factory.mktemp("llm_threads")
    for scheme in ("fp32", "int8", "8da4w"):
        model = Decoder.from_hf(hf, MAX_SEQ_LEN).eval()
        if scheme != "fp32":
            quant.quantize(model, scheme, 32)
        path = str(folder / f"{scheme}.pte")
        export_decoder(model).save(path)
        out[scheme] = path
    return out


def _logits(runtime, path, threads):
    program = runtime.load(path, threads=threads)
    step = lambda toks, pos: program.run("forward", [torch.tensor([toks]), torch.tensor([pos])])[0][0]
    logits = [step(PROMPT, 0)]
    pos = len(PROMPT)
    for _ in range(STEPS):
        logits.append(step([int(logits[-1].argmax())], pos))
        pos += 1
    return torch.stack(logits), program.method_meta("forward")


@pytest.mark.parametrize("scheme", ["fp32", "int8", "8da4w"])
def test_two_threads_give_the_single_threaded_logits(runtime, programs, scheme):
    one, one_meta = _logits(runtime, programs[scheme], 1)
    two, two_meta = _logits(runtime, programs[scheme], 2)
    assert torch.equal(one, two)
    # Attention's second thread has a score row of its own (max_seq_len + head_dim floats), planned up front
    # (8da4w's token scratch, 8 KiB, is larger than both rows together, so there the total does not grow).
    row = (MAX_SEQ_LEN + 32) * 4
    assert one_meta["threaded_scratch_bytes"] == one_meta["scratch_bytes"] >= row
    assert two_meta["threaded_scratch_bytes"] >= max(one_meta["scratch_bytes"], 2 * row)


def test_llm_runner_threads_flag(programs):
    bazel_build("//examples/llm:llm_runner")
    runner = os.path.realpath(os.path.join(ROOT, "bazel-bin", "examples", "llm", "llm_runner"))
    ids, stats = {}, {}
    for threads in (1, 2):
        r = subprocess.run(
            [
                runner,
                "--model",
                programs["8da4w"],
                "--prompt-ids",
                " ".join(map(str, PROMPT)),
                "--ids",
                "--ignore-eos",
                "--max-new-tokens",
                "12",
                "--threads",
                str(threads),
            ],
            capture_output=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr.decode()
        ids[threads] = r.stdout.decode().split()
        stats[threads] = r.stderr.decode()
    assert len(ids[1]) == 12 and ids[1] == ids[2]
    assert "; 1 thread\n" in stats[1] and "; 2 threads\n" in stats[2]
    for bad in ("0", "65", "x"):
        r = subprocess.run(
            [runner, "--model", programs["8da4w"], "--prompt-ids", "1 2", "--threads", bad],
            capture_output=True,
            timeout=60,
        )
        assert r.returncode == 2, (bad, r.stderr.decode())
