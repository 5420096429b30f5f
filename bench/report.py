"""The benchmark's Markdown report: one table per metric (value per framework, then Ember/peer ratios), the
200-op chain's per-operator cost, and the goals, each checked against this run's numbers."""

from __future__ import annotations

from typing import List, Optional, Tuple

# "ember" is the default build (kernels/optimized ahead of portable), "ember_portable" portable kernels only.
# "ember_2t" the default build on 2 threads, "ember_xnnpack" Ember's XNNPACK delegate (and "_2t" on 2 threads):
# optional columns.
EMBERS = ["ember", "ember_portable", "ember_2t", "ember_xnnpack", "ember_xnnpack_2t"]
PEERS = ["et_portable", "et_xnnpack", "ort", "eager", "litert"]
# Optional peer columns: compared only with Ember's columns on as many threads, never with the default build.
PEERS_2T = ["et_xnnpack_2t", "litert_2t"]
LABELS = {
    "ember": "Ember",
    "ember_portable": "Ember portable",
    "ember_2t": "Ember 2 threads",
    "ember_xnnpack": "Ember+XNNPACK",
    "ember_xnnpack_2t": "Ember+XNNPACK 2 threads",
    "et_portable": "ET portable",
    "et_xnnpack": "ET XNNPACK",
    "et_xnnpack_2t": "ET XNNPACK 2 threads",
    "ort": "ONNX Runtime",
    "eager": "eager torch",
    "litert": "LiteRT",
    "litert_2t": "LiteRT 2 threads",
}

# (key, title, what it is, formatter)
METRICS = [
    ("median_us", "Latency, median (µs)", "execute() only, after warm-up, single thread", "us"),
    ("p90_us", "Latency, p90 (µs)", "90th percentile of the same runs", "us"),
    (
        "load_us",
        "Load + init (µs)",
        "from the file on disk to a method ready to execute (C++ runners: median of up to 7 processes)",
        "us",
    ),
    ("arena_bytes", "Planned arena (bytes)", "all memory-planned pools of the method (activations)", "int"),
    (
        "maxrss_kb",
        "Peak RSS (KiB)",
        "ru_maxrss of the measuring process (whole process: Python + libraries for ONNX Runtime, eager and LiteRT)",
        "int",
    ),
    ("file_bytes", "Program file (bytes)", ".pte / .onnx (weights inside) / eager's state_dict .pt / .tflite", "int"),
]

# The models each goal names (bench/models.py keys).
SMALL = ["add", "softmax", "linear", "chain200", "mlp"]
TWO_X = ["mlp", "small_cnn", "mobilenet_v2_035_96", "mobilenet_v2"]
MOBILENETS = ["mobilenet_v2_035_96", "mobilenet_v2"]
# The real group (--models real): published architectures; its CNNs are held to the XNNPACK goal.
REAL_CNNS = ["resnet18", "tv_mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0"]
REAL = REAL_CNNS + ["bert_mini", "vit_tiny"]
# The int8 group (--models int8): those CNNs quantized by each framework's own quantizer, and their fp32 rows.
INT8 = {"resnet18_int8": "resnet18", "tv_mobilenet_v2_int8": "tv_mobilenet_v2"}


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


def _asked(result) -> List[str]:
    """The columns this run asked for, measured or not (a peer whose every model failed still has its goal row)."""
    return list(result.get("frameworks", {})) or _frameworks(result)


def _frameworks(result) -> List[str]:
    present = {fw for m in result["models"].values() for fw in m["frameworks"]}
    return [fw for fw in EMBERS + PEERS + PEERS_2T if fw in present]


def ratio_pairs(fws: List[str]) -> List[Tuple[str, str]]:
    """The ratio columns, (numerator, denominator): Ember's default build against every peer, and Ember portable
    against ET portable, the pair the portable-kernels goal compares (neither with a delegate)."""
    pairs = [("ember", p) for p in fws if p in PEERS] if "ember" in fws else []
    if "ember_portable" in fws and "et_portable" in fws:
        pairs.append(("ember_portable", "et_portable"))
    # The optional columns' own comparisons: 2 threads against 1, and the two XNNPACK delegates on one file.
    if "ember_2t" in fws and "ember" in fws:
        pairs.append(("ember_2t", "ember"))
    if "ember_xnnpack" in fws and "et_xnnpack" in fws:
        pairs.append(("ember_xnnpack", "et_xnnpack"))
    pairs += [(a, "et_xnnpack_2t") for a in ("ember_2t", "ember_xnnpack_2t") if a in fws and "et_xnnpack_2t" in fws]
    if "ember_2t" in fws and "litert_2t" in fws:
        pairs.append(("ember_2t", "litert_2t"))
    return pairs


def _x(r: float) -> str:
    # Two significant digits below 0.1: Ember/ORT on a one-op model is a few thousandths, not "0.00x".
    return f"{r:.2f}x" if r >= 0.1 else f"{r:.2g}x"


def _ratio(a: Optional[float], b: Optional[float]) -> str:
    return _x(a / b) if a is not None and b else "—"


def metric_table(result, key, title, what, kind) -> List[str]:
    fws = _frameworks(result)
    pairs = ratio_pairs(fws)
    also = ", and Ember portable / ET portable" if ("ember_portable", "et_portable") in pairs else ""
    lines = [
        f"### {title}",
        "",
        f"{what}. Ratio columns: Ember / peer{also} (below 1: Ember smaller or faster).",
        "",
        "| model | "
        + " | ".join(LABELS[f] for f in fws)
        + " | "
        + " | ".join(f"{LABELS[a]}/{LABELS[b]}" for a, b in pairs)
        + " |",
        "|---|" + "---:|" * (len(fws) + len(pairs)),
    ]
    for name, m in result["models"].items():
        cells = []
        for fw in fws:
            err = m["frameworks"].get(fw, {}).get("error")
            cells.append("error" if err else _fmt(_get(result, name, fw, key), kind))
        ratios = [_ratio(_get(result, name, a, key), _get(result, name, b, key)) for a, b in pairs]
        lines.append(f"| {m['label']} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    return lines + [""]


def per_op_table(result) -> List[str]:
    chains = [(n, m) for n, m in result["models"].items() if m.get("ops")]
    if not chains:
        return []
    fws = _frameworks(result)
    lines = [
        "### Framework overhead per operator",
        "",
        "Median latency of the chain divided by its operator count (ns per op). Each op is one kernel call on "
        "16 floats, so this is almost all per-operator cost: dispatch, argument handling, output resize, the "
        "loop; the kernels' arithmetic (16 adds or multiplies) is a few ns of it. Not subtracted.",
        "",
        "| model | " + " | ".join(LABELS[f] for f in fws) + " |",
        "|---|" + "---:|" * len(fws),
    ]
    for name, m in chains:
        cells = [_fmt(_get(result, name, fw, "ns_per_op"), "us") for fw in fws]
        lines.append(f"| {m['label']} | " + " | ".join(cells) + " |")
    return lines + [""]


def correctness_table(result) -> List[str]:
    fws = _frameworks(result)
    lines = [
        "### Outputs against eager",
        "",
        "Largest absolute difference from eager PyTorch's outputs on the same inputs (✓: within 1e-3 of the "
        "outputs' scale).",
        "",
        "| model | " + " | ".join(LABELS[f] for f in fws) + " |",
        "|---|" + "---:|" * len(fws),
    ]
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
    return (
        [
            "### Cross-check: ExecuTorch through its Python bindings",
            "",
            "The same programs run through ExecuTorch's pybindings (`portable_lib`, threadpool of 1), timed around "
            "`Method.execute()` from Python: the C++ driver's numbers are what ExecuTorch's own runtime does, and "
            "the difference on the one-op models is the bindings' call overhead. Median µs.",
            "",
            "| model | ET portable, C++ | ET portable, pybind | ET XNNPACK, C++ | ET XNNPACK, pybind |",
            "|---|---:|---:|---:|---:|",
        ]
        + rows
        + [""]
    )


VERDICTS = {True: "yes", False: "**no**", "partly": "partly", None: "not measured"}


def _verdict(checks: List[bool]):
    """yes when every comparison holds, no when none does, partly in between; None when nothing was compared."""
    if not checks:
        return None
    return True if all(checks) else False if not any(checks) else "partly"


def _label(result, model) -> str:
    if model in result["models"]:
        return result["models"][model]["label"]
    return result.get("model_labels", {}).get(model, model)


def _compare(result, models, a, b, key):
    """(model, a's value, b's value) for every model where both have a number, and the models where one is
    missing (not in this run, a framework skipped or failed)."""
    both, missing = [], []
    for n in models:
        x, y = _get(result, n, a, key), _get(result, n, b, key)
        if x is None or y is None:
            missing.append(n)
        else:
            both.append((n, x, y))
    return both, missing


def _not_measured(result, missing: List[str]) -> List[str]:
    return ["not measured: " + ", ".join(_label(result, n) for n in missing)] if missing else []


def _chain_kernels(result, chain) -> str:
    """Which kernels the two Ember builds run on the chain, from the program's operators and kernels/optimized's
    manifest: the chain measures overhead, so it matters whether the builds differ there at all."""
    r = result["models"][chain]["frameworks"].get("ember") or {}
    ops, fast = r.get("operators"), r.get("optimized_kernels_used")
    if ops is None or fast is None:
        return ""
    same = [o for o in ops if o not in fast]
    if not fast:
        return (
            f"; the chain's operators ({', '.join(ops)}) have no kernels/optimized kernel, so both Ember builds "
            "run the same portable kernels"
        )
    calls = sum(ops[o] for o in fast)
    return (
        f"; both Ember builds run the same portable kernels for {', '.join(same) or 'none'}; "
        f"{', '.join(fast)} ({calls} of {sum(ops.values())} calls) runs kernels/optimized's kernel in Ember's "
        "default build (elementwise on 16 floats, like the portable one)"
    )


def goal_overhead(result) -> dict:
    chain = next((n for n, m in result["models"].items() if m.get("ops")), None)
    goal = {
        "goal": "framework overhead per op at most half of ExecuTorch's (200-op chain, ns per op: Ember / ET "
        "portable <= 0.5)",
        "expected": 1,
    }
    both, _ = _compare(result, [chain] if chain else [], "ember", "et_portable", "ns_per_op")
    if not both:
        lacking = [
            LABELS[fw] for fw in ("ember", "et_portable") if chain and _get(result, chain, fw, "ns_per_op") is None
        ]
        return dict(
            goal,
            holds=None,
            measured=0,
            evidence="not measured: "
            + ("the chain is not in this run" if chain is None else "no number from " + " and ".join(lacking)),
        )
    _, e, p = both[0]
    ev = f"Ember {e:.1f} vs ET portable {p:.1f} ns/op ({_x(e / p)})"
    ep = _get(result, chain, "ember_portable", "ns_per_op")
    if ep is not None:
        ev += f"; Ember portable {ep:.1f} ns/op ({_x(ep / p)})"
    return dict(goal, holds=e <= 0.5 * p, measured=1, evidence=ev + _chain_kernels(result, chain))


def _latency_goal(result, goal: str, models: List[str], ember: str, peer: str, holds, peer_over_ember=False) -> dict:
    """A goal on median latency over named models: holds(ember_us, peer_us) per model; the evidence gives the
    ratio the goal states (Ember / peer, or peer / Ember for "N times faster") and both latencies."""
    both, missing = _compare(result, models, ember, peer, "median_us")
    parts = [
        f"{_label(result, n)}: {_x(p / e if peer_over_ember else e / p)} ({_fmt(e, 'us')} vs {_fmt(p, 'us')} µs)"
        for n, e, p in both
    ]
    return {
        "goal": goal,
        "holds": _verdict([holds(e, p) for _, e, p in both]),
        "measured": len(both),
        "expected": len(models),
        "evidence": "; ".join(parts + _not_measured(result, missing)),
    }


def goal_portable_2x(result) -> dict:
    return _latency_goal(
        result,
        "Ember portable kernels at least 2x faster than ExecuTorch portable on the MLP, "
        "CNN and MobileNetV2 (median latency, ET portable / Ember portable >= 2; µs: Ember portable "
        "vs ET portable)",
        TWO_X,
        "ember_portable",
        "et_portable",
        lambda e, p: p >= 2 * e,
        peer_over_ember=True,
    )


def goal_xnnpack(result) -> dict:
    return _latency_goal(
        result,
        "Ember (optimized kernels) within 1.5x of ExecuTorch+XNNPACK on MobileNetV2 "
        "(median latency, Ember / ET XNNPACK <= 1.5; µs: Ember vs ET XNNPACK)",
        MOBILENETS,
        "ember",
        "et_xnnpack",
        lambda e, p: e <= 1.5 * p,
    )


def goal_ort(result) -> dict:
    return _latency_goal(
        result,
        "Ember (optimized kernels) ahead of ONNX Runtime on the small models (median "
        "latency, Ember / ORT < 1; µs: Ember vs ORT; ORT is timed from Python, a few µs per call)",
        SMALL,
        "ember",
        "ort",
        lambda e, p: e < p,
    )


def goal_load(result) -> dict:
    checks, parts, models = [], [], list(result["models"])
    for peer in ("et_portable", "et_xnnpack"):
        both, missing = _compare(result, models, "ember", peer, "load_us")
        checks += [e < p for _, e, p in both]
        if not both:
            parts.append(f"vs {LABELS[peer]}: not measured")
            continue
        slower = [f"{_label(result, n)} {_fmt(e, 'us')} vs {_fmt(p, 'us')} µs" for n, e, p in both if e >= p]
        ratios = sorted(e / p for _, e, p in both)
        part = (
            f"vs {LABELS[peer]}: faster on {len(both) - len(slower)} of {len(both)} (Ember / ET "
            f"{_x(ratios[0])} to {_x(ratios[-1])})"
        )
        if slower:
            part += ", slower on " + ", ".join(slower)
        if missing:
            part += ", not measured on " + ", ".join(_label(result, n) for n in missing)
        parts.append(part)
    return {
        "goal": "load+init faster than ExecuTorch on every model (Ember vs ET portable and vs ET XNNPACK)",
        "holds": _verdict(checks),
        "measured": len(checks),
        "expected": 2 * len(models),
        "evidence": "; ".join(parts),
    }


def goal_real_portable(result) -> dict:
    return _latency_goal(
        result,
        "real models: Ember (optimized kernels) faster than ExecuTorch portable on every "
        "one (median latency, Ember / ET portable < 1; µs: Ember vs ET portable)",
        REAL,
        "ember",
        "et_portable",
        lambda e, p: e < p,
    )


def goal_real_xnnpack(result) -> dict:
    return _latency_goal(
        result,
        "real models: Ember (optimized kernels) within 1.5x of ExecuTorch+XNNPACK on the "
        "CNNs (median latency, Ember / ET XNNPACK <= 1.5; µs: Ember vs ET XNNPACK)",
        REAL_CNNS,
        "ember",
        "et_xnnpack",
        lambda e, p: e <= 1.5 * p,
    )


def goal_real_eager(result) -> dict:
    return _latency_goal(
        result,
        "real models: Ember (optimized kernels) no slower than single-threaded eager "
        "PyTorch on any (median latency, Ember / eager <= 1; µs: Ember vs eager)",
        REAL,
        "ember",
        "eager",
        lambda e, p: e <= p,
    )


def goal_two_threads(result) -> dict:
    return _latency_goal(
        result,
        "Ember's optimized kernels at 2 threads at least 1.7x faster than at 1 on "
        "MobileNetV2 1.0 224 (median latency, Ember / Ember 2 threads >= 1.7; µs: 1 vs 2 threads)",
        ["mobilenet_v2", "tv_mobilenet_v2"],
        "ember_2t",
        "ember",
        lambda e, p: p >= 1.7 * e,
        peer_over_ember=True,
    )


def goal_xnnpack_delegate(result) -> dict:
    return _latency_goal(
        result,
        "Ember + XNNPACK delegate within 1.1x of ExecuTorch + XNNPACK on MobileNetV2 and "
        "ResNet18, single thread, same .pte (median latency, Ember+XNNPACK / ET XNNPACK <= 1.1; "
        "Debian's XNNPACK is a 2022 snapshot, ExecuTorch's a 2025 one)",
        ["mobilenet_v2", "tv_mobilenet_v2", "resnet18"],
        "ember_xnnpack",
        "et_xnnpack",
        lambda e, p: e <= 1.1 * p,
    )


def goal_litert(result, ember: str, peer: str, threads: str) -> dict:
    """Ember faster than LiteRT on every model of the run that litert-torch converted; the models it could not
    convert are named (the Errors section has the converter's message) and left out of the count."""
    unconverted = [n for n, m in result["models"].items() if (m["frameworks"].get(peer) or {}).get("conversion_failed")]
    gl = _latency_goal(
        result,
        f"Ember faster than LiteRT on every model litert-torch converts, {threads} (median latency, "
        f"{LABELS[ember]} / {LABELS[peer]} < 1; µs: Ember vs LiteRT)",
        [n for n in result["models"] if n not in unconverted],
        ember,
        peer,
        lambda e, p: e < p,
    )
    if unconverted:
        note = "LiteRT could not convert: " + ", ".join(_label(result, n) for n in unconverted) + " (see Errors)"
        gl["evidence"] = "; ".join(x for x in (gl["evidence"], note) if x)
    return gl


def goal_int8_xnnpack(result) -> dict:
    return _latency_goal(
        result,
        "int8 models: Ember int8 at most 1.0x ExecuTorch+XNNPACK int8 (each with its own quantizer, same model; "
        "median latency, Ember / ET XNNPACK <= 1; µs: Ember vs ET XNNPACK)",
        list(INT8),
        "ember",
        "et_xnnpack",
        lambda e, p: e <= p,
    )


def goal_int8_fp32(result) -> dict:
    """Across rows: each int8 model against its fp32 row, both on Ember's default build."""
    checks, parts, missing = [], [], []
    for int8, fp32 in INT8.items():
        e, f = _get(result, int8, "ember", "median_us"), _get(result, fp32, "ember", "median_us")
        if e is None or f is None:
            missing.append(int8)
            continue
        checks.append(e < f)
        parts.append(f"{_label(result, int8)}: {_x(e / f)} ({_fmt(e, 'us')} vs {_fmt(f, 'us')} µs)")
    return {
        "goal": "int8 models: Ember int8 faster than Ember fp32 on the same model (median latency, int8 / fp32 < 1; "
        "µs: int8 vs fp32)",
        "holds": _verdict(checks),
        "measured": len(checks),
        "expected": len(INT8),
        "evidence": "; ".join(parts + _not_measured(result, missing)),
    }


def goals(result) -> List[dict]:
    """The issue's goals, each with a verdict (True, False, "partly", or None when this run lacks the numbers),
    how many of the comparisons it names were measured, and the numbers behind it. The zoo's goals are left out
    of a run of real models only, and the real models' goals out of a run without any."""
    names = list(result["models"])
    zoo = [goal_overhead(result), goal_portable_2x(result), goal_xnnpack(result), goal_ort(result)]
    real = [goal_real_portable(result), goal_real_xnnpack(result), goal_real_eager(result)]
    real_only = bool(names) and all(n in REAL or n in INT8 for n in names)
    fws = _frameworks(result)
    extra = ([goal_two_threads(result)] if "ember_2t" in fws else []) + (
        [goal_xnnpack_delegate(result)] if "ember_xnnpack" in fws else []
    )
    extra += [
        goal_litert(result, ember, peer, threads)
        for ember, peer, threads in (("ember", "litert", "1 thread"), ("ember_2t", "litert_2t", "2 threads"))
        if peer in _asked(result)
    ]
    int8 = [goal_int8_xnnpack(result), goal_int8_fp32(result)] if any(n in INT8 for n in names) else []
    return (
        ([] if real_only else zoo)
        + (real if any(n in REAL for n in names) else [])
        + int8
        + extra
        + [goal_load(result)]
    )


def verdict_cell(gl: dict) -> str:
    """yes / partly / no / not measured; a verdict over fewer comparisons than the goal names says so (e.g. a
    --quick run has the MLP but neither the CNN nor the MobileNetV2s)."""
    cell = VERDICTS[gl["holds"]]
    if gl["holds"] is not None and gl["measured"] < gl["expected"]:
        cell += f" ({gl['measured']} of {gl['expected']} measured)"
    return cell


def _load_note(mach) -> str:
    load = mach.get("load_average")
    if not load:
        return ""
    return (
        f" Load average (1, 5, 15 min) {load['start']} at the start, {load['end']} at the end, on "
        f"{mach['cores']} cores (the run's own process counts for about 1)."
    )


def markdown(result) -> str:
    if result.get("mode") == "callgrind":
        return callgrind_markdown(result)
    mach = result["machine"]
    lines = [
        f"# Ember benchmark, {result['date']}{' (quick)' if result.get('quick') else ''}",
        "",
        f"CPU: **{mach['cpu']}** ({mach['cores']} cores, {mach['machine']}, Linux {mach['kernel']}); "
        f"every measured process pinned to CPU {mach['pinned_cpu']} and single-threaded. "
        f"Commit {mach['git_commit']}{' (with local changes)' if mach.get('git_dirty') else ''}. "
        f"Timed runs per measurement: about {result['settings']['target_s']} s "
        f"({result['settings']['min_runs']} to {result['settings']['max_runs']} runs, warm-up a tenth of that); "
        f"the C++ runners in {result['settings'].get('cpp_rounds', 1)} interleaved rounds (processes), "
        "median and p90 being the medians of the rounds' values. "
        f"Whole run: {result['wall_s']:.0f} s." + _load_note(mach),
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items() if v) + ".",
        "",
    ]
    lines += ["| framework | what runs |", "|---|---|"]
    for fw, f in result["frameworks"].items():
        lines.append(
            f"| {LABELS[fw]} | {f['description']}" + (f" — **skipped**: {f['skipped']}" if f["skipped"] else "") + " |"
        )
    lines += [""]
    if result.get("plot"):
        lines += [f"![latency per model]({result['plot']})", ""]
    lines += ["## Goals", "", "| goal | holds | evidence |", "|---|---|---|"]
    for gl in goals(result):
        lines.append(f"| {gl['goal']} | {verdict_cell(gl)} | {gl['evidence']} |")
    lines += ["", "## Results", ""]
    for key, title, what, kind in METRICS:
        lines += metric_table(result, key, title, what, kind)
    lines += per_op_table(result)
    lines += correctness_table(result)
    lines += pybind_table(result)
    lines += ember_kernels_note(result)
    lines += litert_note(result)
    et_opt = {
        n: m["frameworks"]["et_portable"].get("optimized_kernels_used")
        for n, m in result["models"].items()
        if "et_portable" in m["frameworks"]
    }
    if any(et_opt.values()):
        lines += [
            "Which of ExecuTorch's kernels are its optimized ones (the wheel's kernel library has optimized "
            "versions of a few operators and the portable ones for the rest): "
            + "; ".join(f"{result['models'][n]['label']}: {', '.join(v)}" for n, v in et_opt.items() if v)
            + ".",
            "",
        ]
    errors = [
        (n, fw, r["error"]) for n, m in result["models"].items() for fw, r in m["frameworks"].items() if "error" in r
    ]
    if errors:
        lines += ["## Errors", ""] + [f"- {n} / {LABELS[fw]}: {e.splitlines()[0][:300]}" for n, fw, e in errors] + [""]
    return "\n".join(lines)


def ember_kernels_note(result) -> List[str]:
    """Per model, the operators for which Ember's default build registers a kernels/optimized kernel (the rest,
    and everything in Ember portable, run portable kernels): what separates the two Ember columns."""
    used = {
        n: m["frameworks"]["ember"].get("optimized_kernels_used")
        for n, m in result["models"].items()
        if "ember" in m["frameworks"]
    }
    if not any(v is not None for v in used.values()):
        return []
    per = [f"{result['models'][n]['label']}: {', '.join(v) if v else 'none'}" for n, v in used.items() if v is not None]
    return [
        "Which of Ember's operators have a kernels/optimized kernel in its default build (the Ember column; "
        "Ember portable runs portable kernels for all): " + "; ".join(per) + ".",
        "",
    ]


def litert_note(result) -> List[str]:
    """Per model, how much of LiteRT's .tflite its XNNPACK delegate took (the rest runs LiteRT's builtin kernels),
    as bench/litert_side.py read it from the interpreter's nodes."""
    per = []
    for m in result["models"].values():
        r = next(
            (m["frameworks"][fw] for fw in ("litert", "litert_2t") if "xnnpack" in m["frameworks"].get(fw, {})), None
        )
        if r is None:
            continue
        x = r["xnnpack"]
        outside = ", ".join(f"{op} x{n}" if n > 1 else op for op, n in x["outside"].items())
        per.append(
            f"{m['label']}: {x['in_xnnpack']} of {x['operators']} in {x['partitions']} XNNPACK partition"
            + ("s" if x["partitions"] != 1 else "")
            + (f" (outside: {outside})" if outside else "")
        )
    if not per:
        return []
    return [
        "What LiteRT runs: its Interpreter applies the XNNPACK delegate by default; of each .tflite's operators, "
        "the delegate took (the rest run LiteRT's builtin kernels): " + "; ".join(per) + ".",
        "",
    ]


def callgrind_markdown(result) -> str:
    mach = result["machine"]
    lines = [
        f"# Ember benchmark, instruction counts, {result['date']}",
        "",
        f"CPU: {mach['cpu']}; valgrind --tool=callgrind. Counts are instructions executed (Ir) inside the "
        "runtime's own calls, read from callgrind's inclusive costs: `Method::execute()` per steady-state call "
        "(the difference between runs making 3 and 2 calls; for programs above "
        f"{result['settings_callgrind']['small_ir']:,} instructions per 2 calls, their mean), `Program::load` "
        "and `Program::load_method`. ExecuTorch is counted on its C++ runtime from the 1.5.1 wheel "
        "(bench/et_runner.cc), so no Python runs inside the counted calls. Ember is the default build "
        "(`//:runner`, kernels/optimized ahead of portable), Ember portable `//runtime/runner:runner_portable`.",
        "",
    ]
    fws = [
        fw
        for fw in EMBERS + ["et_portable", "et_xnnpack"]
        if any(fw in m["frameworks"] for m in result["models"].values())
    ]
    pairs = ratio_pairs(fws)
    for key, title in (
        ("execute_ir", "execute(), instructions per call"),
        ("load_ir", "Program::load + load_method, instructions"),
    ):
        lines += [
            f"### {title}",
            "",
            "| model | "
            + " | ".join(LABELS[f] for f in fws)
            + " | "
            + " | ".join(f"{LABELS[a]}/{LABELS[b]}" for a, b in pairs)
            + " |",
            "|---|" + "---:|" * (len(fws) + len(pairs)),
        ]
        for name, m in result["models"].items():
            vals = {fw: m["frameworks"].get(fw, {}).get(key) for fw in fws}
            cells = [
                _fmt(v, "int") if v is not None else ("error" if "error" in m["frameworks"].get(fw, {}) else "—")
                for fw, v in vals.items()
            ]
            ratios = [_ratio(vals[a], vals[b]) for a, b in pairs]
            lines.append(f"| {m['label']} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
        lines += [""]
    chains = [(n, m) for n, m in result["models"].items() if m.get("ops")]
    for n, m in chains:
        per = {fw: m["frameworks"].get(fw, {}).get("execute_ir") for fw in fws}
        lines += [
            f"Per operator on the {m['label']} chain: "
            + ", ".join(f"{LABELS[fw]} {v / m['ops']:,.0f} instructions" for fw, v in per.items() if v)
            + ".",
            "",
        ]
    errors = [
        (n, fw, r["error"]) for n, m in result["models"].items() for fw, r in m["frameworks"].items() if "error" in r
    ]
    if errors:
        lines += ["## Errors", ""] + [f"- {n} / {LABELS[fw]}: {e.splitlines()[0][:300]}" for n, fw, e in errors] + [""]
    return "\n".join(lines)
