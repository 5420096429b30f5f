"""The LLM benchmark's Markdown report (bench/llm.py's result): the goals as ratios from this run, then per thread
count a table of every framework and weight format, the exports, and how each number was taken."""

from __future__ import annotations

from typing import List, Optional

LABELS = {
    "ember": "Ember llm_runner",
    "ember_py": "Ember (Python)",
    "et": "ExecuTorch",
    "llamacpp": "llama.cpp",
    "eager": "eager PyTorch",
}
MiB = 1024.0


def _run(result, fw, variant, threads) -> Optional[dict]:
    r = result["runs"].get(f"{fw}/{variant}/{threads}")
    return None if r is None or "error" in r else r


def _f(v, digits=1, scale=1.0) -> str:
    return "—" if v is None else f"{v / scale:,.{digits}f}"


BUSY = 0.25  # others' load (CPUs' worth) above which a run's speed is marked as taken beside other work


def _ratio_cell(a, b, higher_is_better: bool, busy: bool = False) -> str:
    """a / b with whether the goal holds and by how much; † when either run had other processes beside it."""
    if a is None or b is None or not b:
        return "not measured"
    r = a / b
    holds = r >= 1 if higher_is_better else r <= 1
    margin = abs(r - 1) * 100
    word = "met" if holds else "**missed**"
    return f"{r:.2f}x ({word} by {margin:.0f}%){' †' if busy else ''}"


def _busy(result, runs) -> bool:
    return any((_get(result, fw, v, t, "others_load") or 0) > BUSY for fw, v, t in runs)


def goal_rows(result) -> List[str]:
    s = result["settings"]
    # (Ember's weights, ExecuTorch's): each format against its namesake, and Ember's int8 (weights only) also
    # against ExecuTorch's XNNPACK int8 path (int8 weights and dynamically quantized activations).
    pairs = [(v, v) for v in s["variants"]] + [("int8", e) for e in s.get("et_extra_variants", [])]
    heads = [v if v == e else f"{v} vs ExecuTorch {e}" for v, e in pairs]
    rows = ["| goal | threads | " + " | ".join(heads) + " |", "|---|---|" + "---|" * len(heads)]
    tally = [0, 0]

    def row(goal, threads, cells):
        for c in cells:
            if c != "not measured":
                tally[1] += 1
                tally[0] += "met" in c and "missed" not in c
        rows.append(f"| {goal} | {threads} | " + " | ".join(cells) + " |")

    for t in s["threads"]:
        row(
            "Ember decode tokens/s ≥ ExecuTorch's (llm_runner / ExecuTorch)",
            t,
            [
                _ratio_cell(
                    _get(result, "ember", v, t, "decode_tps"),
                    _get(result, "et", e, t, "decode_tps"),
                    True,
                    _busy(result, [("ember", v, t), ("et", e, t)]),
                )
                for v, e in pairs
            ],
        )
    for t in s["threads"]:
        row(
            "Ember peak RSS ≤ ExecuTorch's, like for like (rise above each Python process's baseline: "
            "Ember Python / ExecuTorch)",
            t,
            [
                _ratio_cell(
                    _get(result, "ember_py", v, t, "rss_above_baseline_kb"),
                    _get(result, "et", e, t, "rss_above_baseline_kb"),
                    False,
                )
                for v, e in pairs
            ],
        )
    for t in s["threads"]:
        row(
            "Ember peak RSS ≤ ExecuTorch's, as deployed (llm_runner's whole process / ExecuTorch's rise above its "
            "baseline)",
            t,
            [
                _ratio_cell(
                    _get(result, "ember", v, t, "maxrss_kb"), _get(result, "et", e, t, "rss_above_baseline_kb"), False
                )
                for v, e in pairs
            ],
        )
    note = (
        f" †: a run behind the ratio had other processes taking more than {BUSY} of a CPU beside it in every "
        "attempt (the tables' others' load), so its speed says as much about the machine as about the runtime."
        if any(" †" in r for r in rows)
        else ""
    )
    rows += [
        "",
        f"Met in {tally[0]} of {tally[1]} comparisons. A ratio is Ember / ExecuTorch from this run's medians; "
        "decode holds at ≥ 1, memory at ≤ 1; the percentage is how far the ratio is from 1." + note,
        "",
    ]
    return rows


def llamacpp_goal_rows(result) -> List[str]:
    """Ember's llm_runner against llama.cpp at matching precision (fp32 vs F32, int8 vs Q8_0, 8da4w vs Q4_0): prefill
    and decode tokens/s, each thread count, and peak RSS beside (not a goal of its own)."""
    s = result["settings"]
    if "llamacpp" not in result["exports"]:
        return []
    qtypes = s.get("llamacpp_qtypes", {})
    heads = [f"{v} vs {qtypes.get(v, '?')}" for v in s["variants"]]
    rows = [
        "### Against llama.cpp",
        "",
        "| goal | threads | " + " | ".join(heads) + " |",
        "|---|---|" + "---|" * len(heads),
    ]
    tally = [0, 0]
    for metric, label in (("prefill_tps", "prefill"), ("decode_tps", "decode")):
        for t in s["threads"]:
            cells = []
            for v in s["variants"]:
                c = _ratio_cell(
                    _get(result, "ember", v, t, metric),
                    _get(result, "llamacpp", v, t, metric),
                    True,
                    _busy(result, [("ember", v, t), ("llamacpp", v, t)]),
                )
                if c != "not measured":
                    tally[1] += 1
                    tally[0] += "missed" not in c
                a, b = _get(result, "ember", v, t, metric), _get(result, "llamacpp", v, t, metric)
                cells.append(c if a is None or b is None else f"{c}: {_f(a)} / {_f(b)}")
            rows.append(
                f"| Ember {label} tokens/s ≥ llama.cpp's (llm_runner / llama.cpp) | {t} | " + " | ".join(cells) + " |"
            )
    for t in s["threads"]:
        cells = []
        for v in s["variants"]:
            e, lw, lr = (
                _get(result, "ember", v, t, "maxrss_kb"),
                _get(result, "llamacpp", v, t, "maxrss_kb"),
                _get(result, "llamacpp", v, t, "rss_above_baseline_kb"),
            )
            cells.append(
                "—" if None in (e, lw, lr) else f"{_f(e, 0, MiB)} / {_f(lr, 0, MiB)} (whole process {_f(lw, 0, MiB)})"
            )
        rows.append(
            f"| beside: peak RSS in MiB, llm_runner's whole process / llama.cpp's rise above its Python baseline | {t} | "
            + " | ".join(cells)
            + " |"
        )
    rows += [
        "",
        f"Met in {tally[0]} of {tally[1]} comparisons. A ratio is Ember / llama.cpp from this run's medians (then "
        "the two tokens/s); it holds at ≥ 1. Both run the same weights; llama.cpp's Q8_0 and Q4_0 also quantize the "
        "activations to 8 bits in blocks of 32 inside each matrix product, where Ember's int8 keeps them fp32 (its "
        "8da4w quantizes them per token). llama.cpp's peak is a Python process (llama-cpp-python), so its rise above "
        "the interpreter's baseline is the fair figure; its whole process is in parentheses.",
        "",
    ]
    return rows


def _get(result, fw, variant, threads, key):
    r = _run(result, fw, variant, threads)
    return None if r is None else r.get(key)


def _others(r) -> str:
    """Others' load of the rounds used, and how many rounds were left out for it (bench/llm.py summarize)."""
    cell = _f(r.get("others_load"), 2)
    busy, used = r.get("rounds_busy", 0), r.get("rounds_used", 0)
    quiet_runs = len([x for x in r["rounds"] if "error" not in x]) - busy
    if busy and quiet_runs:
        cell += f" ({busy} busy run{'s' if busy > 1 else ''} left out)"
    elif busy:
        cell += f" (**all {used} runs busy**)"
    return cell


def results_table(result, threads) -> List[str]:
    s = result["settings"]
    n_new = s["new_tokens"]
    lines = [
        f"## {threads} thread{'s' if threads != 1 else ''}",
        "",
        "| runner | weights | prefill tok/s | decode tok/s | time to first token (ms) | peak RSS (MiB) | "
        "RSS above baseline (MiB) | .pte / .gguf (MB) | CPU / wall | others' load | tokens (prompt + new) | = eager |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fw in LABELS:
        for v in s["variants"] + (s.get("et_extra_variants", []) if fw == "et" else []):
            key = f"{fw}/{v}/{threads}"
            if key not in result["runs"]:
                continue
            r = result["runs"][key]
            if "error" in r:
                lines.append(f"| {LABELS[fw]} | {v} | error: {r['error'].splitlines()[0][:150]} ||||||||||")
                continue
            pte = result["exports"].get(fw if fw in ("et", "llamacpp") else "ember", {}).get(v, {}).get("pte_bytes")
            weights = f"{v} ({result['settings']['llamacpp_qtypes'][v]})" if fw == "llamacpp" else v
            short = r["generated_min"] < n_new
            tokens = f"{r['prompt_tokens']} + {r['generated_min']}" + (" (**stopped at EOS**)" if short else "")
            lines.append(
                f"| {LABELS[fw]} | {weights} | {_f(r['prefill_tps'])} | {_f(r['decode_tps'])} | {_f(r['ttft_ms'])} | "
                f"{_f(r['maxrss_kb'], 0, MiB)} | {_f(r.get('rss_above_baseline_kb'), 0, MiB)} | "
                f"{_f(pte if fw != 'eager' else None, 1, 1e6)} | {_f(r.get('cpu_over_wall'), 2)} | "
                f"{_others(r)} | {tokens} | "
                f"{r.get('agree_with_eager', '—')}/{n_new} |"
            )
    lines.append("")
    return lines


ROOFLINE_GOAL = 0.80  # of the memory roofline, one thread, for int8 and 8da4w (issue #35)


def roofline_rows(result) -> List[str]:
    """Ember's 1-thread decode as a fraction of bandwidth / bytes read per token (bench/llm_roofline.py)."""
    s, bw = result["settings"], result["machine"].get("memory_bandwidth") or {}
    roof = s.get("roofline")
    if not roof or not bw.get("read_gbs"):
        return []
    lines = [
        "## Decode against the memory roofline (1 thread)",
        "",
        f"One thread reads {bw['read_gbs']:.1f} GB/s (copies {bw['copy_gbs']:.1f} GB/s, read + write) over "
        f"{bw['buffer_mib']} MiB buffers (bench/membw.c, best of {bw['repeats']}, pinned like the 1-thread runs; "
        f"load average {bw.get('load_average')} when measured); the last-level cache is far smaller than the weights "
        "read per token. Bytes per token at the decode's average position, from the config and Ember's formats "
        "(bench/llm_roofline.py).",
        "",
        "| weights | weights read (MB) | head (MB) | KV cache (MB) | total (MB) | roofline tok/s | llm_runner tok/s | "
        "fraction | goal |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for v in s["variants"]:
        r = roof.get(v)
        got = _get(result, "ember", v, 1, "decode_tps")
        if r is None:
            continue
        b, top = r["bytes"], r["roofline_tps"]
        frac = got / top if got and top else None
        goal = "—"
        if v in ("int8", "8da4w") and frac is not None:
            goal = f"{'met' if frac >= ROOFLINE_GOAL else '**missed**'} (>= {ROOFLINE_GOAL:.0%})"
        lines.append(
            f"| {v} | {b['weights'] / 1e6:,.1f} | {b['head'] / 1e6:,.1f} | {b['kv_cache'] / 1e6:,.1f} | "
            f"{b['total'] / 1e6:,.1f} | {_f(top)} | {_f(got)} | {'—' if frac is None else f'{frac:.0%}'} | {goal} |"
        )
    return lines + [""]


def exports_table(result) -> List[str]:
    lines = [
        "## Exports",
        "",
        "| framework | weights | .pte / .gguf (bytes) | export (s) | what the program holds |",
        "|---|---|---|---|---|",
    ]
    runs = result["runs"]
    order = result["settings"]["variants"] + result["settings"].get("et_extra_variants", [])
    names = {"ember": "Ember", "et": "ExecuTorch", "llamacpp": "llama.cpp (GGUF)"}
    for fw in [f for f in names if f in result["exports"]]:
        ex = result["exports"][fw]
        for v in [v for v in order if v in ex]:
            e = ex[v]
            if fw == "llamacpp":
                what = (
                    ", ".join(f"{n} {t}" for t, n in e.get("tensor_types", {}).items())
                    + f" tensors; head: {e.get('head')}"
                )
            elif fw == "et":
                what = (
                    f"{len(e.get('delegates', []))} XNNPACK delegate calls; operators outside them: "
                    f"{', '.join(o for o in e.get('operators', []) if 'delegate' not in o) or 'none'}"
                )
            else:
                planned = next(
                    (
                        r.get("planned_bytes")
                        for k, r in runs.items()
                        if k.startswith(f"ember/{v}/") and "error" not in r
                    ),
                    None,
                )
                what = f"{planned:,} bytes planned by MethodMeta (KV cache included)" if planned else ""
            lines.append(
                f"| {names[fw]} | {v if fw != 'llamacpp' else e.get('qtype', v)} | {e['pte_bytes']:,} | "
                f"{e['export_s']:.0f} | {what} |"
            )
    lines.append("")
    if result["settings"].get("et_exports_reused"):
        lines += [
            "ExecuTorch's exports were made by an earlier run with the same inputs (bench/.work/llm-cache: "
            "same config, settings, EOS id, export code and versions); their export times are that run's.",
            "",
        ]
    et = result["exports"].get("et", {})
    if (
        "int8" in et
        and "fp32" in et
        and not et["int8"].get("delegates")
        and et["int8"]["pte_bytes"] > 0.9 * et["fp32"]["pte_bytes"]
    ):
        lines += [
            f"ExecuTorch's `-qmode int8` program is {et['int8']['pte_bytes'] / et['fp32']['pte_bytes']:.2f}x "
            "the size of its fp32 one and has no delegate: its export folds the int8 weights' conversion to "
            "fp32 into fp32 constants, so it runs fp32 weights through `aten::linear` (and a multiply by the "
            "scales) outside XNNPACK. ExecuTorch's int8 path for XNNPACK is the int8_dynact column "
            "(`--pt2e_quantize xnnpack_dynamic`: int8 weights, activations quantized at run time).",
            "",
        ]
    return lines


def markdown(result) -> str:
    s, m, c = result["settings"], result["machine"], result["settings"]["config"]
    lines = [
        f"# Ember LLM benchmark, {result['date']}{' (quick)' if result.get('quick') else ''}",
        "",
        f"Model: **{s['config_name']}**, transformers' LlamaForCausalLM built from its config (hidden "
        f"{c['hidden_size']}, MLP {c['intermediate_size']}, {c['num_hidden_layers']} layers, "
        f"{c['num_attention_heads']} heads / {c['num_key_value_heads']} KV heads, vocabulary {c['vocab_size']}, "
        f"tied embeddings: {c.get('tie_word_embeddings', False)}), {s['parameters'] / 1e6:.1f}M parameters, "
        "random weights (torch.manual_seed(0)); every framework runs these same weights. "
        f"Prompt {s['prompt_tokens']} tokens, {s['new_tokens']} new tokens, greedy, KV cache of "
        f"{s['max_seq_len']} positions; 8da4w in groups of {s['group_size']}; fp32 embedding everywhere. "
        f"ExecuTorch's EOS id {s['et_eos_id']} (its runner cannot ignore EOS; greedy decoding does not produce "
        "it). "
        f"{s['rounds']} interleaved round{'s' if s['rounds'] != 1 else ''}, one process per measurement, "
        "medians reported.",
        "",
        f"CPU: **{m['cpu']}** ({m['cores']} cores, {m['machine']}, Linux {m['kernel']}); {m['pinning']}. "
        f"Load average (1, 5, 15 min) {m['load_average']['start']} at the start, {m['load_average']['end']} "
        "at the end. "
        f"Commit {m['git_commit']}{' (with local changes)' if m.get('git_dirty') else ''}. "
        f"Whole run: {result['wall_s']:.0f} s.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items() if v) + ".",
        "",
        "| runner | what runs |",
        "|---|---|",
    ]
    for fw in [f for f in LABELS if f in result["frameworks"]]:  # the JSON's keys come back sorted
        f = result["frameworks"][fw]
        lines.append(
            f"| {LABELS[fw]} | {f['description']}" + (f" — **skipped**: {f['skipped']}" if f["skipped"] else "") + " |"
        )
    lines += ["", "## Goals", ""] + goal_rows(result) + llamacpp_goal_rows(result)
    if s.get("llamacpp_build"):
        lines += [
            "llama.cpp's build (tools/setup_llamacpp_venv.sh, default options: -march=native, OpenMP): "
            + s["llamacpp_build"].replace("\n", "; ")
            + ".",
            "",
        ]
    for t in s["threads"]:
        lines += results_table(result, t)
    lines += roofline_rows(result)
    lines += exports_table(result)
    lines += [
        "How: tokens/s and time to first token as each runner defines them alike: prefill = prompt tokens over the "
        "prefill call (ExecuTorch: over its prompt evaluation, encode included, in its Stats' whole milliseconds); "
        "decode = the tokens after the first over the time after it (ExecuTorch: from its token callbacks); time to "
        "first token from before encoding to the first token chosen, load excluded. llama.cpp: prefill over its "
        "llama_decode of the prompt's tokens (tokenizing, by llama.cpp from the GGUF's vocabulary, before it), decode "
        "over the llama_decode + greedy-sampler calls after the first token, timed with perf_counter around the C "
        "calls (its own llama_perf_context timings are in the JSON). Peak RSS is ru_maxrss of the "
        "process (bench/peak_rss); RSS above baseline subtracts the process's own peak before the program was "
        "loaded (interpreter, torch and runtime imports; Python-hosted runners only). CPU / wall: CPU time of all "
        "threads over wall time, during decode for the Python-hosted runners and over the whole process for "
        "llm_runner (load and tokenizer parsing included, so below the thread count). Others' load: CPU time "
        "other processes took on the run's CPUs during it, per second of the run (/proc/stat; 0.5 = half a CPU): "
        "this machine is shared, and a run beside a busy process, multi-threaded ones most, is slower for it, so a "
        f"run with more than {BUSY} is measured again once the CPUs are quiet (up to twice) and left out of the "
        "medians when quiet runs exist. "
        "'= eager': how many leading tokens equal eager PyTorch's fp32 greedy tokens (quantized weights are "
        "expected to drift).",
        "",
    ]
    errors = [(k, r["error"]) for k, r in result["runs"].items() if "error" in r]
    if errors:
        lines += ["## Errors", ""] + [f"- {k}: {e.splitlines()[0][:400]}" for k, e in errors] + [""]
    return "\n".join(lines)
