"""The public model zoo (zoo/public) in chunks: each model one Ray task, checked by zoo/public/check.py as the
serial `python -m zoo.public.status` checks it (export, both builds, parity with eager); the merged results go
through status.py's own report (its table, and its file with --out), as a serial run's do.

The driver builds the two Python extensions once (status.build_extensions) before any task; a task runs on its
machine's checkout, at the run's commit."""

from __future__ import annotations

import dataclasses
import gc
import json
import socket
import subprocess
import time
from typing import List

from tools.heavy import chunks
from tools.heavy.commit import ROOT, identity


def plan(names: List[str], size: str, per_chunk: int) -> dict:
    return {
        "tier": "zoo",
        "args": {"names": names, "size": size, "per_chunk": per_chunk},
        "identity": identity(),
        "chunks": [names[i : i + per_chunk] for i in range(0, len(names), per_chunk)],
    }


def run_chunk(chunk: List[str], args: dict) -> dict:
    """One chunk's models through check(); what a chunk file holds (status.py's --json records)."""
    from ember import runtime
    from zoo.public.check import check
    from zoo.public.models import MODELS, source_of

    t = time.time()
    results = []
    for name in chunk:
        r = check(MODELS[name], args["size"], runtime, source=source_of(MODELS[name]))
        results.append(dataclasses.asdict(r))
        gc.collect()
    return {
        "identity": identity(),
        "host": socket.gethostname(),
        "models": chunk,
        "results": results,
        "seconds": time.time() - t,
        "count": len(results),
    }


def merge(results_dir: str, p: dict, a, command: str) -> int:
    """The chunks' results in the zoo's order, written by status.py's report; 2 when chunks are missing."""
    from zoo.public import status
    from zoo.public.check import Result

    have = chunks.done(results_dir, p)
    if len(have) < len(p["chunks"]):
        print(f"{len(p['chunks']) - len(have)} of {len(p['chunks'])} chunks not done: run the same command again")
        return 2
    saved, seconds, hosts = {}, 0.0, set()
    for i in have:
        with open(chunks.chunk_path(results_dir, i)) as f:
            r = json.load(f)
        chunks.check_identity(p, r, i)
        for d in r["results"]:
            saved[d["name"]] = d
        seconds += r["seconds"]
        hosts.add(r["host"])
    records = [saved[n] for n in p["args"]["names"]]
    if a.json:
        chunks.write_json(a.json, records)
    written_by = (
        f"`{command}` on Ray (tools/heavy): {len(p['chunks'])} chunks of {p['args']['per_chunk']} model(s), "
        f"one CPU each, on {len(hosts)} machine(s), {seconds / 3600:.1f} CPU-hours of chunk time"
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", p["identity"]["commit"]], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return status._write(a, [Result(**d) for d in records], p["args"]["size"], written_by, commit)


def main(a) -> int:
    from zoo.public import status
    from zoo.public.models import MODELS

    unknown = [m for m in a.models if m not in MODELS]
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    # The zoo's order, whatever order they are named in: the report lists them so.
    names = [n for n in MODELS if n in a.models] if a.models else list(MODELS)
    p = chunks.open_plan(a.results, plan(names, a.size, a.per_chunk))
    if not status.build_extensions():
        return 1
    failed = chunks.run(a.results, p, run_chunk, a.address, a.cpus)
    if failed:
        print(f"{failed} chunks failed (chunk-NNNN.error.txt in {a.results}); run the same command again")
        return 2
    command = f"python -m tools.heavy zoo --size {a.size} --results DIR" + (f" --out {a.out}" if a.out else "")
    return merge(a.results, p, a, command)
