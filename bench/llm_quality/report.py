"""The quality report: rows (format, runtime, perplexity, ratio to eager fp32, bits per byte, file size), the goals,
and how the model was trained, as bench/results/<date>-llm-quality.{md,json}."""

from __future__ import annotations

from typing import List, Optional

# Issue 35's bar for 8da4w: its perplexity at most this many times fp32's.
GOAL_8DA4W_RATIO = 1.05
# llama.cpp's F32 file holds the very weights eager PyTorch runs; only the arithmetic differs (its own matrix
# kernels and attention), so its perplexity must agree closely, or the converted model is not the same model.
LLAMACPP_F32_TOLERANCE = 1e-4


def row(fmt: str, runtime: str, r, n_bytes: int, file_bytes: Optional[int], seconds: float) -> dict:
    return {
        "format": fmt,
        "runtime": runtime,
        "perplexity": r.ppl,
        "mean_nll": r.mean_nll,
        "bits_per_byte": r.bits_per_byte(n_bytes),
        "scored_tokens": r.tokens,
        "file_bytes": file_bytes,
        "seconds": round(seconds, 1),
    }


def _find(doc: dict, runtime: str, fmt: str) -> Optional[dict]:
    return next((r for r in doc["rows"] if r["runtime"] == runtime and r["format"] == fmt), None)


def reference(doc: dict) -> dict:
    return _find(doc, "eager PyTorch", "fp32")


def goals(doc: dict) -> List[dict]:
    """Each goal with what was measured and whether it is met (None: not measured in this run)."""
    ref = reference(doc)["perplexity"]
    out = []
    agree = doc.get("fp32_agreement")
    if agree is not None:
        out.append(
            {
                "goal": f"Ember fp32 = eager fp32 (relative perplexity difference <= {agree['tolerance']:g})",
                "measured": f"{agree['relative_ppl_difference']:.2e} (largest per-token loss difference "
                f"{agree['max_token_nll_difference']:.2e} nats)",
                "met": agree["relative_ppl_difference"] <= agree["tolerance"],
            }
        )
    q4 = _find(doc, "Ember", "8da4w")
    if q4 is not None:
        out.append(
            {
                "goal": f"Ember 8da4w within {round((GOAL_8DA4W_RATIO - 1) * 100)}% of fp32's perplexity",
                "measured": f"{q4['perplexity']:.4f} / {ref:.4f} = {q4['perplexity'] / ref:.4f}",
                "met": q4["perplexity"] <= GOAL_8DA4W_RATIO * ref,
            }
        )
        q4_0 = _find(doc, "llama.cpp", "Q4_0")
        f32 = _find(doc, "llama.cpp", "F32")
        if f32 is not None:
            diff = abs(f32["perplexity"] / ref - 1)
            out.append(
                {
                    "goal": f"llama.cpp F32 = eager fp32 (the conversion; relative difference <= "
                    f"{LLAMACPP_F32_TOLERANCE:g})",
                    "measured": f"{diff:.2e}",
                    "met": diff <= LLAMACPP_F32_TOLERANCE,
                }
            )
        out.append(
            {
                "goal": "Ember 8da4w no worse than llama.cpp Q4_0",
                "measured": (
                    f"{q4['perplexity']:.4f} vs {q4_0['perplexity']:.4f} (x{q4_0['perplexity'] / ref:.5f} of fp32); "
                    + _paired_text(doc, "Ember 8da4w", "llama.cpp Q4_0")
                    if q4_0
                    else f"not measured: {doc['llamacpp']['skipped']}"
                ),
                "met": (q4["perplexity"] <= q4_0["perplexity"]) if q4_0 else None,
            }
        )
    return out


def _paired(doc: dict, a: str, b: str) -> Optional[dict]:
    return next((p for p in doc.get("paired", []) if p["a"] == a and p["b"] == b), None)


def _paired_text(doc: dict, a: str, b: str) -> str:
    p = _paired(doc, a, b)
    if p is None:
        return ""
    return (
        f"loss per token {p['mean_nll_difference']:+.5f} +- {p['standard_error']:.5f} nats "
        f"({abs(p['mean_nll_difference']) / p['standard_error']:.1f} standard errors)"
    )


def _size(n: Optional[int]) -> str:
    return "" if n is None else f"{n:,}"


def markdown(doc: dict) -> str:
    ref = reference(doc)["perplexity"]
    ev, tr, cfg, cp = doc["evaluation"], doc["training"], doc["model"]["config"], doc["corpus"]
    s = tr["settings"]
    lines = [
        f"# LLM quality: held-out perplexity ({doc['date']})",
        "",
        f"`{doc['command'].strip()}`. A {tr['parameters']:,}-parameter Llama ({cfg['num_hidden_layers']} layers, "
        f"width {cfg['hidden_size']}, {cfg['num_attention_heads']} heads / {cfg['num_key_value_heads']} KV heads, "
        f"MLP {cfg['intermediate_size']}, vocabulary {cfg['vocab_size']}, context {cfg['max_position_embeddings']}) "
        f"trained here on the Python {cp['python']} standard library, scored on held-out files it never saw: "
        f"{ev['scored_tokens']:,} tokens ({ev['heldout_bytes']:,} bytes) in windows of {ev['window']} tokens, stride "
        f"{ev['stride']}. Ratios are to eager PyTorch fp32. 8da4w: int4 weight groups of {ev['group_size']}, int8 "
        f"activations per token; int8: per-channel int8 weights; the embedding stays fp32 in both."
        + (
            " Options after `+`: kv8, the KV cache stored as int8 with a float32 scale per (position, KV head) "
            "(export's --quantize-kv-cache); head4, the output head alone as 8da4w with int4 groups of "
            f"{ev['group_size']} (--quantize-head 4bit)."
            if any("+" in r["format"] for r in doc["rows"])
            else ""
        ),
        "",
        "| format | runtime | perplexity | ratio to fp32 | bits / byte | file bytes | scoring time (s) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in doc["rows"]:
        lines.append(
            f"| {r['format']} | {r['runtime']} | {r['perplexity']:.4f} | {r['perplexity'] / ref:.5f} | "
            f"{r['bits_per_byte']:.4f} | {_size(r['file_bytes'])} | {r['seconds']:.0f} |"
        )
    lines += ["", "| goal | measured | met |", "|---|---|---|"]
    for g in doc["goals"]:
        met = "not measured" if g["met"] is None else ("yes" if g["met"] else "**no**")
        lines.append(f"| {g['goal']} | {g['measured']} | {met} |")
    if doc.get("paired"):
        lines += [
            "",
            "Differences in loss per token (nats) over the same tokens, with one standard error estimated from the "
            f"{doc['paired'][0]['windows']} windows' summed differences (a window's tokens share their context):",
            "",
            "| format | against | loss difference per token | standard error | in standard errors |",
            "|---|---|---:|---:|---:|",
        ]
        for p in doc["paired"]:
            z = abs(p["mean_nll_difference"]) / p["standard_error"]
            lines.append(
                f"| {p['a']} | {p['b']} | {p['mean_nll_difference']:+.5f} | {p['standard_error']:.5f} | {z:.1f} |"
            )
    skipped = doc["llamacpp"]["skipped"]
    if skipped:
        lines += ["", f"llama.cpp's F32, Q8_0 and Q4_0 rows were skipped: {skipped}."]
    else:
        versions = ", ".join(f"{k} {v}" for k, v in (doc["llamacpp"]["versions"] or {}).items())
        lines += [
            "",
            f"llama.cpp ({versions}): the same weights as GGUF (bench/llm_gguf.py, the gguf package's quantizers), "
            "every linear and the head in the format, embedding and norms F32; F32 KV cache, one thread. Q8_0 and "
            "Q4_0 hold blocks of 32 weights with an fp16 scale each (Q4_0: 4 bits, symmetric), and llama.cpp "
            "quantizes the activations to 8 bits per block of 32 for their dot products; Ember's int8 has one "
            "scale per output channel and float activations, its 8da4w an fp32 scale per 32 weights and int8 "
            "activations with one scale per token.",
        ]
    lines += [
        "",
        f"Scoring times are wall-clock on a shared 2-core machine (load average {ev['load_average'][0]:.1f} at the "
        f"end), {ev['threads']} thread(s) for Ember's kernels and for eager PyTorch, 1 for llama.cpp: Ember runs "
        f"a window as generation does, one decode call per token through its KV cache; eager PyTorch and llama.cpp "
        f"score a window in one pass.",
        "",
        "## Training",
        "",
        f"{s['steps']} steps of {s['batch']} windows x {s['context']} tokens ({tr['tokens_seen']:,} tokens, "
        f"{tr['tokens_seen'] / tr['train_stream_tokens']:.2f} passes over the {tr['train_stream_tokens']:,}-token "
        f"training stream), AdamW at peak rate {s['lr']:g} (warm-up {s['warmup']} steps, cosine to a tenth), weight "
        f"decay {s['weight_decay']:g}, seed {s['seed']}, {tr['threads']} thread: {tr['cpu_seconds']:.0f} s of CPU, "
        f"{tr['seconds']:.0f} s wall-clock (load average {tr['load_average'][0]:.1f} at the end: other jobs shared "
        f"the machine). torch {tr['torch']}.",
        "",
        "| step | training loss (mean of the last 25 steps) | held-out loss (first "
        f"{s['eval_windows']} windows, eager) |",
        "|---:|---:|---:|",
    ]
    held = {c["step"]: c["heldout_loss"] for c in tr["heldout_checkpoints"]}
    train_at = {c["step"]: c["train_loss"] for c in tr["curve"]}
    for step in sorted(held):
        trained_loss = f"{train_at[step]:.4f}" if step in train_at else ""
        lines.append(f"| {step} | {trained_loss} | {held[step]:.4f} |")
    lines += [
        "",
        "## Reproducing",
        "",
        f"The corpus: {cp['train']['files']} training files ({cp['train']['bytes']:,} bytes, SHA-256 "
        f"`{cp['train']['sha256'][:16]}...`) and {cp['heldout']['files']} held-out files ({cp['heldout']['bytes']:,} "
        f"bytes, `{cp['heldout']['sha256'][:16]}...`) from `{cp['root']}` (Python {cp['python']}), split with seed "
        f"{cp['seed']}; the tokenizer.json's SHA-256 `{doc['tokenizer']['sha256'][:16]}...`; the trained weights' "
        f"`{tr['weights_sha256'][:16]}...`. The same interpreter, seed and library versions give the same digests "
        f"(the JSON file has them whole, and the held-out file list). Ember's C++ tokenizer encodes the held-out "
        f"files as `tokenizers` does: "
        f"{'yes' if not doc['tokenizer']['ember_tokenizer_mismatched_files'] else 'no, ' + str(doc['tokenizer']['ember_tokenizer_mismatched_files'])}.",
        "",
    ]
    return "\n".join(lines)
