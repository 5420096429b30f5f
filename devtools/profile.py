"""Where a program's time goes, from a runtime trace: p10/p50/p90/mean per operator and per source module, plus
two pictures (SVG, drawn here without plotting libraries): a timeline of one run and the memory plan as tensor
lifetimes over addresses, per pool.

    python -m devtools.profile model.pte trace.etdp [--method forward] [--etrecord model.etrecord.json] [--no-svg]
                                                [--top 15] [--cycles-per-us N]

The trace is an ETDump (runner --profile, ember.runtime run(profile=True), or ExecuTorch's runtime), or a raw trace
from a microcontroller (the Cortex-M55 runner's --profile, devtools/raw_trace.py). Statistics are over runs: an
operator's time in a run is the sum over its instructions. The module table needs the source map exir writes
beside the .pte (prog.save(path, etrecord=True)); without it only the operator table is printed. A trace with
allocation events (runner --profile-memory, run(profile=True, profile_memory=True)) adds a line of bytes per
allocator (a raw trace always has them). Times are ns from the platform's clock (ember_pal_ticks_ns), shown in us,
or in thousands of cycles with --cycles-per-us (a raw trace defaults to 1000: under QEMU's -icount shift=0 each
instruction is one virtual nanosecond; a board at 32 MHz is 32).
"""

from __future__ import annotations

import argparse
import html
import os
import sys
from collections import defaultdict
from typing import Dict, List, Optional, Sequence, Tuple

from devtools import etdump, etrecord, raw_trace
from devtools.inspect import tensor_nbytes, value_steps
from exir.serialize import deserialize_pte
from schema import program as S


def percentile(sorted_values: Sequence[float], q: int) -> float:
    """Nearest rank (as the runner's): the smallest value that at least q% of the values do not exceed."""
    n = len(sorted_values)
    return sorted_values[max(0, (n * q + 99) // 100 - 1)]


def _stats(per_run: List[float]) -> Dict[str, float]:
    v = sorted(per_run)
    return {"p10": percentile(v, 10), "p50": percentile(v, 50), "p90": percentile(v, 90), "mean": sum(v) / len(v)}


def _plan(program: S.Program, method: str) -> S.ExecutionPlan:
    for p in program.execution_plan:
        if p.name == method:
            return p
    raise ValueError(
        f"no method '{method}' (it has {', '.join(p.name for p in program.execution_plan)}); pass --method"
    )


def tables(runs: List[etdump.Run], rows: Optional[List[dict]]) -> Tuple[List[tuple], List[tuple], float]:
    """(operator rows, module rows, mean run time): each row (name, count per run, p10, p50, p90, mean, share)."""
    by_op: Dict[str, List[float]] = defaultdict(lambda: [0.0] * len(runs))
    by_module: Dict[str, List[float]] = defaultdict(lambda: [0.0] * len(runs))
    counts: Dict[str, int] = defaultdict(int)
    mcounts: Dict[str, int] = defaultdict(int)
    run_totals = []
    for r, run in enumerate(runs):
        whole = [e for e in run.events if e.instruction < 0 and e.name == "Method::execute"]
        instr = [e for e in run.events if e.instruction >= 0]
        run_totals.append(whole[0].duration if whole else sum(e.duration for e in instr))
        for e in instr:
            by_op[e.name][r] += e.duration
            if r == 0:
                counts[e.name] += 1
            if rows is not None:
                module = (rows[e.instruction]["module"] or "(top)") if e.instruction < len(rows) else "(unknown)"
                by_module[module][r] += e.duration
                if r == 0:
                    mcounts[module] += 1
    mean_run = sum(run_totals) / len(run_totals)

    def rows_of(table, cnt):
        out = []
        for name, per_run in table.items():
            s = _stats(per_run)
            out.append(
                (
                    name,
                    cnt.get(name, 0),
                    s["p10"],
                    s["p50"],
                    s["p90"],
                    s["mean"],
                    100.0 * s["mean"] / mean_run if mean_run else 0.0,
                )
            )
        # By median: on a shared machine a preempted run inflates the mean, not the median.
        return sorted(out, key=lambda t: (-t[3], -t[5]))

    return rows_of(by_op, counts), rows_of(by_module, mcounts), mean_run


def render_table(title: str, rows: List[tuple], unit: str = "us", top: int = 0, scale: float = 1000.0) -> str:
    """A Markdown table; with `top`, the first `top` rows and one line for the rest. Times are ns divided by
    `scale` to make `unit`."""
    rest = rows[top:] if top else []
    rows = rows[:top] if top else rows
    head = f"| {title} | calls/run | p10 ({unit}) | p50 ({unit}) | p90 ({unit}) | mean ({unit}) | share |"
    lines = [head, "|" + "---|" * 7]
    for name, n, p10, p50, p90, mean, share in rows:
        lines.append(
            f"| {name} | {n} | {p10 / scale:.1f} | {p50 / scale:.1f} | {p90 / scale:.1f} | "
            f"{mean / scale:.1f} | {share:.1f}% |"
        )
    if rest:
        lines.append(
            f"| ({len(rest)} more) | {sum(r[1] for r in rest)} | | | | {sum(r[5] for r in rest) / scale:.1f} | "
            f"{sum(r[6] for r in rest):.1f}% |"
        )
    return "\n".join(lines)


def _color(name: str) -> str:
    h = 0
    for ch in name:
        h = (h * 131 + ord(ch)) % 360
    return f"hsl({h},55%,55%)"


def timeline_svg(
    run: etdump.Run, rows: Optional[List[dict]], width: int = 1000, unit: str = "us", scale: float = 1000.0
) -> str:
    """One run: a lane per operator, a bar per instruction from its start to its end (ns / scale in `unit`)."""
    instr = [e for e in run.events if e.instruction >= 0]
    if not instr:
        return ""
    t0 = min(e.start for e in instr)
    t1 = max(e.end for e in instr)
    span = max(1, t1 - t0)
    lanes: List[str] = []
    for e in instr:
        if e.name not in lanes:
            lanes.append(e.name)
    left, lane_h, top = 260, 18, 30
    height = top + lane_h * len(lanes) + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{height}" '
        f'font-family="monospace" font-size="11">',
        f'<text x="4" y="16">timeline of one run: {span / scale:.1f} {unit} from first to last instruction</text>',
    ]
    for i, name in enumerate(lanes):
        out.append(f'<text x="4" y="{top + i * lane_h + 13}">{html.escape(name[:38])}</text>')
    for e in instr:
        x = left + width * (e.start - t0) / span
        w = max(0.5, width * e.duration / span)
        y = top + lanes.index(e.name) * lane_h + 2
        where = ""
        if rows is not None and e.instruction < len(rows):
            where = f" {rows[e.instruction]['module']} {rows[e.instruction]['source']}"
        out.append(
            f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{lane_h - 4}" fill="{_color(e.name)}">'
            f'<title>#{e.instruction} {html.escape(e.name)}: {e.duration / scale:.2f} {unit}'
            f'{html.escape(where)}</title></rect>'
        )
    axis_y = top + lane_h * len(lanes) + 14
    for k in range(6):
        x = left + width * k / 5
        out.append(f'<text x="{x:.0f}" y="{axis_y}">{span * k / 5 / scale:.0f} {unit}</text>')
    out.append("</svg>")
    return "\n".join(out)


def lifetimes(plan: S.ExecutionPlan) -> List[Tuple[int, int, int, int, int, int]]:
    """(pool, offset, nbytes, first step, last step, value index) per planned tensor: live from the first
    instruction that uses it to the last (inputs from the start, outputs to the end), as devtools.inspect counts."""
    first, last, _ = value_steps(plan)
    out = []
    for idx in first:
        t = plan.values[idx].val
        out.append(
            (t.allocation_info.memory_id, t.allocation_info.offset, tensor_nbytes(t), first[idx], last[idx], idx)
        )
    return out


def memory_svg(plan: S.ExecutionPlan, width: int = 1000, pool_h: int = 260) -> str:
    """Per pool: instructions across, byte addresses down, a rectangle per tensor over its lifetime."""
    spans = lifetimes(plan)
    if not spans:
        return ""
    steps = max(1, len(plan.chains[0].instructions) if plan.chains else 1)
    pools = sorted({s[0] for s in spans})
    left, top = 80, 30
    height = top + len(pools) * (pool_h + 40)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{height}" '
        f'font-family="monospace" font-size="11">',
        f'<text x="4" y="16">memory plan of \'{html.escape(plan.name)}\': tensor lifetimes (instructions, '
        f'across) over addresses (down), per pool</text>',
    ]
    for k, pool in enumerate(pools):
        mine = [s for s in spans if s[0] == pool]
        size = max(1, max(o + n for _, o, n, _, _, _ in mine))
        y0 = top + k * (pool_h + 40)
        out.append(f'<text x="4" y="{y0 + 12}">pool {pool}</text>')
        out.append(f'<text x="4" y="{y0 + 26}">{size} B</text>')
        out.append(f'<rect x="{left}" y="{y0}" width="{width}" height="{pool_h}" fill="none" stroke="#888"/>')
        for _, off, n, a, b, idx in mine:
            x = left + width * a / (steps + 1)
            w = max(1.0, width * (b - a + 1) / (steps + 1))
            y = y0 + pool_h * off / size
            h = max(0.5, pool_h * n / size)
            out.append(
                f'<rect x="{x:.2f}" y="{y:.2f}" width="{w:.2f}" height="{h:.2f}" fill="{_color(str(idx))}" '
                f'fill-opacity="0.75" stroke="#333" stroke-width="0.3"><title>value {idx}: {n} B at {off}, '
                f'instructions {a}..{b}</title></rect>'
            )
    out.append("</svg>")
    return "\n".join(out)


def memory_line(runs: List[etdump.Run]) -> str:
    """What the runs' allocation events say each run used, per allocator ("" when the trace has none: a host
    runner's --profile without --profile-memory)."""
    seen = [r.allocations for r in runs if r.allocations]
    if not seen:
        return ""
    first = seen[0]
    parts = ", ".join(f"{a.allocator} {a.bytes:,} B" for a in first)
    same = all(s == first for s in seen)
    return f"memory per run (allocation events): {parts}; {sum(a.bytes for a in first):,} B in all" + (
        "" if same else " (first run; later runs differ)"
    )


def main(argv=None, prog="python -m devtools.profile") -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    ap.add_argument("pte")
    ap.add_argument("trace", help="an ETDump (.etdp), or a device's raw trace (.emtr)")
    ap.add_argument("--method", default=None, help="default: the trace's run name, else forward")
    ap.add_argument("--etrecord", default=None, help="the source map (default: MODEL.etrecord.json beside the .pte)")
    ap.add_argument("--no-svg", action="store_true", help="print the tables only")
    ap.add_argument("--top", type=int, default=15, help="rows per table, the rest summed in one (0: all)")
    ap.add_argument(
        "--cycles-per-us",
        type=float,
        default=None,
        help="show thousands of cycles at this clock (default for a raw trace: 1000, QEMU's -icount "
        "shift=0 counting one per instruction)",
    )
    args = ap.parse_args(argv)
    try:
        with open(args.pte, "rb") as f:
            program = deserialize_pte(f.read()).program  # once: a raw trace's names and the plan both need it
    except (OSError, ValueError) as e:  # PteFormatError is a ValueError
        print(f"devtools.profile: {args.pte}: {e}", file=sys.stderr)
        return 2
    try:
        with open(args.trace, "rb") as f:
            data = f.read()
        raw = raw_trace.is_raw_trace(data)
        runs = raw_trace.parse(data, program) if raw else etdump.parse(data)
    except (OSError, ValueError) as e:  # EtdumpError is a ValueError
        print(f"devtools.profile: {args.trace}: {e}", file=sys.stderr)
        return 2
    cycles_per_us = args.cycles_per_us if args.cycles_per_us is not None else (1000.0 if raw else None)
    if cycles_per_us is not None and cycles_per_us <= 0:
        print("devtools.profile: --cycles-per-us must be positive", file=sys.stderr)
        return 2
    # ns / scale = the unit shown: us, or thousands of cycles.
    unit, scale = ("k cycles", 1e6 / cycles_per_us) if cycles_per_us else ("us", 1000.0)
    runs = [r for r in runs if any(e.instruction >= 0 for e in r.events)]
    if not runs:
        print(
            f"devtools.profile: {args.trace} has no instruction events (was the runtime built with "
            f"--config=profiling?)",
            file=sys.stderr,
        )
        return 2
    method = args.method or runs[0].name.split(" (")[0] or "forward"
    try:
        plan = _plan(program, method)
    except ValueError as e:
        print(f"devtools.profile: {args.pte}: {e}", file=sys.stderr)
        return 2
    n_instr = len(plan.chains[0].instructions) if plan.chains else 0
    bad = [e.instruction for r in runs for e in r.events if e.instruction >= n_instr]
    if bad:
        print(
            f"devtools.profile: the trace names instruction {max(bad)}, but method '{method}' of {args.pte} has "
            f"{n_instr}: is this the trace of another program?",
            file=sys.stderr,
        )
        return 2
    rows = None
    sidecar = args.etrecord or etrecord.sidecar_path(args.pte)
    if os.path.exists(sidecar):
        try:
            rows = etrecord.read(sidecar)["methods"].get(method)
        except ValueError as e:
            print(f"devtools.profile: {e}", file=sys.stderr)
            return 2
        if rows is not None and len(rows) != n_instr:
            print(
                f"devtools.profile: {sidecar} maps {len(rows)} instructions, the program has {n_instr}: export the "
                f"two together (prog.save(path, etrecord=True))",
                file=sys.stderr,
            )
            return 2
    ops, modules, mean_run = tables(runs, rows)
    print(
        f"{args.pte}, method '{method}': {len(runs)} run(s), mean {mean_run / scale:.1f} {unit}, {n_instr} "
        f"instructions" + (f" ({cycles_per_us:g} cycles per us)" if cycles_per_us else "")
    )
    if any(r.truncated for r in runs):
        print(
            f"warning: {[r.name for r in runs if r.truncated][-1]}: the trace buffer filled; statistics cover a "
            f"prefix of the run(s)"
        )
    memory = memory_line(runs)
    if memory:
        print(memory)
    print()
    print(render_table("operator", ops, unit=unit, top=args.top, scale=scale))
    print()
    if rows is None:
        print(f"(no source map at {sidecar}: export with prog.save(path, etrecord=True) for the per-module table)")
    else:
        print(render_table("module", modules, unit=unit, top=args.top, scale=scale))
    if not args.no_svg:
        base = os.path.splitext(args.trace)[0]
        written = []
        for suffix, svg in (
            (".timeline.svg", timeline_svg(runs[0], rows, unit=unit, scale=scale)),
            (".memory.svg", memory_svg(plan)),
        ):
            if svg:
                with open(base + suffix, "w") as f:
                    f.write(svg)
                written.append(base + suffix)
        if written:
            print()
            print("pictures: " + ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
