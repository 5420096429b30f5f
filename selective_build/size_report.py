"""Binary size reports: where the bytes of a runner go, as a table, JSON for CI, and an SVG picture.

    python -m selective_build.size_report [--json r.json] [--svg r.svg] [--markdown r.md]
        [--tools-prefix aarch64-linux-gnu-] NAME=BINARY ...

For each binary: the stripped file size, code+data bytes (`size`: text + data; page padding excluded), and
those bytes split by symbol (`nm`) into: runtime core (ember::, the flatbuffers reader), each kernel (by the
operator it implements, from the kernel manifests), kernel helpers shared by several kernels, the generated
registration table, the platform layer (ember_pal_*), strings (unnamed read-only data: log messages), dynamic
linking (ELF and loader sections) and the rest (the runner application, C runtime glue). Measure binaries built with `--config=size`.
Cross-built binaries need the target's binutils: --tools-prefix. Bare-metal firmware counts as code+data what
goes to flash except the embedded program, which is reported apart ("program"); the board's startup, semihosting
and PAL count as platform.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from typing import Dict, List, Tuple

from codegen.gen_registration import kernel_symbol
from codegen.manifest import load_manifest
from schema.resources import repo_path

BUCKETS = [
    "runtime core",
    "kernels",
    "kernel helpers",
    "registration table",
    "platform",
    "strings",
    "dynamic linking",
    "rest",
]
COLORS = {
    "runtime core": "#d9480f",
    "kernels": "#1971c2",
    "kernel helpers": "#74c0fc",
    "registration table": "#2b8a3e",
    "platform": "#f08c00",
    "strings": "#ae3ec9",
    "dynamic linking": "#ced4da",
    "rest": "#868e96",
}
# Sections that exist for the dynamic loader and unwinder, not for Ember's code.
_DYNAMIC = re.compile(
    r"^\.(interp|note|gnu\.hash|hash|dynsym|dynstr|gnu\.version|rela|init|fini|plt|got|dynamic|"
    r"eh_frame|gcc_except_table|tm_clone)"
)


def _kernel_ops() -> Dict[str, str]:
    ops = {}
    for lib, ns in (
        ("portable", "ember::portable"),
        ("prim_ops", "ember::prim"),
        ("quantized", "ember::quantized"),
        ("helium", "ember::helium"),
    ):
        if not os.path.exists(repo_path("kernels", lib, "kernels.yaml")):
            continue  # a library this build does not hand to the report
        decls = load_manifest(repo_path("kernels", lib, "kernels.yaml"), namespace=ns, library=f"kernels/{lib}")
        ops.update({f"{ns}::{d.kernel}": d.op for d in decls})
        # The registration table calls each kernel through a generated function that unboxes its arguments; with
        # link-time optimization (x86-64 --config=size) the kernel is inlined into it, so its bytes are the kernel's.
        ops.update({kernel_symbol(d.op): d.op for d in decls})
    return ops


TOOLS = ""  # binutils prefix, e.g. "arm-none-eabi-"
# Sections of bare-metal firmware that are not code or data: the embedded program and memory the linker reserves.
_PROGRAM = ".ember_model"


def _symbols(binary: str) -> List[Tuple[int, str, str]]:
    out = subprocess.run(
        [TOOLS + "nm", "-C", "-S", "--defined-only", binary], capture_output=True, text=True, check=True
    )
    syms = []
    for line in out.stdout.splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4 and parts[2].lower() in "tdrb":
            syms.append((int(parts[1], 16), parts[2].lower(), parts[3]))
    return syms


def _sections(binary: str) -> Dict[str, int]:
    out = subprocess.run([TOOLS + "size", "-A", binary], capture_output=True, text=True, check=True).stdout
    sections = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith(".") and parts[1].isdigit():
            sections[parts[0]] = int(parts[1])
    return sections


def _classify(name: str, kernels: Dict[str, str]) -> Tuple[str, str]:
    m = re.match(r"(?:\(anonymous namespace\)::)?(k_\w+)\(", name)
    if m and m.group(1) in kernels:
        return "kernels", kernels[m.group(1)]
    if name.startswith("k_aten_") or "kKernels" in name or "registered_kernels" in name:
        return "registration table", ""
    m = re.match(r"(ember::(?:portable|prim|quantized|helium)::\w+)\b", name)
    if m and m.group(1) in kernels:
        return "kernels", kernels[m.group(1)]
    if any(f"ember::{lib}::" in name for lib in ("portable", "quantized", "helium")):
        return "kernel helpers", ""
    if name.startswith(
        (
            "ember_pal_",
            "ember::semihosting::",
            "ember::board::",
            "reset_handler",
            "fault_handler",
            "systick_handler",
            "ember_fault_report",
            "g_vectors",
        )
    ):
        return "platform", ""
    if name.startswith(("ember::fill_generated", "ember::is_generated_spec", "ember::kEmbedded")):
        return "rest", ""  # the runner application's
    if name.startswith(("ember::", "flatbuffers::", "ember_pte::")) or "ember::" in name.split("(")[0]:
        return "runtime core", ""
    return "rest", ""


def measure(binary: str) -> dict:
    with tempfile.TemporaryDirectory() as d:
        stripped = os.path.join(d, "s")
        subprocess.run([TOOLS + "strip", "-o", stripped, binary], check=True)
        stripped_bytes = os.path.getsize(stripped)
    size = (
        subprocess.run([TOOLS + "size", binary], capture_output=True, text=True, check=True)
        .stdout.splitlines()[-1]
        .split()
    )
    sections = _sections(binary)
    program = sections.get(_PROGRAM, 0)
    code_data = int(size[0]) + int(size[1]) - program
    kernels = _kernel_ops()
    buckets: Dict[str, int] = defaultdict(int)
    per_kernel: Dict[str, int] = defaultdict(int)
    named_rodata = 0
    for nbytes, kind, name in _symbols(binary):
        # Zero-initialised memory is not code or data; nor is the embedded program's byte array.
        if kind == "b" or name.endswith("::kBytes"):
            continue
        bucket, op = _classify(name, kernels)
        buckets[bucket] += nbytes
        if kind == "r":
            named_rodata += nbytes
        if op:
            per_kernel[op] += nbytes
    # Unnamed read-only data is string literals, overwhelmingly log messages (EMBER_LOG_ENABLED=0 drops them).
    buckets["strings"] = max(0, sections.get(".rodata", 0) - named_rodata)
    buckets["dynamic linking"] = sum(v for k, v in sections.items() if _DYNAMIC.match(k))
    attributed = sum(v for k, v in buckets.items() if k != "rest")
    buckets["rest"] = max(0, code_data - attributed)
    return {
        "binary": binary,
        "stripped_bytes": stripped_bytes,
        "code_data_bytes": code_data,
        "program_bytes": program,
        "buckets": {b: buckets.get(b, 0) for b in BUCKETS},
        "kernels": dict(sorted(per_kernel.items())),
    }


def markdown(reports: Dict[str, dict]) -> str:
    # Firmware embeds its program: show those bytes apart, since they are the model, not the code.
    program = any(r.get("program_bytes") for r in reports.values())
    head = "| binary | stripped | code+data | " + ("program | " if program else "") + " | ".join(BUCKETS) + " |"
    lines = [head, "|" + "---|" * (3 + program + len(BUCKETS))]
    for name, r in reports.items():
        cells = [name, f"{r['stripped_bytes']:,}", f"{r['code_data_bytes']:,}"]
        cells += [f"{r['program_bytes']:,}"] if program else []
        cells += [f"{r['buckets'][b]:,}" for b in BUCKETS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def svg(reports: Dict[str, dict]) -> str:
    """One stacked bar per binary, segments by bucket; widths to a common scale."""
    width, bar_h, gap, left, top = 900, 26, 14, 190, 40
    biggest = max(r["code_data_bytes"] for r in reports.values()) or 1
    scale = (width - left - 120) / biggest
    height = top + len(reports) * (bar_h + gap) + 60
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        f'font-size="12">',
        '<text x="10" y="22" font-size="15">Runner code+data bytes by part (--config=size)</text>',
    ]
    for i, (name, r) in enumerate(reports.items()):
        y = top + i * (bar_h + gap)
        out.append(f'<text x="{left - 8}" y="{y + bar_h * 0.68}" text-anchor="end">{name}</text>')
        x = left
        for b in BUCKETS:
            w = r["buckets"][b] * scale
            if w > 0:
                out.append(
                    f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{COLORS[b]}">'
                    f'<title>{b}: {r["buckets"][b]:,} bytes</title></rect>'
                )
            x += w
        out.append(f'<text x="{x + 6:.1f}" y="{y + bar_h * 0.68}">{r["code_data_bytes"] / 1024:.1f} KiB</text>')
    y = top + len(reports) * (bar_h + gap) + 16
    x = left
    for b in BUCKETS:
        out.append(
            f'<rect x="{x}" y="{y}" width="12" height="12" fill="{COLORS[b]}"/>'
            f'<text x="{x + 16}" y="{y + 11}">{b}</text>'
        )
        x += 16 + 8 * len(b) + 18
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv=None, prog="python -m selective_build.size_report") -> int:
    ap = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("binaries", nargs="+", help="NAME=PATH of each binary")
    ap.add_argument("--json")
    ap.add_argument("--svg")
    ap.add_argument("--markdown")
    ap.add_argument("--tools-prefix", default="", help="binutils prefix for cross-built binaries")
    args = ap.parse_args(argv)
    global TOOLS
    TOOLS = args.tools_prefix
    reports = {}
    for spec in args.binaries:
        name, _, path = spec.partition("=")
        if not path or not os.path.exists(path):
            print(f"size_report: '{spec}' is not NAME=PATH of an existing binary", file=sys.stderr)
            return 2
        reports[name] = measure(path)
    table = markdown(reports)
    sys.stdout.write(table)
    for target, text in (
        (args.json, json.dumps(reports, indent=1)),
        (args.svg, svg(reports) if args.svg else ""),
        (args.markdown, table),
    ):
        if target:
            with open(target, "w") as f:
                f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
