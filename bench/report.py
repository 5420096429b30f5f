"""The benchmark's Markdown report: one table per metric (value per framework, then Ember/peer ratios), the
200-op chain's per-operator cost, and the goals, each checked against this run's numbers."""
from __future__ import annotations

from typing import List, Optional

PEERS = ["et_portable", "et_xnnpack", "ort", "eager"]
LABELS = {"ember": "Ember", "et_portable": "ET portable", "et_xnnpack": "ET XNNPACK", "ort": "ONNX Runtime",
          "eager": "eager torch"}

# (key, title, what it is, formatter)
METRICS = [
    ("median_us", "Latency, median (µs)", "execute() only, after warm-up, single thread", "us"),
    ("p90_us", "Latency, p90 (µs)", "90th percentile of the same runs", "us"),
    ("load_us", "Load + init (µs)", "from the file on disk to a method ready to execute (C++ runners: median of "
     "up to 7 processes)", "us"),
    ("arena_bytes", "Planned arena (bytes)", "all memory-planned pools of the method (activations)", "int"),
    ("maxrss_kb", "Peak RSS (KiB)", "ru_maxrss of the measuring process (whole process: Python + libraries "
     "for ONNX Runtime and eager)", "int"),
    ("file_bytes", "Program file (bytes)", ".pte / .onnx (weights inside) / eager's state_dict .pt", "int"),
]

SMALL = ["add", "softmax", "linear", "chain200", "mlp"]
TWO_X = ["mlp", "small_cnn", "mobilenet_v2_035_96", "mobilenet_v2"]


def _fmt(v, kind) -> str:
    if v is None:
        return "—"
    if kind == "us":
        return f"{v:,.3f}" if v < 10 else f"{v:,.1f}" if v < 1000 else f"{v:,.0f}"
    return f"{int(v):,}"


def _get(result, model, fw, key) -> Optional[float]:
    r = result["models"].get(model, {}).get("frameworks", {}).get(fw)
    if not r or "error" in r:
        return None
    return r.get(key)


def _frameworks(result) -> List[str]:
    present = {fw for m in result["models"].values() for fw in m["frameworks"]}
    return [fw for fw in ["ember"] + PEERS if fw in present]


def metric_table(result, key, title, what, kind) -> List[str]:
    fws = _frameworks(result)
    peers = [p for p in fws if p != "ember"]
    lines = [f"### {title}", "", f"{what}. Ratio columns: Ember / peer (below 1: Ember smaller or faster).", "",
             "| model | " + " | ".join(LABELS[f] for f in fws) + " | " +
             " | ".join(f"Ember/{LABELS[p]}" for p in peers) + " |",
             "|---|" + "---:|" * (len(fws) + len(peers))]
    for name, m in result["models"].items():
        vals = [_get(result, name, fw, key) for fw in fws]
        cells = []
        for fw, v in zip(fws, vals):
            err = m["frameworks"].get(fw, {}).get("error")
            cells.append("error" if err else _fmt(v, kind))
        ember = vals[0]
        ratios = []
        for p in peers:
            v = _get(result, name, p, key)
            ratios.append(f"{ember / v:.2f}x" if ember is not None and v else "—")
        lines.append(f"| {m['label']} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    return lines + [""]


def per_op_table(result) -> List[str]:
    chains = [(n, m) for n, m in result["models"].items() if m.get("ops")]
    if not chains:
        return []
    fws = _frameworks(result)
    lines = ["### Framework overhead per operator", "",
             "Median latency of the chain divided by its operator count (ns per op). Each op is one kernel call on "
             "16 floats, so this is almost all per-operator cost: dispatch, argument handling, output resize, the "
             "loop; the kernels' arithmetic (16 adds or multiplies) is a few ns of it. Not subtracted.", "",
             "| model | " + " | ".join(LABELS[f] for f in fws) + " |", "|---|" + "---:|" * len(fws)]
    for name, m in chains:
        cells = [_fmt(_get(result, name, fw, "ns_per_op"), "us") for fw in fws]
        lines.append(f"| {m['label']} | " + " | ".join(cells) + " |")
    return lines + [""]


def correctness_table(result) -> List[str]:
    fws = _frameworks(result)
    lines = ["### Outputs against eager", "",
             "Largest absolute difference from eager PyTorch's outputs on the same inputs (✓: within 1e-3 of the "
             "outputs' scale).", "", "| model | " + " | ".join(LABELS[f] for f in fws) + " |",
             "|---|" + "---:|" * len(fws)]
    for name, m in result["models"].items():
        cells = []
        for fw in fws:
            r = m["frameworks"].get(fw)
            if not r:
                cells.append("—")
            elif "error" in r:
                cells.append("error")
            else:
                cells.append(f"{r['max_abs_err']:.1e} {'✓' if r['matches_eager'] else '✗'}")
        lines.append(f"| {m['label']} | " + " | ".join(cells) + " |")
    return lines + [""]


def pybind_table(result) -> List[str]:
    rows = []
    for name, m in result["models"].items():
        cells = []
        for fw in ("et_portable", "et_xnnpack"):
            r = m["frameworks"].get(fw) or {}
            cells += [_fmt(r.get("median_us"), "us"), _fmt(r.get("pybind_median_us"), "us")]
        if any(c != "—" for c in cells[1::2]):
            rows.append(f"| {m['label']} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    return ["### Cross-check: ExecuTorch through its Python bindings", "",
            "The same programs run through ExecuTorch's pybindings (`portable_lib`, threadpool of 1), timed around "
            "`Method.execute()` from Python: the C++ driver's numbers are what ExecuTorch's own runtime does, and "
            "the difference on the one-op models is the bindings' call overhead. Median µs.", "",
            "| model | ET portable, C++ | ET portable, pybind | ET XNNPACK, C++ | ET XNNPACK, pybind |",
            "|---|---:|---:|---:|---:|"] + rows + [""]


def goals(result) -> List[dict]:
    """Each goal: text, verdict (True, False or None when this run lacks the numbers) and the evidence."""
    out = []
    models = result["models"]

    def g(model, fw, key):
        return _get(result, model, fw, key)

    chain = next((n for n, m in models.items() if m.get("ops")), None)
    e, p = (g(chain, "ember", "ns_per_op"), g(chain, "et_portable", "ns_per_op")) if chain else (None, None)
    out.append({"goal": "framework overhead per op at most half of ExecuTorch's (200-op chain, vs ET portable)",
                "holds": None if e is None or p is None else e <= 0.5 * p,
                "evidence": "—" if e is None or p is None else f"Ember {e:.1f} ns/op vs ExecuTorch {p:.1f} ns/op "
                f"({e / p:.2f}x)"})
    ev, verdicts = [], []
    for n in TWO_X:
        e, p = g(n, "ember", "median_us"), g(n, "et_portable", "median_us")
        if e is None or p is None:
            continue
        verdicts.append(p / e >= 2.0)
        ev.append(f"{models[n]['label']}: {p / e:.2f}x")
    kernels = result.get("ember_kernels", "portable")
    if kernels == "portable":
        out.append({"goal": "Ember portable at least 2x faster than ExecuTorch portable on MLP, CNN, MobileNetV2",
                    "holds": all(verdicts) if verdicts else None,
                    "evidence": "; ".join(ev) + " (ExecuTorch median / Ember median)" if ev else "—"})
    else:
        ev, verdicts = [], []
        for n in ("mobilenet_v2_035_96", "mobilenet_v2"):
            e, p = g(n, "ember", "median_us"), g(n, "et_xnnpack", "median_us")
            if e is None or p is None:
                continue
            verdicts.append(e <= 1.5 * p)
            ev.append(f"{models[n]['label']}: {e / p:.2f}x")
        out.append({"goal": "Ember optimized within 1.5x of ExecuTorch+XNNPACK on MobileNetV2 (latency ratio)",
                    "holds": all(verdicts) if verdicts else None,
                    "evidence": "; ".join(ev) + " (Ember median / XNNPACK median)" if ev else "—"})
    for peer in ("et_portable", "et_xnnpack"):
        ev, verdicts = [], []
        for n, m in models.items():
            e, p = g(n, "ember", "load_us"), g(n, peer, "load_us")
            if e is None or p is None:
                continue
            verdicts.append(e < p)
            if e >= p:
                ev.append(f"{m['label']}: {e:,.0f} vs {p:,.0f} µs")
        out.append({"goal": f"load+init faster than {LABELS[peer]} on every model",
                    "holds": all(verdicts) if verdicts else None,
                    "evidence": ("slower on: " + "; ".join(ev)) if ev else
                    (f"faster on all {len(verdicts)}" if verdicts else "—")})
    ev, faster = [], []
    for n in SMALL:
        if n not in models:
            continue
        e, p = g(n, "ember", "median_us"), g(n, "ort", "median_us")
        if e is None or p is None:
            continue
        faster.append(e < p)
        ev.append(f"{models[n]['label']}: {e / p:.2f}x")
    out.append({"goal": "Ember faster than ONNX Runtime on the small models (latency ratio Ember/ORT; ORT is timed "
                "from Python, a few µs per call)",
                "holds": (all(faster) if all(faster) or not any(faster) else "partly") if faster else None,
                "evidence": "; ".join(ev) if ev else "—"})
    return out


def markdown(result) -> str:
    if result.get("mode") == "callgrind":
        return callgrind_markdown(result)
    mach = result["machine"]
    lines = [f"# Ember benchmark, {result['date']}{' (quick)' if result.get('quick') else ''}", "",
             f"CPU: **{mach['cpu']}** ({mach['cores']} cores, {mach['machine']}, Linux {mach['kernel']}); "
             f"every measured process pinned to CPU {mach['pinned_cpu']} and single-threaded. "
             f"Commit {mach['git_commit']}{' (with local changes)' if mach.get('git_dirty') else ''}. "
             f"Timed runs per measurement: about {result['settings']['target_s']} s "
             f"({result['settings']['min_runs']} to {result['settings']['max_runs']} runs, warm-up a tenth of that); "
             f"the C++ runners in {result['settings'].get('cpp_rounds', 1)} interleaved rounds (processes), "
             "median and p90 being the medians of the rounds' values. "
             f"Whole run: {result['wall_s']:.0f} s.", "",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items() if v) + ".", ""]
    lines += [f"Ember's kernels in this run: **{result.get('ember_kernels', 'portable')}** (`--kernels`).", ""]
    lines += ["| framework | what runs |", "|---|---|"]
    for fw, f in result["frameworks"].items():
        lines.append(f"| {LABELS[fw]} | {f['description']}" + (f" — **skipped**: {f['skipped']}" if f["skipped"]
                                                              else "") + " |")
    lines += [""]
    if result.get("plot"):
        lines += [f"![latency per model]({result['plot']})", ""]
    lines += ["## Goals", "", "| goal | holds | evidence |", "|---|---|---|"]
    for gl in goals(result):
        verdict = {True: "yes", False: "**no**", None: "n/a", "partly": "partly"}[gl["holds"]]
        lines.append(f"| {gl['goal']} | {verdict} | {gl['evidence']} |")
    lines += ["", "## Results", ""]
    for key, title, what, kind in METRICS:
        lines += metric_table(result, key, title, what, kind)
    lines += per_op_table(result)
    lines += correctness_table(result)
    lines += pybind_table(result)
    et_opt = {n: m["frameworks"]["et_portable"].get("optimized_kernels_used")
              for n, m in result["models"].items() if "et_portable" in m["frameworks"]}
    if any(et_opt.values()):
        lines += ["Which of ExecuTorch's kernels are its optimized ones (the wheel's kernel library has optimized "
                  "versions of a few operators and the portable ones for the rest): " +
                  "; ".join(f"{result['models'][n]['label']}: {', '.join(v)}" for n, v in et_opt.items() if v) + ".",
                  ""]
    errors = [(n, fw, r["error"]) for n, m in result["models"].items() for fw, r in m["frameworks"].items()
              if "error" in r]
    if errors:
        lines += ["## Errors", ""] + [f"- {n} / {LABELS[fw]}: {e.splitlines()[0][:300]}" for n, fw, e in errors] + [""]
    return "\n".join(lines)


def callgrind_markdown(result) -> str:
    mach = result["machine"]
    lines = [f"# Ember benchmark, instruction counts, {result['date']}", "",
             f"CPU: {mach['cpu']}; valgrind --tool=callgrind. Counts are instructions executed (Ir) inside the "
             "runtime's own calls, read from callgrind's inclusive costs: `Method::execute()` per steady-state call "
             "(the difference between runs making 3 and 2 calls; for programs above "
             f"{result['settings_callgrind']['small_ir']:,} instructions per 2 calls, their mean), `Program::load` "
             "and `Program::load_method`. ExecuTorch is counted on its C++ runtime from the 1.5.1 wheel "
             "(bench/et_runner.cc), so no Python runs inside the counted calls.", ""]
    fws = [fw for fw in ["ember", "et_portable", "et_xnnpack"] if any(fw in m["frameworks"]
                                                                       for m in result["models"].values())]
    peers = [p for p in fws if p != "ember"]
    for key, title in (("execute_ir", "execute(), instructions per call"),
                       ("load_ir", "Program::load + load_method, instructions")):
        lines += [f"### {title}", "", "| model | " + " | ".join(LABELS[f] for f in fws) + " | " +
                  " | ".join(f"Ember/{LABELS[p]}" for p in peers) + " |", "|---|" + "---:|" * (len(fws) + len(peers))]
        for name, m in result["models"].items():
            vals = [m["frameworks"].get(fw, {}).get(key) for fw in fws]
            cells = [_fmt(v, "int") if v is not None else ("error" if "error" in m["frameworks"].get(fw, {})
                                                           else "—") for fw, v in zip(fws, vals)]
            ratios = [f"{vals[0] / v:.2f}x" if vals[0] and v else "—" for v in vals[1:]]
            lines.append(f"| {m['label']} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
        lines += [""]
    chains = [(n, m) for n, m in result["models"].items() if m.get("ops")]
    for n, m in chains:
        per = {fw: m["frameworks"].get(fw, {}).get("execute_ir") for fw in fws}
        lines += [f"Per operator on the {m['label']} chain: " + ", ".join(
            f"{LABELS[fw]} {v / m['ops']:,.0f} instructions" for fw, v in per.items() if v) + ".", ""]
    errors = [(n, fw, r["error"]) for n, m in result["models"].items() for fw, r in m["frameworks"].items()
              if "error" in r]
    if errors:
        lines += ["## Errors", ""] + [f"- {n} / {LABELS[fw]}: {e.splitlines()[0][:300]}" for n, fw, e in errors] + [""]
    return "\n".join(lines)
