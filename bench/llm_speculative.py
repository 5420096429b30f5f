"""Speculative decoding by prompt lookup (llm_runner --speculate D) against plain greedy decode: tokens/s and the
drafts accepted per step, on held-out Python source.

    .venv/bin/python3 -m bench.llm_speculative                 the trained model of `python -m bench.llm_quality`
    .venv/bin/python3 -m bench.llm_speculative --smollm        SmolLM-135M's shape with random weights instead

The model: bench/llm_quality's trained checkpoint (the newest bench/.work/llm-quality/*/model with a train_log.json;
run `python -m bench.llm_quality` first), or --checkpoint DIR. Each format is exported twice with
`python -m examples.llm.export`: --logits-rows 1 (today's program: plain decode's baseline) and --logits-rows
max(D) + 1 (the program speculation needs; its plain decode pays max(D) + 1 rows of the head, measured too).
Prompts: the first --prompt-tokens tokens of the first --prompts held-out files (bench/llm_quality/corpus.py, seed
0), after the model's BOS; each then generates --new-tokens greedily, --ignore-eos. Every configuration runs once per
repeat, interleaved, so the machine's load falls on all alike; the table has the medians. Every configuration must
produce the same ids as plain decode (checked; a mismatch is reported, not hidden).

--smollm: SmolLM-135M's config (bench/llm_model.py) with seeded random weights, no trained tokenizer: prompts are a
held-out-like repetitive id sequence, and a random model's greedy output falls into loops that prompt lookup drafts
well, so its acceptance says nothing about real text; its tokens/s say what one verify step costs on a model whose
decode is bound by reading the weights.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "runtime", "python")]

RUNNER = os.path.join(ROOT, "bazel-bin", "examples", "llm", "llm_runner")
DECODE = re.compile(r"decode: (\d+) tokens in ([\d.]+) ms")
SPEC = re.compile(r"speculation: (\d+) steps \((\d+) with a draft\), drafted (\d+), accepted (\d+)")


def newest_checkpoint() -> str:
    done = glob.glob(os.path.join(ROOT, "bench", ".work", "llm-quality", "*", "model", "train_log.json"))
    if not done:
        sys.exit("no trained checkpoint under bench/.work/llm-quality: run `python -m bench.llm_quality`, or --smollm")
    return os.path.dirname(max(done, key=os.path.getmtime))


def export(model: str, fmt: str, rows: int, max_seq_len: int, out: str) -> str:
    if not os.path.exists(out):
        cmd = [sys.executable, "-m", "examples.llm.export", "--model", model, "--max-seq-len", str(max_seq_len)]
        cmd += ["--logits-rows", str(rows), "-o", out]
        if fmt != "fp32":
            cmd += ["--quantize", fmt, "--group-size", "32"]
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return out


def heldout_prompts(checkpoint: str, n: int, tokens: int, bos: int):
    import tokenizers

    from bench.llm_quality import corpus as corpus_mod

    tok = tokenizers.Tokenizer.from_file(os.path.join(checkpoint, "tokenizer.json"))
    corpus = corpus_mod.load(seed=0)
    out = []
    for name, text in zip(corpus.heldout.files, corpus.heldout.texts):
        ids = tok.encode(text, add_special_tokens=False).ids
        if len(ids) >= tokens:
            out.append((name, [bos] + ids[:tokens]))
        if len(out) == n:
            break
    return out


def repetitive_prompts(n: int, tokens: int, vocab: int):
    """Code-like id streams: a few 'lines' of ids repeated with small edits (seeded)."""
    import random

    out = []
    for p in range(n):
        rng = random.Random(p)
        lines = [[rng.randrange(100, vocab) for _ in range(rng.randrange(5, 12))] for _ in range(6)]
        ids = [0]
        while len(ids) < tokens + 1:
            line = list(rng.choice(lines))
            line[rng.randrange(len(line))] = rng.randrange(100, vocab)
            ids += line
        out.append((f"repetitive {p}", ids[: tokens + 1]))
    return out


def command(pte: str, prompt, new_tokens: int, speculate: int, threads: int):
    cmd = [RUNNER, "--model", pte, "--prompt-ids", " ".join(map(str, prompt)), "--ids", "--ignore-eos"]
    cmd += ["--max-new-tokens", str(new_tokens), "--threads", str(threads)]
    if speculate:
        cmd += ["--speculate", str(speculate)]
    return cmd


def run(pte: str, prompt, new_tokens: int, speculate: int, threads: int):
    r = subprocess.run(command(pte, prompt, new_tokens, speculate, threads), capture_output=True, text=True, check=True)
    n, ms = DECODE.search(r.stderr).groups()
    stats = [int(g) for g in SPEC.search(r.stderr).groups()] if speculate else None
    return [int(t) for t in r.stdout.split()], int(n) / (float(ms) / 1e3), stats


def instructions(cmd) -> int:
    """Instructions the command ran, counted by callgrind (what the machine's load does not change)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "callgrind.out")
        r = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd], capture_output=True, text=True
        )
        return int(re.search(r"Collected : (\d+)", r.stderr).group(1))


def decode_instructions_per_token(pte, prompt, new_tokens, speculate, threads) -> float:
    """Decode's instructions per generated token: a run of new_tokens less a run of one (load, prefill, the first
    token), over the new_tokens - 1 tokens decode produced."""
    full = instructions(command(pte, prompt, new_tokens, speculate, threads))
    first = instructions(command(pte, prompt, 1, speculate, threads))
    return (full - first) / (new_tokens - 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", help="a Hugging Face checkpoint directory (default: bench.llm_quality's)")
    ap.add_argument("--smollm", action="store_true", help="SmolLM-135M's shape, random weights, repetitive ids")
    ap.add_argument("--formats", default="fp32,8da4w")
    ap.add_argument("--speculate", default="4,8", help="draft lengths D to measure")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=120)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--callgrind", action="store_true", help="also count decode's instructions per token (first prompt)"
    )
    ap.add_argument("--work", default=os.path.join(ROOT, "bench", ".work", "llm-speculative"))
    ap.add_argument("--out", default=None, help="results .md (default bench/results/<date>-llm-speculative.md)")
    a = ap.parse_args(argv)
    drafts = [int(d) for d in a.speculate.split(",")]
    rows = max(drafts) + 1
    max_seq_len = a.prompt_tokens + 1 + a.new_tokens
    os.makedirs(a.work, exist_ok=True)
    subprocess.run(["bazel", "build", "//examples/llm:llm_runner"], check=True, cwd=ROOT, stderr=subprocess.DEVNULL)

    if a.smollm:
        from bench.llm_model import CONFIGS

        model_desc = "SmolLM-135M's config (bench/llm_model.py), seeded random weights"
        model = os.path.join(a.work, "smollm-135m.json")
        with open(model, "w") as f:
            json.dump(CONFIGS["smollm-135m"], f)
        prompts = repetitive_prompts(a.prompts, a.prompt_tokens, CONFIGS["smollm-135m"]["vocab_size"])
        tag = "smollm"
    else:
        model = a.checkpoint or newest_checkpoint()
        with open(os.path.join(model, "config.json")) as f:
            bos = json.load(f)["bos_token_id"]
        model_desc = f"bench.llm_quality's trained model ({os.path.relpath(model, ROOT)})"
        prompts = heldout_prompts(model, a.prompts, a.prompt_tokens, bos)
        tag = os.path.basename(os.path.dirname(model))

    results = {}
    for fmt in a.formats.split(","):
        base = export(model, fmt, 1, max_seq_len, os.path.join(a.work, f"{tag}-{fmt}-rows1-{max_seq_len}.pte"))
        spec = export(model, fmt, rows, max_seq_len, os.path.join(a.work, f"{tag}-{fmt}-rows{rows}-{max_seq_len}.pte"))
        configs = [("plain, 1 row", base, 0), (f"plain, {rows} rows", spec, 0)]
        configs += [(f"--speculate {d}", spec, d) for d in drafts]
        rates = {c[0]: [] for c in configs}
        stats = {c[0]: [0, 0, 0, 0] for c in configs}
        mismatches = []
        for name, prompt in prompts:
            for rep in range(a.repeats):
                reference = None
                # Rotated per repeat: each configuration runs first (just after a process of another file) as often.
                for label, pte, d in configs[rep % len(configs) :] + configs[: rep % len(configs)]:
                    ids, rate, st = run(pte, prompt, a.new_tokens, d, a.threads)
                    if label == configs[0][0]:
                        reference = ids
                    if reference is not None and ids != reference and rep == 0:
                        first = next(i for i, (x, y) in enumerate(zip(ids, reference)) if x != y)
                        mismatches.append(f"{fmt} {label} on {name}: differs from token {first}")
                    rates[label].append(rate)
                    if st and rep == 0:
                        stats[label] = [s + t for s, t in zip(stats[label], st)]
        counted = {}
        if a.callgrind:
            counted = {c[0]: decode_instructions_per_token(c[1], prompts[0][1], a.new_tokens, c[2], a.threads)
                       for c in configs}  # fmt: skip
        results[fmt] = {"rates": rates, "stats": stats, "mismatches": mismatches, "instructions": counted}
        print(fmt, {k: round(statistics.median(v), 1) for k, v in rates.items()}, mismatches, flush=True)

    write_report(a, model_desc, prompts, rows, drafts, results)
    return 0


def write_report(a, model_desc, prompts, rows, drafts, results) -> None:
    date = datetime.date.today().isoformat()
    out = a.out or os.path.join(ROOT, "bench", "results", f"{date}-llm-speculative.md")
    load = open("/proc/loadavg").read().split()[:3]
    cmd = "python -m bench.llm_speculative " + " ".join(sys.argv[1:])
    lines = [
        f"# Speculative decoding by prompt lookup, {date}",
        "",
        f"`{cmd.strip()}`. {model_desc}; {len(prompts)} prompts of {a.prompt_tokens} tokens "
        f"({', '.join(p[0] for p in prompts)}), {a.new_tokens} new tokens each, greedy, {a.threads} thread(s), "
        f"{a.repeats} interleaved repeats; decode tokens/s is the median over prompts and repeats. Load average at "
        f"the end: {' '.join(load)} (measured under load: other agents' jobs shared the 2 cores, so ratios matter "
        "more than the absolute rates).",
        "",
        "accepted/step: drafted tokens accepted per decode step (a step is one forward); tokens/step: tokens each "
        "step yields (accepted + 1). `plain, N rows`: the program of --logits-rows N decoding without speculation "
        "(its head runs on N rows per call).",
        "",
        "Instructions/token (with --callgrind): decode's instructions per generated token on the first prompt, "
        "counted by callgrind (a run of all new tokens less a run of one), which the machine's load does not move; "
        "it leaves out what instructions do not show: memory bandwidth, which is what speculation saves on a model "
        "whose weights do not stay in the caches.",
        "",
        "| format | decode | tokens/s | vs plain 1 row | instructions/token | vs plain 1 row | steps | drafted "
        "| accepted | accepted/step | tokens/step |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fmt, r in results.items():
        base = statistics.median(r["rates"]["plain, 1 row"])
        ins = r.get("instructions") or {}
        for label, v in r["rates"].items():
            med = statistics.median(v)
            counted = f"{ins[label] / 1e6:.2f}M | {ins[label] / ins['plain, 1 row']:.2f}x" if label in ins else "| "
            st = r["stats"][label]
            steps, _, drafted, accepted = st
            tail = (
                f"{steps} | {drafted} | {accepted} | {accepted / steps:.2f} | {(accepted + steps) / steps:.2f}"
                if steps
                else "| | | |"
            )
            lines.append(f"| {fmt} | {label} | {med:.1f} | {med / base:.2f}x | {counted} | {tail} |")
    lines.append("")
    mism = [m for r in results.values() for m in r["mismatches"]]
    lines.append(
        "Output ids: identical to plain greedy decoding in every configuration."
        if not mism
        else "Output ids differing from plain decode: " + "; ".join(mism)
    )
    lines.append("")
    with open(out, "w") as f:
        f.write("\n".join(lines))
    with open(out[:-3] + ".json", "w") as f:
        json.dump({"args": vars(a), "load": load, "results": results}, f, indent=1)
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main())
