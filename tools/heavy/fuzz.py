"""Fuzz campaigns (tests/fuzz's libFuzzer targets) in chunks: each target's executions split into parts, each part
one Ray task fuzzing a scratch copy of the target's committed corpus with its own seed; the parts merged into one
row per target of the table `tools/fuzz.sh long` writes (tools/fuzz_results.py formats both): executions and
seconds summed, coverage, features and corpus the largest part's, FAILED when any part failed (a crash, leak,
timeout or out-of-memory: its input is kept in the results directory's findings/).

The binaries are built once, by the driver, before any task (`tools/fuzz.sh bin`: the same builds and flags as
`tools/fuzz.sh long`); the plan records each one's path and SHA-256, and a task refuses a binary that differs (on a
cluster, every machine's checkout at the run's commit with the fuzz binaries built)."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Dict, List

from tools import fuzz_results
from tools.heavy import chunks
from tools.heavy.commit import ROOT, identity

FUZZ_SH = os.path.join(ROOT, "tools", "fuzz.sh")


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fuzz_sh(*args: str) -> str:
    r = subprocess.run([FUZZ_SH, *args], cwd=ROOT, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"tools/fuzz.sh {' '.join(args)} failed:\n{r.stdout[-2000:]}{r.stderr[-3000:]}")
    return r.stdout


def all_targets() -> List[str]:
    return fuzz_sh("targets").split()


def build(targets: List[str]) -> Dict[str, dict]:
    """Builds the targets' binaries (bazel, as fuzz.sh long does) and returns {target: {path, sha256}}, the path
    relative to the checkout (through its bazel-out link) when it can be: another checkout at the same commit, or
    another machine's, then finds its own copy, which must have the same hash."""
    bins = {}
    for line in fuzz_sh("bin", *targets).splitlines():
        t, path = line.split(" ", 1)
        if "/bazel-out/" in path:
            rel = "bazel-out/" + path.split("/bazel-out/", 1)[1]
            if os.path.exists(os.path.join(ROOT, rel)) and os.path.samefile(os.path.join(ROOT, rel), path):
                path = rel
        bins[t] = {"path": path, "sha256": sha256(os.path.join(ROOT, path))}
    return bins


def _die_with_parent() -> None:
    """In the fuzzer's process before exec: killed when its task's worker dies (a run stopped part-way leaves no
    fuzzer behind; Ray kills workers, not their children)."""
    import ctypes
    import signal

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def plan(targets: List[str], runs: int, chunk_runs: int, seed: int, bins: Dict[str, dict]) -> dict:
    """Each target's `runs` executions as parts of at most `chunk_runs`, targets in the order given (name the
    slowest first: the fast ones' parts then fill the last minutes); part k of the whole list fuzzes with seed
    `seed + k`."""
    parts = []
    for t in targets:
        n = math.ceil(runs / chunk_runs)
        parts += [{"target": t, "part": k, "runs": min(chunk_runs, runs - k * chunk_runs)} for k in range(n)]
    for k, p in enumerate(parts):
        p["seed"] = seed + k
    return {
        "tier": "fuzz",
        "args": {
            "targets": targets,
            "runs": runs,
            "chunk_runs": chunk_runs,
            "seed": seed,
            "flags": {t: fuzz_sh("flags", t).split() for t in targets},
            "bins": bins,
        },
        "identity": identity(),
        "started": time.time(),
        "chunks": parts,
    }


def corpus_of(target: str) -> str:
    return os.path.join(ROOT, "tests", "fuzz", "corpus", target[: -len("_fuzz")])


def run_chunk(chunk: dict, args: dict) -> dict:
    """One part: the target's binary for chunk["runs"] executions with chunk["seed"] on a scratch copy of its
    committed corpus. Returns the log's numbers, and any input libFuzzer wrote (a crash's, a leak's, ...)."""
    t = chunk["target"]
    b = args["bins"][t]
    binary = os.path.join(ROOT, b["path"])
    if not os.path.exists(binary) or sha256(binary) != b["sha256"]:
        raise RuntimeError(
            f"{socket.gethostname()}: {binary} is missing or not the binary the run was planned with: build the "
            "fuzz binaries (tools/fuzz.sh bin) in a checkout at the run's commit"
        )
    work = tempfile.mkdtemp(prefix=f"heavy-{t}-")
    try:
        corpus, found = os.path.join(work, "corpus"), os.path.join(work, "found")
        shutil.copytree(corpus_of(t), corpus)
        os.mkdir(found)
        cmd = [binary, *args["flags"][t], f"-runs={chunk['runs']}", f"-seed={chunk['seed']}"]
        cmd += [f"-artifact_prefix={found}/", corpus]
        start = time.time()
        with open(os.path.join(work, "log"), "w") as log:
            status = subprocess.run(
                cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
            ).returncode
        seconds = time.time() - start
        with open(os.path.join(work, "log"), errors="replace") as f:
            text = f.read()
        numbers = fuzz_results.parse_log(text)
        artifacts = {}
        for name in sorted(os.listdir(found)):
            with open(os.path.join(found, name), "rb") as f:
                artifacts[name] = base64.b64encode(f.read()).decode()
        return {
            "identity": identity(),
            "host": socket.gethostname(),
            **chunk,
            "result": "ok" if status == 0 else "FAILED",
            "status": status,
            "seconds": seconds,
            "count": numbers["executions"] or 0,
            **numbers,
            "artifacts": artifacts,
            # A failure's report (the sanitizer's stack, libFuzzer's summary); a clean run's last status lines.
            "log_tail": "\n".join(text.splitlines()[-80 if status else -4 :]),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def merge(results: str, p: dict, out_path: str, command: str, partial: bool = False) -> int:
    """The parts merged into fuzz-results' table, one row per target; 2 when parts are missing (with `partial`,
    the table of the targets whose parts are all done, the others named as not done), 1 on a finding."""
    have = chunks.done(results, p)
    missing = {p["chunks"][i]["target"] for i in range(len(p["chunks"])) if i not in set(have)}
    if missing and not partial:
        print(f"{len(p['chunks']) - len(have)} of {len(p['chunks'])} chunks not done: run the same command again")
        return 2
    by_target: Dict[str, List[dict]] = {t: [] for t in p["args"]["targets"]}
    hosts, findings = set(), []
    for i in have:
        with open(chunks.chunk_path(results, i)) as f:
            r = json.load(f)
        chunks.check_identity(p, r, i)
        by_target[r["target"]].append(r)
        hosts.add(r["host"])
        for name, data in r["artifacts"].items():
            os.makedirs(os.path.join(results, "findings"), exist_ok=True)
            path = os.path.join(results, "findings", f"{r['target']}-part{r['part']}-{name}")
            with open(path, "wb") as f:
                f.write(base64.b64decode(data))
            findings.append(path)
        if r["result"] != "ok":
            with open(os.path.join(results, f"{r['target']}-part{r['part']}.log"), "w") as f:
                f.write(r["log_tail"] + "\n")
    a = p["args"]
    commit = p["identity"]["commit"][:7]
    how = (
        f"on Ray: {len(p['chunks'])} parts of at most {a['chunk_runs']} executions, one CPU each, "
        f"on {len(hosts)} machine(s)"
    )
    text = fuzz_results.header(a["runs"], commit, how, p["started"])
    text += "".join(fuzz_results.merged_row(t, by_target[t]) + "\n" for t in a["targets"] if t not in missing)
    text += (
        f"\nCommand: `{command}`. Each part fuzzes a scratch copy of the committed corpus with its own seed "
        f"(seeds {a['seed']} to {a['seed'] + len(p['chunks']) - 1}); seconds are the parts' summed time on one CPU "
        "each, coverage, features and corpus the largest part's."
    )
    text += (f" Inputs libFuzzer kept: {', '.join(findings)}.") if findings else ""
    if missing:
        counts = {t: sum(1 for c in p["chunks"] if c["target"] == t) for t in missing}
        done_parts = {t: len(by_target[t]) for t in missing}
        text += " Not done yet (resumable): " + ", ".join(
            f"{t} ({done_parts[t]} of {counts[t]} parts)" for t in a["targets"] if t in missing
        )
        text += "."
    text += "\n"
    if out_path == "-":
        print(text, end="")
    else:
        os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
        with open(out_path, "w") as f:
            f.write(text)
        print(f"fuzz: results in {out_path}")
    failed = [t for t in a["targets"] if any(r["result"] != "ok" for r in by_target[t])]
    if failed:
        print(f"fuzz: findings in {', '.join(failed)}: see {results}/findings and {results}/*.log")
    return 1 if failed else (2 if missing else 0)


def main(a) -> int:
    targets = a.targets or all_targets()
    unknown = sorted(set(targets) - set(all_targets()))
    if unknown:
        raise SystemExit(f"unknown fuzz targets: {', '.join(unknown)} (tools/fuzz.sh targets lists them)")
    ident = identity()
    seed = a.seed if a.seed is not None else int(ident["commit"][:6], 16)
    p = chunks.open_plan(a.results, plan(targets, a.runs, a.chunk_runs, seed, build(targets)))
    failed = 0 if a.merge_only else chunks.run(a.results, p, run_chunk, a.address, a.cpus)
    if failed:
        print(f"{failed} chunks failed (chunk-NNNN.error.txt in {a.results}); run the same command again")
        return 2
    out = a.out or os.path.join(
        ROOT, "fuzz-results", f"{time.strftime('%Y-%m-%d', time.gmtime(p['started']))}-{p['identity']['commit'][:7]}.md"
    )
    command = (
        f"python -m tools.heavy fuzz --runs {a.runs} --chunk-runs {a.chunk_runs}"
        + (f" --cpus {a.cpus}" if a.cpus else "")
        + f" --results DIR {' '.join(targets)}"
    )
    return merge(a.results, p, out, command, partial=a.merge_only)
