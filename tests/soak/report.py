"""The soak tier's report (tools/soak.sh long): the driver's JSON lines, one per part and build, as a markdown
table of speed and of resident memory, descriptors and heap bytes (first sample, the warm-up's, peak, end, slope),
and the same data as one JSON file."""

import argparse
import json
import os
import platform
import subprocess

MIB = 1 << 20


def read_parts(path: str, build: str) -> list:
    with open(path) as f:
        return [dict(json.loads(line), build=build) for line in f if line.strip()]


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def cpu() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def mib(n: int) -> str:
    return f"{n / MIB:.2f}"


def speed_row(p: dict) -> str:
    verdict = "ok" if p["ok"] else f"FAILED: {p['error']}"
    if p.get("note"):
        verdict += f" ({p['note']})"
    return (
        f"| {p['build']} | {p['name']} | {p['steps']:,} | {p['seconds']:.1f} | {p['steps_per_s']:,.0f} | "
        f"{p['samples']} | {p['warmup_steps']:,} | {verdict} |"
    )


def resource_row(p: dict) -> str:
    rss, fds, heap = p["rss"], p["fds"], p["heap"]
    heap_cells = (
        "(ASan's heap: LeakSanitizer)"
        if p["sanitizer_heap"]
        else f"{heap['start']:,} / {heap['peak']:,} / {heap['end']:,} ({heap['slope_per_step']:.3g} B/step)"
    )
    return (
        f"| {p['build']} | {p['name']} | {mib(rss['first'])} | {mib(rss['start'])} / {mib(rss['peak'])} / "
        f"{mib(rss['end'])} | {rss['slope_per_step']:.3g} | {fds['start']} / {fds['peak']} / {fds['end']} | "
        f"{heap_cells} |"
    )


def markdown(parts: list, date: str) -> str:
    lines = [
        f"# Soak tier (tools/soak.sh long), {date}",
        "",
        f"Commit {commit()}, {cpu()}, {os.cpu_count()} CPUs shared with other builds (load average "
        f"{os.getloadavg()[0]:.1f} at the end). The zoo's MLP (784-256-256-10) through the C API and a tiny "
        "decoder (tests/soak/export_tiny_decoder.py: 2 layers, 64 wide, 320 tokens, a 64-token context) through "
        "examples/llm's sessions; tests/soak/README.md says what each part does and how the tolerances were chosen.",
        "Each part is sampled about 200 times; the warm-up is its first tenth, and every later sample is held to the "
        "warm-up's: descriptors +0, heap bytes in use +4 KiB, resident memory +1 MiB. Under ASan only descriptors "
        "are held (its quarantine keeps freed blocks by design) and LeakSanitizer checks the heap at exit.",
        "",
        "| build | part | steps | seconds | steps/s | samples | warm-up steps | verdict |",
        "|---|---|---|---|---|---|---|---|",
        *[speed_row(p) for p in parts],
        "",
        "Resident memory in MiB: the first sample, then the warm-up's / peak / end, and the least-squares slope after "
        "warm-up in bytes per step. Descriptors and heap bytes in use (glibc's mallinfo2): warm-up / peak / end.",
        "",
        "| build | part | RSS first | RSS warm-up / peak / end | RSS slope (B/step) | fds | heap bytes |",
        "|---|---|---|---|---|---|---|",
        *[resource_row(p) for p in parts],
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--default", required=True, help="the default build's JSON lines")
    parser.add_argument("--asan", help="the --config=asan build's JSON lines")
    parser.add_argument("--json", required=True)
    parser.add_argument("--md", required=True)
    args = parser.parse_args()
    parts = read_parts(args.default, "default")
    if args.asan:
        parts += read_parts(args.asan, "asan")
    date = os.path.basename(args.md).split("-soak")[0]
    with open(args.json, "w") as f:
        json.dump({"commit": commit(), "parts": parts}, f, indent=1)
        f.write("\n")
    with open(args.md, "w") as f:
        f.write(markdown(parts, date))


if __name__ == "__main__":
    main()
