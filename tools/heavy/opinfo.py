"""The OpInfo sweep (tests/opinfo/sweep.py) in chunks: its units, an OpInfo at one dtype, in scope order, so many
to a chunk; a chunk runs through the sweep's own driver and worker process (a runtime crash costs the batch in
flight); the merged chunks go through the sweep's own report (sweep.finish), as a serial run's do."""

from __future__ import annotations

import io
import json
import socket
import time
from typing import List

from tools.heavy import chunks
from tools.heavy.commit import describe, identity


def units(names: List[str]) -> List[str]:
    """`name dtype` for each OpInfo and each Ember dtype it lists for CPU (scope order, then samples.DTYPES
    order); an OpInfo with none (only complex ones) is one `name` unit, which records them as refused."""
    from tests.opinfo.samples import DTYPE_NAMES, by_name, cpu_dtypes

    db, out = by_name(), []
    for name in names:
        dtypes, _ = cpu_dtypes(db[name])
        out += [f"{name} {DTYPE_NAMES[d]}" for d in dtypes] or [name]
    return out


def scope_names(ops: str = "") -> List[str]:
    from tests.opinfo.samples import full_name, op_db
    from tests.opinfo.scope import in_scope

    return ops.split(",") if ops else [full_name(op) for op in in_scope(op_db())]


def plan(names: List[str], max_samples: int, batch: int, per_chunk: int) -> dict:
    us = units(names)
    return {
        "tier": "opinfo",
        "args": {"names": names, "max_samples": max_samples, "batch": batch, "per_chunk": per_chunk},
        "identity": identity(),
        "chunks": [us[i : i + per_chunk] for i in range(0, len(us), per_chunk)],
    }


def run_chunk(chunk: List[str], args: dict) -> dict:
    """One chunk's units through the sweep's driver (its own worker process); what a chunk file holds."""
    from tests.opinfo.sweep import sweep

    t = time.time()
    outcomes, info = sweep(chunk, args["max_samples"], args["batch"], log=io.StringIO())
    return {
        "identity": identity(),
        "host": socket.gethostname(),
        "units": chunk,
        "outcomes": outcomes,
        "info": dict(info),
        "seconds": time.time() - t,
        "count": len(outcomes),
    }


def merge(results: str, p: dict, out, ci_list, json_path, command: str) -> int:
    """The chunks' outcomes as one run's, reported by sweep.finish; 2 when chunks are missing."""
    from tests.opinfo.sweep import Run, finish, merge_info, new_info

    have = chunks.done(results, p)
    if len(have) < len(p["chunks"]):
        print(f"{len(p['chunks']) - len(have)} of {len(p['chunks'])} chunks not done: run the same command again")
        return 2
    outcomes, info, seconds, hosts = [], new_info(), 0.0, set()
    for i in have:
        with open(chunks.chunk_path(results, i)) as f:
            r = json.load(f)
        chunks.check_identity(p, r, i)
        outcomes += r["outcomes"]
        for name, msg in r["info"].items():
            merge_info(info, name, msg)
        seconds += r["seconds"]
        hosts.add(r["host"])
    names, max_samples = p["args"]["names"], p["args"]["max_samples"]
    if json_path:
        chunks.write_json(
            json_path,
            {"names": names, "outcomes": outcomes, "info": info, "seconds": seconds, "max_samples": max_samples},
        )
    how = (
        f"Run on Ray (tools/heavy) in {len(p['chunks'])} chunks of {p['args']['per_chunk']} (OpInfo, dtype) "
        f"units, one CPU each, on {len(hosts)} machine(s): {seconds / 3600:.1f} CPU-hours of chunk time."
    )
    run = Run(command=command, commit=describe(p["identity"]), how=how)
    return finish(outcomes, info, names, max_samples, seconds, out, ci_list, run=run)


def main(a) -> int:
    max_samples = 0 if a.full else (a.max_samples if a.max_samples is not None else 4)
    p = chunks.open_plan(a.results, plan(scope_names(a.ops), max_samples, a.batch, a.per_chunk))
    failed = chunks.run(a.results, p, run_chunk, a.address, a.cpus)
    if failed:
        print(f"{failed} chunks failed (chunk-NNNN.error.txt in {a.results}); run the same command again")
        return 2
    command = (
        "python -m tools.heavy opinfo "
        + ("--full" if not max_samples else f"--max-samples {max_samples}")
        + " --results DIR --out tests/opinfo/RESULTS.md"
    )
    return merge(a.results, p, a.out, a.ci_list, a.json, command)
