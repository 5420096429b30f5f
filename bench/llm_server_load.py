"""llm_server under load (locust): many concurrent OpenAI clients against SmolLM-135M's shape (random weights,
8da4w), thousands of requests; time to first token p50/p99, whole-request latency, throughput, every stream
complete and well formed, and the server's resident memory before and after.

    .venv/bin/python3 -m bench.llm_server_load                        # 16 users, 180 s, 4 slots (several minutes)
    .venv/bin/python3 -m bench.llm_server_load --users 8 --seconds 30  # a quick look

The model is exported once into bench/.work/llm-server (config from bench/llm_model.py, the benchmark's synthetic
49,152-token tokenizer from bench/llm_tokenizer.py). Clients are examples/llm/server/locustfile.py's: 3 streamed
chats for each plain completion, --max-tokens new tokens each, seeded sampling. Results go to
bench/results/<date>-llm-server.{md,json}."""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import io
import json
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "runtime", "python")]

SERVER = os.path.join(ROOT, "bazel-bin", "examples", "llm", "server", "llm_server")
LOCUSTFILE = os.path.join(ROOT, "examples", "llm", "server", "locustfile.py")


def prepare(work: str, max_seq_len: int) -> tuple:
    """config.json, tokenizer.json and the 8da4w .pte (exported once, reused while its inputs are unchanged)."""
    from bench import llm_model, llm_tokenizer

    os.makedirs(work, exist_ok=True)
    config = dict(llm_model.CONFIGS["smollm-135m"])
    config_path = os.path.join(work, "config.json")
    with open(config_path, "w") as f:
        json.dump(config, f, indent=1)
    tokenizer = llm_tokenizer.write(os.path.join(work, "tokenizer.json"), config["vocab_size"])
    pte = os.path.join(work, f"smollm-135m-8da4w-{max_seq_len}.pte")
    if not os.path.exists(pte):
        from examples.llm import export

        argv = ["--model", config_path, "--max-seq-len", str(max_seq_len), "--quantize", "8da4w"]
        with contextlib.redirect_stdout(io.StringIO()):
            export.main(argv + ["--group-size", "32", "-o", pte])
    return pte, tokenizer


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS:")).split()[1])


def run_locust(url: str, users: int, seconds: int, max_tokens: int, prefix: str) -> dict:
    cmd = [sys.executable, "-m", "locust", "-f", LOCUSTFILE, "--headless", "-u", str(users), "-r", str(users)]
    cmd += ["-t", f"{seconds}s", "--host", url, "--csv", prefix, "--only-summary"]
    env = {**os.environ, "LLM_LOAD_MAX_TOKENS": str(max_tokens)}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 300, env=env)
    rows = {}
    with open(prefix + "_stats.csv") as f:
        for row in csv.DictReader(f):
            rows[f"{row['Type']} {row['Name']}".strip()] = row
    failures = []
    if os.path.exists(prefix + "_failures.csv"):
        with open(prefix + "_failures.csv") as f:
            failures = list(csv.DictReader(f))
    return {"rows": rows, "failures": failures, "returncode": r.returncode, "stderr_tail": r.stderr[-2000:]}


def summarize(rows: dict) -> list:
    out = []
    for name, row in rows.items():
        out.append(
            {
                "name": name,
                "requests": int(row["Request Count"]),
                "failures": int(row["Failure Count"]),
                "p50_ms": float(row["50%"]),
                "p90_ms": float(row["90%"]),
                "p99_ms": float(row["99%"]),
                "max_ms": float(row["Max Response Time"]),
                "per_s": float(row["Requests/s"]),
            }
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=16)
    ap.add_argument("--seconds", type=int, default=180)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--queue", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--max-seq-len", type=int, default=256)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    a = ap.parse_args(argv)

    subprocess.run(["bazel", "build", "//examples/llm/server:llm_server"], cwd=ROOT, check=True, capture_output=True)
    work = os.path.join(ROOT, "bench", ".work", "llm-server")
    pte, tokenizer = prepare(work, a.max_seq_len)
    cmd = [SERVER, "--model", pte, "--tokenizer", tokenizer, "--port", "0", "--slots", str(a.slots)]
    cmd += ["--queue", str(a.queue)]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = server.stdout.readline()
    m = re.search(r"listening on (http://[\d.]+:\d+) .*?(\d+) slots of (\d+) bytes, (\d+) KV bytes a session", started)
    if not m:
        sys.exit(f"llm_server did not start: {started!r}")
    url = m.group(1)
    try:
        run_locust(url, a.users, 10, a.max_tokens, os.path.join(work, "warm"))  # every slot and session touched
        before = rss_kb(server.pid)
        # Resident memory every 15 s through the run: a leak grows with the requests, a warm-up levels off.
        samples, stop = [], threading.Event()

        def sample():
            while not stop.wait(15.0):
                samples.append((round(time.time() - t0), rss_kb(server.pid)))

        t0 = time.time()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        load = run_locust(url, a.users, a.seconds, a.max_tokens, os.path.join(work, "load"))
        stop.set()
        sampler.join()
        wall = time.time() - t0
        after = rss_kb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=60)
    stats = summarize(load["rows"])
    total = next(s for s in stats if s["name"] == "Aggregated")
    http_requests = sum(s["requests"] for s in stats if s["name"].startswith("POST"))  # TTFT rows are not requests
    result = {
        "date": str(datetime.date.today()),
        "settings": vars(a),
        "load_average": os.getloadavg(),
        "slot_bytes": int(m.group(3)),
        "session_kv_bytes": int(m.group(4)),
        "rss_kb_before": before,
        "rss_kb_after": after,
        "rss_kb_samples": samples,
        "wall_s": wall,
        "http_requests": http_requests,
        "stats": stats,
        "failures": load["failures"],
    }
    os.makedirs(a.out, exist_ok=True)
    base = os.path.join(a.out, f"{result['date']}-llm-server")
    with open(base + ".json", "w") as f:
        json.dump(result, f, indent=1)
    lines = [
        f"# llm_server under load, {result['date']}",
        "",
        f"`python -m bench.llm_server_load --users {a.users} --seconds {a.seconds} --slots {a.slots}`: SmolLM-135M's "
        f"shape, random weights, 8da4w (group 32), max_seq_len {a.max_seq_len}; locust (examples/llm/server/locustfile.py)"
        f" with {a.users} users, 3 streamed chats per plain completion, {a.max_tokens} new tokens each, seeded sampling; "
        f"server with {a.slots} slots, queue {a.queue}, 1 thread per slot, on this 2-core machine (locust beside it). "
        f"Load average {', '.join(f'{x:.2f}' for x in result['load_average'])} at the end.",
        "",
        "| request | count | failures | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) | per second |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in stats:
        lines.append(
            f"| {s['name']} | {s['requests']:,} | {s['failures']} | {s['p50_ms']:.0f} | {s['p90_ms']:.0f} | "
            f"{s['p99_ms']:.0f} | {s['max_ms']:.0f} | {s['per_s']:.1f} |"
        )
    lines += [
        "",
        "`TTFT chat stream` is the time from sending a streamed chat request to its first content delta; `POST chat "
        "stream` ends when the response headers arrive; `POST completion` is a whole non-streamed answer. A failure "
        "is a non-200 answer, a stream that does not end with a finish reason and [DONE], or a body that does not "
        "parse.",
        "",
        f"Memory: {int(m.group(2))} slots of {result['slot_bytes']:,} bytes and {result['session_kv_bytes']:,} KV bytes "
        f"a session (MethodMeta, stated at startup); resident {before / 1024:.1f} MiB after a 10 s warm-up, "
        f"{after / 1024:.1f} MiB after {http_requests:,} more requests ({(after - before) / 1024:+.1f} MiB); "
        "every 15 s through the run (s: MiB): " + ", ".join(f"{t}: {kb / 1024:.1f}" for t, kb in samples) + ".",
    ]
    if load["failures"]:
        lines += ["", "Failures:", ""] + [
            f"- {f['Name']}: {f['Error']} ({f['Occurrences']}x)" for f in load["failures"]
        ]
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if total["failures"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
