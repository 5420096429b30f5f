"""Latency per model and framework as a PNG; runs in .venv-bench (matplotlib lives only there).

python -m bench.plot RESULTS.json|- OUT.png
"""

from __future__ import annotations

import json
import sys

LABELS = {
    "ember": "Ember (optimized kernels)",
    "ember_portable": "Ember portable",
    "ember_2t": "Ember, 2 threads",
    "ember_xnnpack": "Ember + XNNPACK delegate",
    "ember_xnnpack_2t": "Ember + XNNPACK delegate, 2 threads",
    "et_portable": "ExecuTorch portable",
    "et_xnnpack": "ExecuTorch XNNPACK",
    "et_xnnpack_2t": "ExecuTorch XNNPACK, 2 threads",
    "ort": "ONNX Runtime (from Python)",
    "eager": "eager torch (from Python)",
    "litert": "LiteRT (from Python)",
    "litert_2t": "LiteRT, 2 threads (from Python)",
}
# Ember's columns in shades of orange, ExecuTorch's in blue.
COLORS = {
    "ember": "#d9480f",
    "ember_portable": "#ffa94d",
    "ember_2t": "#a61e4d",
    "ember_xnnpack": "#f08c00",
    "ember_xnnpack_2t": "#e8590c",
    "et_portable": "#1c7ed6",
    "et_xnnpack": "#74c0fc",
    "et_xnnpack_2t": "#1864ab",
    "ort": "#2f9e44",
    "eager": "#868e96",
    "litert": "#9c36b5",
    "litert_2t": "#5f3dc4",
}


def plot(result: dict, out: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(result["models"])
    fws = [
        fw
        for fw in LABELS
        if any(fw in m["frameworks"] and "error" not in m["frameworks"][fw] for m in result["models"].values())
    ]
    width = 0.8 / max(1, len(fws))
    fig, ax = plt.subplots(figsize=(max(8, 1.5 * len(models) + 2), 5.5), dpi=110)
    for i, fw in enumerate(fws):
        xs, med, lo, hi = [], [], [], []
        for j, name in enumerate(models):
            r = result["models"][name]["frameworks"].get(fw)
            if not r or "error" in r:
                continue
            xs.append(j + (i - (len(fws) - 1) / 2) * width)
            med.append(r["median_us"])
            lo.append(0)
            hi.append(max(0.0, r["p90_us"] - r["median_us"]))
        ax.bar(
            xs,
            med,
            width,
            label=LABELS[fw],
            color=COLORS[fw],
            yerr=[lo, hi],
            capsize=2,
            error_kw={"elinewidth": 0.8, "ecolor": "#333333"},
        )
    ax.set_yscale("log")
    # Headroom above the tallest bar for the legend's two rows (six frameworks), so it covers no bar: a fifth more
    # of the axis's height (on a log scale, a fifth more decades).
    bottom, top = ax.get_ylim()
    ax.set_ylim(bottom, top * (top / bottom) ** 0.2)
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels([result["models"][n]["label"] for n in models], rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("latency, µs (median; whisker to p90; log scale)")
    mach = result.get("machine", {})
    ax.set_title(f"Single-threaded inference latency, {result.get('date', '')} — {mach.get('cpu', '?')}", fontsize=10)
    ax.grid(axis="y", which="both", alpha=0.25)
    ax.legend(fontsize=8, ncol=min(3, len(fws)), loc="upper left")
    fig.tight_layout()
    fig.savefig(out)


def main():
    src, out = sys.argv[1], sys.argv[2]
    result = json.load(sys.stdin) if src == "-" else json.load(open(src))
    plot(result, out)


if __name__ == "__main__":
    main()
