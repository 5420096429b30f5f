"""The Cortex-M55 layer benchmark: Ember's int8 kernels per call on the anchor table's layer shapes and on the zoo's
int8 layers, under QEMU's mps3-an547 with -icount shift=0 (one instruction per virtual nanosecond), with Ember's
Helium kernels (the default) and without them (--//kernels:helium=false: the scalar kernels), beside CMSIS-NN's
figures from the anchor table.

    .venv/bin/python3 -m bench.cortex_m.report                  # bench/results/<date>-m55-layers.{md,json}
    .venv/bin/python3 -m bench.cortex_m.report --runs 4 --name NAME

Each case's time is the sum of its calls' traced durations (the runtime's event tracer, --config=profiling),
averaged over the runs after the first (warm, as the anchor was measured). QEMU counts instructions, not cycles:
on a real M55 most vector instructions take two beats.
"""

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from bench.cortex_m.firmware import VARIANTS, build as build_firmware, commit, run_qemu, write_results  # noqa: E402
from devtools import raw_trace  # noqa: E402
from exir.serialize import deserialize_pte  # noqa: E402

TARGET = "//bench/cortex_m:layers"
QEMU_TIMEOUT_S = 600


def build(variant: str, out_dir: str) -> Dict[str, str]:
    """Builds the traced firmware for `variant`; copies of its ELF, program and case list (a later build moves
    bazel-bin)."""
    bin_dir = build_firmware(["--config=cortex_m55", "--config=profiling"] + VARIANTS[variant], [TARGET])
    files = {}
    for key, name in (("elf", "layers"), ("pte", "layers.pte"), ("json", "layers.json")):
        files[key] = os.path.join(out_dir, f"{variant}-{name}")
        shutil.copy(os.path.join(bin_dir, "bench", "cortex_m", name), files[key])
    return files


def run(files: Dict[str, str], runs: int, work: str) -> List[float]:
    """Mean instructions per instruction index of the program, over the runs after the first."""
    trace = os.path.join(work, "trace.emtr")
    run_qemu(files["elf"], ["--input", "random:7", "--runs", str(runs), "--profile", trace], work, QEMU_TIMEOUT_S)
    with open(files["pte"], "rb") as f:
        program = deserialize_pte(f.read()).program
    with open(trace, "rb") as f:
        traced = raw_trace.parse(f.read(), program)
    warm = traced[1:] if len(traced) > 1 else traced
    count = len(program.execution_plan[0].chains[0].instructions)
    totals = [0.0] * count
    for r in warm:
        for e in r.events:
            if 0 <= e.instruction < count:
                totals[e.instruction] += e.duration
    return [t / len(warm) for t in totals]


def tabulate(cases: List[dict], per_instruction: Dict[str, List[float]]) -> List[dict]:
    rows = []
    for c in cases:
        row = dict(c)
        for variant, times in per_instruction.items():
            row[variant] = round(sum(times[c["first"] : c["first"] + c["calls"]]))
        rows.append(row)
    return rows


def markdown(rows: List[dict], header: str) -> str:
    def num(v):
        return "-" if v is None else f"{v:,}"

    lines = [
        header,
        "",
        "| layer (int8, NCHW in Ember) | MACs | Ember Helium | per MAC | CMSIS-NN MVE | Ember / CMSIS-NN | "
        "Ember scalar | CMSIS-NN scalar | Helium speed-up |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for group, title in (
        ("anchor", "The anchor table's layers"),
        ("zoo", "The zoo's int8 layers"),
        ("elementwise", "Elementwise int8 layers"),
    ):
        lines.append(f"| **{title}** | | | | | | | | |")
        for r in (r for r in rows if r["group"] == group):
            per_mac = f"{r['helium'] / r['macs']:.2f}" if r["macs"] else "-"
            ratio = f"{r['helium'] / r['cmsis_nn']:.2f}x" if r["cmsis_nn"] else "-"
            lines.append(
                f"| {r['name']} | {num(r['macs'] or None)} | {num(r['helium'])} | {per_mac} | "
                f"{num(r['cmsis_nn'])} | {ratio} | {num(r['scalar'])} | {num(r['cmsis_nn_scalar'])} | "
                f"{r['scalar'] / r['helium']:.1f}x |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=4, help="runs of the program; the first is not counted")
    ap.add_argument("--name", default=f"{datetime.date.today().isoformat()}-m55-layers")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args(argv)
    per_instruction, cases = {}, None
    with tempfile.TemporaryDirectory() as work:
        for variant in VARIANTS:
            files = build(variant, work)
            with open(files["json"]) as f:
                cases = json.load(f)["cases"]
            per_instruction[variant] = run(files, args.runs, work)
    rows = tabulate(cases, per_instruction)
    at = commit()
    header = (
        f"Cortex-M55 (QEMU 7.2 mps3-an547, -icount shift=0): instructions per call, warm, mean of "
        f"{args.runs - 1} runs; Ember at {at}, `python -m bench.cortex_m.report`. CMSIS-NN v7.0.0-43 "
        f"(-O2, MVE / +nomve) from the anchor table of issue 33, measured in the same emulator."
    )
    write_results(args.out, args.name, markdown(rows, header), {"commit": at, "runs": args.runs, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
