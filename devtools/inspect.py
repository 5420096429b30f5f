"""Inspect a .pte: methods, inputs/outputs, operators, instructions, constants, memory plan and its efficiency.

    python -m devtools.inspect model.pte [--json] [--no-instructions]

The plan's lower bound is computed from the program alone (it works on ExecuTorch's files too): a planned
tensor is live from the first instruction that uses it to the last, inputs from the start, outputs to the end,
mutable buffers throughout; at each step the live bytes are the union of the live tensors' byte ranges (so
aliases count once), and the bound is the largest such union per pool.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from typing import Dict, List, Tuple

from exir.serialize import PteFormatError, deserialize_pte
from schema import program as S
from schema import scalar_types


def tensor_nbytes(t: S.Tensor) -> int:
    n = 1
    for s in t.sizes:
        n *= s
    info = scalar_types.by_number(int(t.scalar_type))
    return n * (info.size if info else 0)


def _describe(ev: S.EValue) -> str:
    v = ev.val
    if isinstance(v, S.Tensor):
        st = (
            S.ScalarType(v.scalar_type).name.lower()
            if int(v.scalar_type) in S.ScalarType._value2member_map_
            else str(int(v.scalar_type))
        )
        where = (
            "const"
            if v.data_buffer_idx and v.allocation_info is None
            else (f"pool{v.allocation_info.memory_id}@{v.allocation_info.offset}" if v.allocation_info else "unplanned")
        )
        return f"{st}{list(v.sizes)} {where}"
    if isinstance(v, S.Null):
        return "None"
    for cls, attr in ((S.Int, "int_val"), (S.Bool, "bool_val"), (S.Double, "double_val"), (S.String, "string_val")):
        if isinstance(v, cls):
            return repr(getattr(v, attr))
    return f"{type(v).__name__}{list(v.items)}"


def _union_length(ranges: List[Tuple[int, int]]) -> int:
    total, end = 0, -1
    for lo, hi in sorted(ranges):
        if hi <= end:
            continue
        total += hi - max(lo, end)
        end = hi
    return total


def value_steps(plan: S.ExecutionPlan) -> Tuple[Dict[int, int], Dict[int, int], int]:
    """(first, last, end): per planned tensor value, the first and last instruction that uses it (inputs from step
    0, outputs to `end`, the number of instructions), as the planner's lifetimes count them."""
    instrs = plan.chains[0].instructions if plan.chains else []
    end = len(instrs)
    first: Dict[int, int] = {}
    last: Dict[int, int] = {}

    def use(idx: int, step: int) -> None:
        if not 0 <= idx < len(plan.values):
            return
        v = plan.values[idx].val
        if isinstance(v, (S.TensorList, S.OptionalTensorList)):
            for i in v.items:
                use(i, step)
            return
        if isinstance(v, S.Tensor) and v.allocation_info is not None:
            first[idx] = min(first.get(idx, step), step)
            last[idx] = max(last.get(idx, step), step)

    for i in plan.inputs:
        use(i, 0)
    for step, ins in enumerate(instrs):
        a = ins.instr_args
        for idx in getattr(a, "args", []) or []:
            use(idx, step)
        for name in ("move_from", "move_to", "cond_value_index", "value_index"):
            if hasattr(a, name):
                use(getattr(a, name), step)
    for o in plan.outputs:
        use(o, end)
    return first, last, end


def plan_lower_bounds(plan: S.ExecutionPlan) -> Dict[int, int]:
    first, last, end = value_steps(plan)
    # A mutable buffer with an initial value holds it from before the first call to after the last.
    for idx, ev in enumerate(plan.values):
        t = ev.val
        if isinstance(t, S.Tensor) and t.allocation_info is not None and t.data_buffer_idx:
            first[idx], last[idx] = 0, end
    bounds: Dict[int, int] = defaultdict(int)
    for step in range(end + 1):
        live: Dict[int, List[Tuple[int, int]]] = defaultdict(list)
        for idx in first:
            if first[idx] <= step <= last[idx]:
                t = plan.values[idx].val
                off = t.allocation_info.offset
                live[t.allocation_info.memory_id].append((off, off + tensor_nbytes(t)))
        for mem_id, ranges in live.items():
            bounds[mem_id] = max(bounds[mem_id], _union_length(ranges))
    return dict(bounds)


def summarize(pte) -> dict:
    program = pte.program
    out = {
        "file_bytes": len(pte.data),
        "program_bytes": pte.program_bytes,
        "constant_bytes": pte.constant_bytes,
        "segments": [{"offset": s.offset, "size": s.size} for s in program.segments],
        "methods": [],
    }
    for plan in program.execution_plan:
        instrs = plan.chains[0].instructions if plan.chains else []
        ops = [f"{o.name}.{o.overload}" if o.overload else o.name for o in plan.operators]
        counts = Counter()
        listing = []
        for i, ins in enumerate(instrs):
            a = ins.instr_args
            if isinstance(a, S.KernelCall):
                name = ops[a.op_index] if 0 <= a.op_index < len(ops) else f"<bad operator {a.op_index}>"
                counts[name] += 1
                listing.append({"index": i, "kind": "kernel", "op": name, "args": list(a.args)})
            else:
                listing.append({"index": i, "kind": type(a).__name__, "fields": vars(a)})
        bounds = plan_lower_bounds(plan)
        pools = []
        for mem_id, size in enumerate(plan.non_const_buffer_sizes):
            if mem_id == 0:
                continue  # entry 0 stands for the constants
            lb = bounds.get(mem_id, 0)
            pools.append(
                {
                    "mem_id": mem_id,
                    "planned_bytes": size,
                    "lower_bound_bytes": lb,
                    "efficiency": 1.0 if size == 0 else lb / size,
                }
            )
        out["methods"].append(
            {
                "name": plan.name,
                "inputs": [{"value": i, "tensor": _describe(plan.values[i])} for i in plan.inputs],
                "outputs": [{"value": i, "tensor": _describe(plan.values[i])} for i in plan.outputs],
                "num_values": len(plan.values),
                "operators": dict(sorted(counts.items())),
                "instructions": listing,
                "pools": pools,
                "delegates": [d.id for d in plan.delegates],
            }
        )
    return out


def render(summary: dict, values_of, show_instructions: bool = True) -> str:
    lines = [
        f"file: {summary['file_bytes']} bytes (program {summary['program_bytes']}, constants "
        f"{summary['constant_bytes']}, {len(summary['segments'])} segment(s))"
    ]
    for m in summary["methods"]:
        lines.append(f"\nmethod '{m['name']}': {len(m['instructions'])} instructions, {m['num_values']} values")
        for kind in ("inputs", "outputs"):
            for io in m[kind]:
                lines.append(f"  {kind[:-1]:6s} v{io['value']}: {io['tensor']}")
        lines.append("  operators:")
        for op, n in m["operators"].items():
            lines.append(f"    {n:4d} x {op}")
        lines.append("  memory plan:")
        for p in m["pools"]:
            lines.append(
                f"    pool {p['mem_id']}: {p['planned_bytes']} bytes planned, lower bound "
                f"{p['lower_bound_bytes']} ({100 * p['efficiency']:.1f}% efficient)"
            )
        if show_instructions:
            lines.append("  instructions:")
            for ins in m["instructions"]:
                if ins["kind"] == "kernel":
                    args = ", ".join(f"v{a}" for a in ins["args"])
                    lines.append(f"    [{ins['index']:3d}] {ins['op']}({args})")
                else:
                    lines.append(f"    [{ins['index']:3d}] {ins['kind']} {ins['fields']}")
    return "\n".join(lines)


def main(argv=None, prog="python -m devtools.inspect") -> int:
    ap = argparse.ArgumentParser(prog=prog, description="Inspect a .pte program.")
    ap.add_argument("pte")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("--no-instructions", action="store_true", help="omit the instruction list")
    args = ap.parse_args(argv)
    try:
        with open(args.pte, "rb") as f:
            data = f.read()
        pte = deserialize_pte(data)
        summary = summarize(pte)
    except OSError as e:
        print(f"devtools.inspect: cannot read {args.pte}: {e.strerror}", file=sys.stderr)
        return 2
    except PteFormatError as e:
        print(f"devtools.inspect: {args.pte} is not a valid .pte: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(render(summary, None, not args.no_instructions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
