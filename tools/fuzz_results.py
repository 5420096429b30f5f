"""The fuzz-results table (fuzz-results/<date>-<commit>.md): its one formatter, for `tools/fuzz.sh long` (a target's
libFuzzer log, one row) and `python -m tools.heavy fuzz` (a target's chunks, merged into one row). Standard library
only: fuzz.sh runs it with whatever python3 there is.

    python3 tools/fuzz_results.py header RUNS COMMIT HOW        # the title and the table's head
    python3 tools/fuzz_results.py row TARGET RESULT SECONDS LOG  # one target's row from its libFuzzer log
"""

from __future__ import annotations

import re
import sys
import time
from typing import Iterable, Optional

HEAD = (
    "| target | result | executions | seconds | exec/s | coverage (edges) | features | corpus (inputs/bytes) |\n"
    "|---|---|---:|---:|---:|---:|---:|---|"
)
# The line a row's coverage comes from: the last status line, DONE, or where the run stopped on a finding.
STATUS = re.compile(r"^#[0-9]+\s+(?:DONE|NEW|REDUCE|pulse|INITED)\b.*$", re.M)


def header(runs: int, commit: str, how: str, when: Optional[float] = None) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(when))
    return f"# Fuzzing, {runs} executions per target, commit {commit} ({stamp}, {how})\n\n{HEAD}\n"


def _first(pattern: str, text: str) -> Optional[str]:
    m = re.search(pattern, text)
    return m.group(1) if m else None


def parse_log(text: str) -> dict:
    """What a libFuzzer log (run with -print_final_stats=1) says: executions, exec/s, and the last status line's
    coverage edges, features and corpus ("inputs/bytes", as libFuzzer prints it). None where it does not say."""
    lines = STATUS.findall(text)
    line = lines[-1] if lines else ""
    execs, rate = _first(r"number_of_executed_units: ([0-9]+)", text), _first(r"average_exec_per_sec: *([0-9]+)", text)
    cov, ft = _first(r"cov: ([0-9]+)", line), _first(r"ft: ([0-9]+)", line)
    return {
        "executions": int(execs) if execs else None,
        "rate": int(rate) if rate else None,
        "cov": int(cov) if cov else None,
        "ft": int(ft) if ft else None,
        "corpus": _first(r"corp: ([0-9]+/[0-9]+[a-zA-Z]*)", line),
    }


def corpus_bytes(corpus: Optional[str]) -> int:
    """libFuzzer's corpus size ("151/28Kb") in bytes, to compare two."""
    m = re.fullmatch(r"[0-9]+/([0-9]+)([a-zA-Z]*)", corpus or "")
    if not m:
        return -1
    return int(m.group(1)) * {"b": 1, "Kb": 1 << 10, "Mb": 1 << 20, "Gb": 1 << 30}.get(m.group(2), 1)


def row(
    target: str,
    result: str,
    executions: Optional[int],
    seconds: float,
    rate: Optional[int],
    cov: Optional[int],
    ft: Optional[int],
    corpus: Optional[str],
) -> str:
    cells = [target, result, executions, round(seconds), rate, cov, ft, corpus]
    return "| " + " | ".join("?" if c is None else str(c) for c in cells) + " |"


def merged_row(target: str, parts: Iterable[dict]) -> str:
    """One row for a target run in parts (dicts with result, executions, seconds and parse_log's fields):
    executions and seconds summed, exec/s their ratio, coverage, features and corpus the largest part's (each
    part fuzzes its own copy of the corpus), FAILED when any part failed."""
    parts = list(parts)
    execs = sum(p["executions"] or 0 for p in parts)
    seconds = sum(p["seconds"] for p in parts)
    failed = any(p["result"] != "ok" for p in parts)

    def most(key, by=lambda v: v):
        vals = [p[key] for p in parts if p[key] is not None]
        return max(vals, key=by) if vals else None

    return row(
        target,
        "FAILED" if failed else "ok",
        execs,
        seconds,
        int(execs / seconds) if seconds > 0 else None,
        most("cov"),
        most("ft"),
        most("corpus", corpus_bytes),
    )


def main(argv) -> int:
    if argv[:1] == ["header"] and len(argv) == 4:
        sys.stdout.write(header(int(argv[1]), argv[2], argv[3]))
        return 0
    if argv[:1] == ["row"] and len(argv) == 5:
        _, target, result, seconds, log = argv
        with open(log, errors="replace") as f:
            p = parse_log(f.read())
        print(row(target, result, p["executions"], float(seconds), p["rate"], p["cov"], p["ft"], p["corpus"]))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
