"""Reads the raw traces a device writes (*.emtr): the Cortex-M55 runner's `--profile FILE`
(platforms/bare_metal/runner.cc). A microcontroller has no heap for a flatbuffer builder, so it sends its
BufferEventTracer records as they lie in memory; the operator names come from the program, on the host.

Layout, little-endian: a 64-byte header (b"EMTR", u32 version 1, u32 record size 32, u32 record count, u64 events
dropped, u64 ticks per second of the records' clock, 32-byte NUL-padded method name), then the records
(runtime/devtools/buffer_event_tracer.h: u64 start, u64 end, u32 instruction, u32 operator index, u32 chain,
u8 kind, u8 run, 2 bytes of padding; an allocation record keeps its allocator in the operator index and its bytes
in start). The result is what devtools.etdump.parse gives for an ETDump: runs of profile events in nanoseconds, and
their allocations, so devtools.profile tabulates both alike.

    runs = devtools.raw_trace.read("trace.emtr", "model.pte")
    python -m devtools.raw_trace trace.emtr model.pte -o trace.etdp   # as an ETDump, for ExecuTorch's Inspector
                                                                  # (--memory: with allocation events)
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
from typing import List

from devtools.etdump import Allocation, EtdumpError, ProfileEvent, Run
from exir.serialize import deserialize_pte
from exir.serialize.flatc import FlatcError, encode
from schema import program as S
from schema._yaml import SCHEMA_DIR

ETDUMP_FBS = os.path.join(SCHEMA_DIR, "etdump.fbs")

MAGIC = b"EMTR"
_HEADER = struct.Struct("<4sIIIQQ32s")
_RECORD = struct.Struct("<QQIIIBB2x")
# runtime/devtools/event_tracer.h's TraceKind.
_KERNEL, _DELEGATE, _MOVE, _JUMP_FALSE, _FREE, _ALLOCATION, _RUN = 1, 2, 3, 4, 5, 6, 255
_NAMES = {
    _DELEGATE: "DELEGATE_CALL",
    _MOVE: "MoveCall",
    _JUMP_FALSE: "JumpFalseCall",
    _FREE: "FreeCall",
    _RUN: "Method::execute",
}
_NONE = 0xFFFFFFFF


def is_raw_trace(data: bytes) -> bool:
    return data[:4] == MAGIC


def parse(data: bytes, program: S.Program) -> List[Run]:
    """The runs of a raw trace, events named after the operators of `program` (deserialize_pte(...).program: the
    program the device ran)."""
    if len(data) < _HEADER.size or not is_raw_trace(data):
        raise EtdumpError("not a raw trace: no 'EMTR' header (the Cortex-M55 runner's --profile writes one)")
    magic, version, record_size, count, dropped, ticks_per_second, method = _HEADER.unpack_from(data, 0)
    if version != 1 or record_size != _RECORD.size:
        raise EtdumpError(
            f"raw trace version {version} with {record_size}-byte records; this reader knows version 1 "
            f"with {_RECORD.size}-byte ones"
        )
    if len(data) != _HEADER.size + count * record_size:
        raise EtdumpError(
            f"the header promises {count} records ({_HEADER.size + count * record_size} bytes in all), "
            f"the file has {len(data)} bytes"
        )
    if ticks_per_second == 0:
        raise EtdumpError("the header's clock rate is 0")
    method = method.split(b"\0", 1)[0].decode("utf-8", "replace") or "forward"
    plans = {p.name: p for p in program.execution_plan}
    if method not in plans:
        raise EtdumpError(
            f"the trace is of method '{method}', which the program does not have "
            f"({', '.join(plans)}): is it the trace of another program?"
        )
    operators = plans[method].operators
    to_ns = 1e9 / ticks_per_second

    def allocator(i: int) -> str:  # event_tracer.h's allocator numbers, named as etdump_writer.cc names them
        return {0: "method allocator", 1: "temp allocator"}.get(i, f"planned pool {i - 1}")

    def name(kind: int, op_index: int) -> str:
        if kind != _KERNEL:
            return _NAMES.get(kind, "instruction")
        if op_index >= len(operators):
            return f"operator #{op_index}"
        op = operators[op_index]
        return f"{op.name}.{op.overload}" if op.overload else op.name

    runs: List[Run] = []
    events: List[ProfileEvent] = []
    allocations: List[Allocation] = []
    # Records are in order; a run ends with its whole-run record, or with the buffer when that filled first.
    for i in range(count):
        start, end, instruction, op_index, chain, kind, _ = _RECORD.unpack_from(data, _HEADER.size + i * record_size)
        if kind == _ALLOCATION:
            allocations.append(Allocation(allocator(op_index), start))
            continue
        events.append(
            ProfileEvent(
                name=name(kind, op_index),
                chain=chain,
                instruction=-1 if instruction == _NONE else instruction,
                start=round(start * to_ns),
                end=round(end * to_ns),
            )
        )
        if kind == _RUN:
            runs.append(Run(name=method, events=events, allocations=allocations))
            events, allocations = [], []
    if events or allocations:
        runs.append(Run(name=method, events=events, allocations=allocations))
    if dropped and runs:
        runs[-1].name = f"{method} (truncated: {dropped} events dropped)"
    return runs


def read(path: str, pte_path: str) -> List[Run]:
    with open(path, "rb") as f, open(pte_path, "rb") as p:
        return parse(f.read(), deserialize_pte(p.read()).program)


def to_etdump(runs: List[Run], allocations: bool = False) -> bytes:
    """The runs as an ETDump file (size-prefixed "ED00", as the host runner writes it), encoded by flatc from
    schema/etdump.fbs. `allocations` adds each run's allocation events first, as the host runner's --profile-memory
    does (ExecuTorch 1.5.1's Inspector cannot read them)."""

    def run_data(r: Run) -> dict:
        d = {
            "name": r.name,
            "events": [
                {
                    "profile_event": {
                        "name": e.name,
                        "chain_index": e.chain,
                        "instruction_id": e.instruction,
                        "start_time": e.start,
                        "end_time": e.end,
                    }
                }
                for e in r.events
            ],
        }
        if allocations and r.allocations:
            names = list(dict.fromkeys(a.allocator for a in r.allocations))
            d["allocators"] = [{"name": n} for n in names]
            d["events"][:0] = [
                {"allocation_event": {"allocator_id": names.index(a.allocator), "allocation_size": a.bytes}}
                for a in r.allocations
            ]
        return d

    doc = {"version": 0, "run_data": [run_data(r) for r in runs]}
    return encode(json.dumps(doc), ETDUMP_FBS, "the ETDump", size_prefixed=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m devtools.raw_trace", description="A device's raw trace (.emtr) as an ETDump (.etdp)."
    )
    ap.add_argument("trace")
    ap.add_argument("pte", help="the program the device ran (its operator names)")
    ap.add_argument("-o", "--out", required=True, help="the ETDump to write")
    ap.add_argument(
        "--memory",
        action="store_true",
        help="add the runs' allocation events (ExecuTorch 1.5.1's Inspector cannot read them)",
    )
    args = ap.parse_args(argv)
    try:
        runs = read(args.trace, args.pte)
        data = to_etdump(runs, allocations=args.memory)
    except (OSError, ValueError, FlatcError) as e:
        print(f"devtools.raw_trace: {e}", file=sys.stderr)
        return 2
    with open(args.out, "wb") as f:
        f.write(data)
    print(f"{args.out}: {len(runs)} run(s), {sum(len(r.events) for r in runs)} events, {len(data)} bytes (ETDump)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
