"""Held-out perplexity of a small decoder trained here, in every format Ember exports it to (and llama.cpp's, when
its converter and venv are in the tree): what int8 and 8da4w cost in accuracy.

    .venv/bin/python3 -m bench.llm_quality                  train (or reuse the cached checkpoint), export, score
    .venv/bin/python3 -m bench.llm_quality --eval-tokens 4096   a quick look: only the held-out stream's start

Steps: the standard library's .py files split by file (corpus.py); a byte-level BPE trained on the train split
(tokenizer.py); the decoder trained on one core with a fixed seed (train.py), cached in bench/.work/llm-quality/
under a key of everything it depends on; `python -m examples.llm.export` to fp32, int8 and 8da4w .pte files; the
held-out perplexity of eager PyTorch (the reference) and of each .pte on Ember's runtime (perplexity.py); the
report in bench/results/<date>-llm-quality.{md,json} (report.py).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import hashlib
import io
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "runtime", "python")]

from bench.llm_quality import corpus as corpus_mod  # noqa: E402
from bench.llm_quality import llamacpp  # noqa: E402
from bench.llm_quality import report  # noqa: E402
from bench.llm_quality import tokenizer as tok_mod  # noqa: E402
from bench.llm_quality import train as train_mod  # noqa: E402

# Bumped when train.py, tokenizer.py or corpus.py change what they compute: the cache key holds it, so a cached
# checkpoint is reused across edits that do not change the weights (formatting, comments, the report).
TRAINING_REVISION = 1

# Ember fp32 against eager fp32: the same weights and arithmetic order aside, so their perplexities agree far
# closer than any quantization moves them.
FP32_RELATIVE_TOLERANCE = 1e-4


def cache_key(corpus: corpus_mod.Corpus, s: train_mod.Settings) -> str:
    import tokenizers
    import torch
    import transformers

    what = {
        "revision": TRAINING_REVISION,
        "settings": dataclasses.asdict(s),
        "config": train_mod.CONFIG,
        "corpus": [corpus.train.digest(), corpus.heldout.digest()],
        "versions": [torch.__version__, transformers.__version__, tokenizers.__version__],
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:12]


def checkpoint(work: str, corpus: corpus_mod.Corpus, s: train_mod.Settings, retrain: bool) -> str:
    """The trained checkpoint's folder, trained now when the cache has none for these inputs."""
    folder = os.path.join(work, cache_key(corpus, s), "model")
    done = os.path.join(folder, "train_log.json")
    if retrain or not os.path.exists(done):
        print(f"llm_quality: training into {folder}", flush=True)
        train_mod.prepare(folder, corpus, s, log=lambda m: print(f"llm_quality: {m}", flush=True))
    else:
        print(f"llm_quality: reusing the checkpoint in {folder}", flush=True)
    return folder


# A format's options after its linears' scheme ("int8+kv8", "8da4w+head4+kv8"): export.py's flags for each.
FORMAT_OPTIONS = {"kv8": ["--quantize-kv-cache"], "head4": ["--quantize-head", "4bit"]}


def export_flags(fmt: str, group_size: int) -> list:
    """examples/llm/export.py's flags for a format: fp32, int8 or 8da4w, then any of FORMAT_OPTIONS after '+'."""
    base, *options = fmt.split("+")
    if base not in ("fp32", "int8", "8da4w"):
        raise ValueError(f"format {fmt!r}: the linears' scheme must be fp32, int8 or 8da4w")
    unknown = [o for o in options if o not in FORMAT_OPTIONS]
    if unknown:
        raise ValueError(f"format {fmt!r}: unknown options {unknown}; known: {', '.join(FORMAT_OPTIONS)}")
    argv = [] if base == "fp32" else ["--quantize", base]
    if base == "8da4w" or "head4" in options:
        argv += ["--group-size", str(group_size)]
    for o in options:
        argv += FORMAT_OPTIONS[o]
    return argv


def export(ckpt: str, fmt: str, context: int, group_size: int, out: str) -> str:
    """The .pte of one format, by examples/llm/export.py's command line."""
    from examples.llm import export as export_mod

    argv = ["--model", ckpt, "--max-seq-len", str(context), "-o", out] + export_flags(fmt, group_size)
    with contextlib.redirect_stdout(io.StringIO()) as said:  # the memory report: not this report's concern
        export_mod.main(argv)
    print(f"llm_quality: {said.getvalue().splitlines()[0]}", flush=True)
    return out


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t0


def build_runtime() -> None:
    """The Python extension built now: ember.runtime builds it only when it is missing, so an old build would
    otherwise be scored."""
    import subprocess

    target = "//runtime/python:_ember_runtime.so"
    r = subprocess.run(["bazel", "build", target], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"bazel build {target} failed:\n{r.stderr[-2000:]}")


def score_ember(ckpt: str, tokens, n_bytes: int, window: int, stride: int, formats, a):
    """Eager fp32 (the reference), then each Ember format exported and scored: (rows, reference, {format: result})."""
    from bench.llm_quality import perplexity
    from examples.llm.export import load_hf

    build_runtime()

    hf = load_hf(ckpt)
    ref, sec = timed(lambda: perplexity.eager_perplexity(hf, tokens, window, stride))
    rows = [report.row("fp32", "eager PyTorch", ref, n_bytes, None, sec)]
    rows[-1]["_result"] = ref
    print(f"llm_quality: eager fp32 perplexity {ref.ppl:.4f} ({sec:.0f} s)", flush=True)
    results = {}
    for fmt in formats:
        pte = export(ckpt, fmt, window, a.group_size, os.path.join(os.path.dirname(ckpt), f"{fmt}.pte"))
        r, sec = timed(lambda: perplexity.ember_perplexity(pte, tokens, window, stride, threads=a.threads))
        results[fmt] = r
        rows.append(report.row(fmt, "Ember", r, n_bytes, os.path.getsize(pte), sec))
        rows[-1]["_result"] = r
        print(f"llm_quality: Ember {fmt} perplexity {r.ppl:.4f} ({sec:.0f} s)", flush=True)
    return rows, ref, results


def score_llamacpp(ckpt: str, tokens, n_bytes: int, window: int, stride: int, rows: list) -> dict:
    """llama.cpp's rows appended to rows when its venv is here; returns what the report says about llama.cpp."""
    import torch

    from bench.llm_quality import perplexity

    llama = {"rows": [], "skipped": None, "versions": None}
    try:
        for lr in llamacpp.evaluate(ROOT, ckpt, tokens, window, stride, os.path.dirname(ckpt)):
            r = perplexity.Perplexity(torch.tensor(lr["nll"], dtype=torch.float64), window, stride)
            rows.append(report.row(lr["format"], lr["runtime"], r, n_bytes, lr["bytes"], lr["seconds"]))
            rows[-1]["_result"] = r
            llama["rows"].append(lr["format"])
            llama["versions"] = lr["versions"]
            print(f"llm_quality: llama.cpp {lr['format']} perplexity {r.ppl:.4f} ({lr['seconds']:.0f} s)", flush=True)
    except llamacpp.Unavailable as e:
        llama["skipped"] = str(e)
        print(f"llm_quality: llama.cpp skipped: {e}", flush=True)
    return llama


# (runtime, format) pairs whose loss per token is compared, with a standard error: each quantized format against
# fp32, and Ember's formats against llama.cpp's of the same width.
PAIRS = [
    (("Ember", "int8"), ("eager PyTorch", "fp32")),
    (("Ember", "8da4w"), ("eager PyTorch", "fp32")),
    (("llama.cpp", "Q8_0"), ("eager PyTorch", "fp32")),
    (("llama.cpp", "Q4_0"), ("eager PyTorch", "fp32")),
    (("Ember", "int8"), ("llama.cpp", "Q8_0")),
    (("Ember", "8da4w"), ("llama.cpp", "Q4_0")),
]


def compare(rows: list, ref) -> list:
    from bench.llm_quality import perplexity

    found = {(r["runtime"], r["format"]): r["_result"] for r in rows}
    out = []
    # A format with options against fp32 and against its format without them: what the options alone cost.
    optioned = [
        ((rt, f), other)
        for (rt, f) in found
        if rt == "Ember" and "+" in f
        for other in (("eager PyTorch", "fp32"), ("Ember", f.split("+")[0]))
    ]
    for a, b in PAIRS + optioned:
        if a in found and b in found:
            d = perplexity.paired_difference(found[a], found[b])
            out.append({"a": " ".join(a), "b": " ".join(b), **d})
    return out


def save_losses(rows: list, work: str) -> None:
    """Every row's per-token losses (torch.save of {"runtime format": float64 tensor}), for later comparisons; the
    rows keep only their summary."""
    import torch

    torch.save({f"{r['runtime']} {r['format']}": r.pop("_result").nll for r in rows}, os.path.join(work, "nll.pt"))


def main(argv=None) -> int:
    s0 = train_mod.Settings()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--name", default=None, help="file stem of the results (default <date>-llm-quality)")
    ap.add_argument("--work", default=os.path.join(ROOT, "bench", ".work", "llm-quality"))
    ap.add_argument("--seed", type=int, default=s0.seed, help="corpus split, weights and batches")
    ap.add_argument("--steps", type=int, default=s0.steps, help="training steps")
    ap.add_argument("--retrain", action="store_true", help="train even when the cache has this checkpoint")
    ap.add_argument("--group-size", type=int, default=32, help="8da4w's input channels per int4 scale")
    ap.add_argument(
        "--formats",
        default="fp32,int8,8da4w",
        help="Ember formats to export and score: fp32, int8 or 8da4w, each with options after '+' (kv8: the int8 KV "
        "cache, head4: a 4-bit output head), e.g. fp32,int8,8da4w,int8+kv8,8da4w+kv8,int8+head4",
    )
    ap.add_argument("--eval-tokens", type=int, default=0, help="score only the held-out stream's first N tokens")
    ap.add_argument("--stride", type=int, default=None, help="window stride (default: the window, no overlap)")
    ap.add_argument("--threads", type=int, default=1, help="Ember's kernel threads")
    a = ap.parse_args(argv)
    s = dataclasses.replace(s0, seed=a.seed, steps=a.steps)
    formats = [f for f in a.formats.split(",") if f]
    for f in formats:
        try:
            export_flags(f, a.group_size)
        except ValueError as e:
            ap.error(str(e))

    corpus = corpus_mod.load(seed=s.seed)
    ckpt = checkpoint(a.work, corpus, s, a.retrain)
    with open(os.path.join(ckpt, "train_log.json")) as f:
        train_log = json.load(f)
    tok_path = os.path.join(ckpt, "tokenizer.json")
    tok = tok_mod.load(tok_path)
    tokens = tok_mod.stream(tok, corpus.heldout.texts)
    n_bytes = corpus.heldout.n_bytes
    if a.eval_tokens:
        tokens = tokens[: a.eval_tokens]
        n_bytes = len(tok.decode(tokens, skip_special_tokens=True).encode("utf-8"))
    window, stride = s.context, a.stride or s.context
    mismatched = tok_mod.ember_mismatches(ROOT, tok_path, tok, corpus.heldout.texts)
    print(
        f"llm_quality: {len(tokens):,} held-out tokens ({n_bytes:,} bytes); Ember's tokenizer differs on "
        f"{len(mismatched)} of {len(corpus.heldout.texts)} files",
        flush=True,
    )

    rows, ref, results = score_ember(ckpt, tokens, n_bytes, window, stride, formats, a)
    llama = score_llamacpp(ckpt, tokens, n_bytes, window, stride, rows)
    paired = compare(rows, ref)
    save_losses(rows, os.path.dirname(ckpt))
    fp32 = results.get("fp32")
    agreement = None
    if fp32 is not None:
        agreement = {
            "relative_ppl_difference": abs(fp32.ppl / ref.ppl - 1),
            "max_token_nll_difference": float((fp32.nll - ref.nll).abs().max()),
            "tolerance": FP32_RELATIVE_TOLERANCE,
        }
    doc = {
        "date": datetime.date.today().isoformat(),
        "command": "python -m bench.llm_quality " + " ".join(argv if argv is not None else sys.argv[1:]),
        "model": {
            "config": dict(train_mod.CONFIG, max_position_embeddings=s.context),
            "checkpoint_key": os.path.basename(os.path.dirname(ckpt)),
        },
        "corpus": corpus.describe(),
        "tokenizer": {
            "vocab_size": tok.get_vocab_size(),
            "sha256": tok_mod.file_sha256(tok_path),
            "ember_tokenizer_mismatched_files": [corpus.heldout.files[i] for i in mismatched],
        },
        "evaluation": {
            "heldout_tokens": len(tokens),
            "scored_tokens": ref.tokens,
            "heldout_bytes": n_bytes,
            "window": window,
            "stride": stride,
            "group_size": a.group_size,
            "threads": a.threads,
            "load_average": list(os.getloadavg()),
        },
        "training": train_log,
        "rows": rows,
        "fp32_agreement": agreement,
        "paired": paired,
        "llamacpp": llama,
    }
    doc["goals"] = report.goals(doc)
    name = a.name or f"{doc['date']}-llm-quality"
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, name + ".json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(a.out, name + ".md"), "w") as f:
        f.write(report.markdown(doc))
    print(f"llm_quality: wrote {os.path.join(a.out, name)}.{{md,json}}")
    for g in doc["goals"]:
        verdict = "not measured" if g["met"] is None else ("met" if g["met"] else "NOT met")
        print(f"llm_quality: goal {g['goal']}: {g['measured']} -> {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
