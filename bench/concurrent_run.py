"""Program.run from several Python threads: wall time of R runs serially and on T threads (each call on a copy of
the method of its own, the GIL released during execute), and how many of the threads' outputs differ from the
serial ones (they must be 0: tests/runtime/test_concurrent_run.py checks it; this measures the speed).

    .venv/bin/python3 -m bench.concurrent_run                      # both models, 4 threads, 120 runs each
    .venv/bin/python3 -m bench.concurrent_run --threads 2,4 --runs 200 --out bench/results/concurrent.json

Models (seeded): "small_cnn", the reproduction of issue #37 (two convolutions and a linear layer on 3x32x32, well
under a millisecond a run, so Python's own work per call weighs), and "conv_net", the convolution stack of
tests/runtime/test_threads.py (16x30x30 in, tens of milliseconds a run), where execute dominates.
"""

import argparse
import json
import os
import platform
import sys
import threading
import time

import torch
from torch import nn
import torch.nn.functional as F

import exir
from ember import runtime


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = nn.Linear(32 * 16 * 16, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.c2(torch.relu(self.c1(x)))).flatten(1))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(16, 64, 3, padding=1)
        self.c2 = nn.Conv2d(64, 96, 3, stride=2, padding=1)
        self.pw = nn.Conv2d(96, 128, 1)
        self.fc = nn.Linear(128 * 15 * 15, 300)

    def forward(self, x):
        return self.fc(F.relu(self.pw(F.relu(self.c2(F.relu(self.c1(x)))))).flatten(1))


MODELS = {"small_cnn": (SmallCNN, (1, 3, 32, 32)), "conv_net": (ConvNet, (1, 16, 30, 30))}


def measure(name: str, runs: int, thread_counts, repeats: int) -> dict:
    ctor, shape = MODELS[name]
    torch.manual_seed(37)
    model = ctor().eval()
    g = torch.Generator().manual_seed(3737)
    inputs = [torch.randn(*shape, generator=g) for _ in range(runs)]
    pte = exir.to_edge(torch.export.export(model, (inputs[0],))).to_executorch().buffer
    program = runtime.load(pte)
    serial = [program.run("forward", [x])[0] for x in inputs]  # also loads the first copy
    best_serial, serial_cpu = float("inf"), 0.0
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        for x in inputs:
            program.run("forward", [x])
        elapsed = time.perf_counter() - start
        if elapsed < best_serial:
            best_serial, serial_cpu = elapsed, time.process_time() - cpu
    row = {"model": name, "runs": runs, "serial_s": best_serial, "serial_cpu_s": serial_cpu, "threads": {}}
    for n in thread_counts:
        out = [None] * runs

        def work(k):
            for i in range(k, runs, n):
                out[i] = program.run("forward", [inputs[i]])[0]

        best, best_cpu = float("inf"), 0.0
        mismatches = 0
        for round_ in range(repeats + 1):  # the first round also loads the copies: not timed
            threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
            start, cpu = time.perf_counter(), time.process_time()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - start
            mismatches += sum(not torch.equal(a, b) for a, b in zip(serial, out))
            if round_ > 0 and elapsed < best:
                best, best_cpu = elapsed, time.process_time() - cpu
        # CPU time over wall time: how many cores the process kept busy (on a machine others share, the speed-up
        # is capped by the cores they leave free; this says whether the calls ran in parallel at all).
        row["threads"][n] = {
            "wall_s": best,
            "cpu_s": best_cpu,
            "cores_busy": best_cpu / best,
            "speedup": best_serial / best,
            "mismatches": mismatches,
            "outputs_checked": runs * (repeats + 1),
            "copies": list(program.copies("forward")),
        }
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="small_cnn,conv_net")
    ap.add_argument("--threads", default="4", help="comma-separated thread counts")
    ap.add_argument("--runs", type=int, default=120)
    ap.add_argument("--repeats", type=int, default=3, help="timed rounds; the best is kept")
    ap.add_argument("--out", help="also write the numbers as JSON here")
    args = ap.parse_args(argv)
    rows = [
        measure(m, args.runs, [int(t) for t in args.threads.split(",")], args.repeats) for m in args.models.split(",")
    ]
    print(f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(
        "| model | runs | serial wall (cores busy) | threads | wall (cores busy) | speed-up | mismatches / outputs "
        "checked | copies loaded |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        for n, t in r["threads"].items():
            print(
                f"| {r['model']} | {r['runs']} | {r['serial_s'] * 1e3:.1f} ms "
                f"({r['serial_cpu_s'] / r['serial_s']:.2f}) | {n} | {t['wall_s'] * 1e3:.1f} ms "
                f"({t['cores_busy']:.2f}) | {t['speedup']:.2f}x | {t['mismatches']} / {t['outputs_checked']} | "
                f"{t['copies'][0]} |"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"cpus": os.cpu_count(), "rows": rows}, f, indent=1)
    return 0 if all(t["mismatches"] == 0 for r in rows for t in r["threads"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
