"""Whole models on the Cortex-M55 firmware, with Ember's Helium kernels (the default) and without them
(--//kernels:helium=false: the scalar kernels): instructions per inference under QEMU's mps3-an547 with -icount
shift=0, flash (code and data, the embedded program apart, as selective_build.size_report counts it), the memory
each firmware reports (planned arena, method allocator, kernel scratch), and the stack's high-water mark.

    .venv/bin/python3 -m bench.cortex_m.models          # bench/results/<date>-m55-models.{md,json}

Built with --config=cortex_m55 --config=size, as the size budgets measure firmware. QEMU counts instructions,
not cycles.
"""

import argparse
import datetime
import os
import re
import sys
import tempfile
from typing import Dict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from bench.cortex_m.firmware import VARIANTS, build as build_firmware, commit, run_qemu, write_results  # noqa: E402
from selective_build import size_report  # noqa: E402

FLOAT_MODELS = ["mlp", "small_cnn", "mobilenet_v2_035_96"]
INT8_MODELS = [
    "mlp_int8",
    "small_cnn_int8",
    "mobilenet_v2_005_96_int8",
    "ds_cnn_kws_int8",
    "resnet8_cifar10_int8",
    "mobilenet_v1_025_vww_int8",
    "autoencoder_ad_int8",
]
# CMSIS-NN with MVE on the same network, where issue 33's anchor table has it (instructions per call).
CMSIS_NN = {"mlp_int8": 133_328}
QEMU_TIMEOUT_S = 900


def build(variant: str):
    return build_firmware(
        ["--config=cortex_m55", "--config=size"] + VARIANTS[variant],
        [f"//examples/firmware:{m}" for m in FLOAT_MODELS + INT8_MODELS],
    )


def measure(elf: str, work: str) -> Dict[str, int]:
    out = run_qemu(elf, ["--runs", "2"], work, QEMU_TIMEOUT_S)

    def number(pattern: str) -> int:
        m = re.search(pattern, out)
        return int(m.group(1)) if m else 0

    size_report.TOOLS = "arm-none-eabi-"
    return {
        "instructions": number(r"mean (\d+) ns"),
        "arena": sum(int(b) for b in re.findall(r"pool \d+: (\d+) bytes planned", out)),
        "method_allocator": number(r"method allocator: (\d+) bytes used"),
        "scratch": number(r"kernel scratch: (\d+) bytes used"),
        "stack": number(r"stack: (\d+) bytes used"),
        "flash": size_report.measure(elf)["code_data_bytes"],
    }


def markdown(rows: Dict[str, Dict[str, dict]], header: str) -> str:
    lines = [
        header,
        "",
        "| model | instructions, scalar kernels | with Helium | fewer | CMSIS-NN (MVE) | flash, Helium | "
        "flash, scalar | arena + method allocator + scratch | stack high-water |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        h, s = r["helium"], r["scalar"]
        cmsis = f"{CMSIS_NN[name]:,}" if name in CMSIS_NN else "-"
        lines.append(
            f"| {name} | {s['instructions']:,} | {h['instructions']:,} | "
            f"{s['instructions'] / h['instructions']:.1f}x | {cmsis} | {h['flash']:,} | {s['flash']:,} | "
            f"{h['arena']:,} + {h['method_allocator']:,} + {h['scratch']:,} | {h['stack']:,} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", default=f"{datetime.date.today().isoformat()}-m55-models")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args(argv)
    rows: Dict[str, Dict[str, dict]] = {m: {} for m in FLOAT_MODELS + INT8_MODELS}
    with tempfile.TemporaryDirectory() as work:
        for variant in VARIANTS:
            bin_dir = build(variant)
            for m in rows:
                rows[m][variant] = measure(os.path.join(bin_dir, "examples", "firmware", m), work)
    at = commit()
    header = (
        f"Cortex-M55 firmware (QEMU 7.2 mps3-an547, -icount shift=0; `--config=cortex_m55 --config=size`): "
        f"instructions per inference (mean of 2 runs), bytes; Ember at {at}, "
        f"`python -m bench.cortex_m.models`."
    )
    write_results(args.out, args.name, markdown(rows, header), {"commit": at, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
