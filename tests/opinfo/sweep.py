"""The OpInfo sweep: PyTorch's own OpInfo samples as one-op programs on Ember, both builds, against eager.

    .venv/bin/python3 -m tests.opinfo.sweep --full --out tests/opinfo/RESULTS.md     # every sample (37,705)
    .venv/bin/python3 -m tests.opinfo.sweep --max-samples 1 --out tests/opinfo/RESULTS.md \
        --ci-list tests/opinfo/ci_samples.txt --json /tmp/opinfo.json     # the committed run: 2,167, 33 min
    .venv/bin/python3 -m tests.opinfo.sweep --ops add,roll,nn.functional.conv2d      # some OpInfos, to stdout
    .venv-ray/bin/python3 -m tools.heavy opinfo --full --results DIR    # the same on Ray, in resumable chunks

For each OpInfo in scope (scope.py) and each dtype OpInfo lists for CPU (complex ones counted as refused: Ember has
no complex type), every sample is exported, lowered and run on the default and the portable-only build
(check.py), and compared with eager (compare.py's tolerances). The results table gives, per manifest operator,
the samples whose programs call its kernel: tried, passed, refused by torch.export, refused by exir (a named
error; the reasons are listed), failed (expectations.py records the known ones, strictly). A sample torch.export
refuses has no program: it is attributed to the kernels the same OpInfo's exported samples reach.

The work runs in a worker process, over units: an OpInfo (all its dtypes) or an OpInfo at one dtype (`add f32`,
what tools/heavy's chunks hold); when the runtime crashes it (a kernel fault), the samples of the batch in
flight are failures and a new worker takes the next OpInfo. Exit status 1 when a failure is not in
expected.EXPECTED_FAILURES, or an entry there passed. Cost on this 2-core machine, shared with other jobs: about
1 sample per second of wall time (batches of 24; mostly exir's export), so --full would take about 10 hours.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import time
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# --- worker --------------------------------------------------------------------------------------------------------


def worker(max_samples: int, batch: int) -> None:
    import warnings

    warnings.simplefilter("ignore")
    sys.path.insert(0, os.path.join(ROOT, "runtime", "python"))
    from ember import runtime
    from tests.opinfo.check import run
    from tests.opinfo.samples import DTYPE_NAMES, by_name, cpu_dtypes, samples

    db = by_name()

    def emit(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    def flush(queue):
        emit({"start": [s.key for s in queue]})
        for o in run(runtime, queue, batch):
            emit({"outcome": o.to_json()})

    # Samples of several OpInfos and dtypes share programs: a program costs about as much to export for one
    # sample as for a few, so small OpInfos are batched together.
    queue = []
    skip = set(json.loads(sys.stdin.readline()))  # samples a worker before this one ran
    for line in sys.stdin:
        if not line.strip():
            continue
        name, *only = line.split()
        op = db[name]
        dtypes, complex_ = cpu_dtypes(op)
        totals, errors = {}, []
        for d in dtypes:
            if only and DTYPE_NAMES[d] not in only:
                continue
            try:
                ss = samples(op, d)
            except Exception as e:
                errors.append(f"{DTYPE_NAMES[d]}: {type(e).__name__}: {e}"[:300])
                continue
            totals[DTYPE_NAMES[d]] = len(ss)
            queue.extend(s for s in (ss[:max_samples] if max_samples else ss) if s.key not in skip)
        emit(
            {
                "opinfo": name,
                "complex": [str(d).replace("torch.", "") for d in complex_],
                "totals": totals,
                "errors": errors,
            }
        )
        while len(queue) >= batch:
            flush(queue[:batch])
            queue = queue[batch:]
    if queue:
        flush(queue)
    emit({"done": True})


# --- driver --------------------------------------------------------------------------------------------------------


def new_info() -> Dict[str, dict]:
    return collections.defaultdict(lambda: {"complex": [], "totals": {}, "errors": []})


def merge_info(info: Dict[str, dict], name: str, msg: dict) -> None:
    """Adds what the worker read of one unit (an OpInfo, or some of its dtypes) to the OpInfo's entry."""
    i = info[name]
    i["complex"] = msg["complex"]
    i["totals"] = {**i["totals"], **msg["totals"]}
    i["errors"] = i["errors"] + [e for e in msg["errors"] if e not in i["errors"]]


def unit_of(key: str, units: List[str]) -> str:
    """The unit (`name` or `name dtype`) a sample's key belongs to."""
    opinfo, dtype, _ = key.rsplit("/", 2)
    return f"{opinfo} {dtype}" if f"{opinfo} {dtype}" in units else opinfo


def sweep(names: List[str], max_samples: int, batch: int, log=sys.stderr, checkpoint=None):
    """Runs the worker over `names` (units: `name`, or `name dtype`); returns (outcomes, per-OpInfo info).
    `checkpoint(outcomes, info)` is called after each unit is read (a long run can be reported on before it
    ends)."""
    outcomes: List[dict] = []
    info: Dict[str, dict] = new_info()
    todo = list(names)
    t0 = time.time()
    while todo:
        p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.opinfo.sweep",
                "--worker",
                "--max-samples",
                str(max_samples),
                "--batch",
                str(batch),
            ],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        p.stdin.write(json.dumps([o["key"] for o in outcomes]) + "\n" + "\n".join(todo) + "\n")
        p.stdin.close()
        pending, done = [], False
        for line in p.stdout:
            msg = json.loads(line)
            if "complex" in msg:
                merge_info(info, msg["opinfo"], msg)
                print(
                    f"[{len(info)}] {msg['opinfo']} {' '.join(msg['totals'])}: {sum(msg['totals'].values())} samples; "
                    f"{len(outcomes)} run so far, {time.time() - t0:.0f} s",
                    file=log,
                    flush=True,
                )
                if checkpoint:
                    checkpoint(outcomes, info, time.time() - t0)
            elif "start" in msg:
                pending = list(msg["start"])
            elif "outcome" in msg:
                outcomes.append(msg["outcome"])
                if msg["outcome"]["key"] in pending:
                    pending.remove(msg["outcome"]["key"])
            elif "done" in msg:
                done = True
        code = p.wait()
        if done:
            break
        # The worker died: the batch in flight fails; a new worker takes the OpInfos after the last one read.
        for key in pending:
            opinfo, dtype, index = key.rsplit("/", 2)
            outcomes.append(
                {
                    "key": key,
                    "opinfo": opinfo,
                    "dtype": dtype,
                    "index": int(index),
                    "stage": "fail",
                    "reason": f"the worker process died (exit status {code}) running this sample's batch",
                    "kernels": [],
                    "random": False,
                    "text": "",
                }
            )
        print(f"worker died (status {code}) in a batch of {len(pending)}; restarting", file=log, flush=True)
        if not pending:
            raise RuntimeError(f"the sweep worker exited with status {code} outside a batch")
        # A new worker starts again at the first unit with samples not run, skipping those run (or failed).
        seen = {unit_of(o["key"], todo) for o in outcomes}
        last = max((todo.index(n) for n in seen if n in todo), default=0)
        todo = todo[last:]
    return outcomes, info


# --- report --------------------------------------------------------------------------------------------------------


def attribute(outcomes: List[dict]) -> None:
    """A sample torch.export refused gets the kernels its OpInfo's exported samples reach (same dtype first)."""
    by_op_dtype, by_op = collections.defaultdict(set), collections.defaultdict(set)
    for o in outcomes:
        if o["kernels"]:
            by_op_dtype[(o["opinfo"], o["dtype"])].update(o["kernels"])
            by_op[o["opinfo"]].update(o["kernels"])
    for o in outcomes:
        if not o["kernels"]:
            o["kernels"] = sorted(by_op_dtype.get((o["opinfo"], o["dtype"])) or by_op.get(o["opinfo"]) or ())


def classify(outcomes: List[dict]):
    """Splits 'fail' into expected failures, new failures; finds expected entries that passed (XPASS)."""
    from tests.opinfo.expected import expected

    new, xfail, xpass = [], [], []
    for o in outcomes:
        cause = expected(o["key"])
        if o["stage"] == "fail":
            (xfail if cause else new).append(o)
        elif o["stage"] == "pass" and cause:
            xpass.append(o)
    return new, xfail, xpass


def head_commit() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()


def report(
    outcomes: List[dict],
    info: Dict[str, dict],
    names: List[str],
    max_samples: int,
    seconds: float,
    run: "Run | None" = None,
) -> str:
    from tests.opinfo.programs import manifest_ops
    import torch

    attribute(outcomes)
    new, xfail, xpass = classify(outcomes)
    stages = collections.Counter(o["stage"] for o in outcomes)
    per = collections.defaultdict(collections.Counter)
    for o in outcomes:
        for k in o["kernels"]:
            per[k]["tried"] += 1
            per[k][o["stage"]] += 1
            per[k]["random"] += o["random"] and o["stage"] == "pass"
    complex_dtypes = sum(len(i["complex"]) for i in info.values())
    lines = []
    when = datetime.date.today().isoformat()
    run = run or Run()
    commit = run.commit or head_commit()
    total = len(outcomes)

    portable, optimized = manifest_ops("portable"), manifest_ops("optimized")
    reached = [op for op in portable if per[op]["tried"]]
    passed_ops = [op for op in portable if per[op]["pass"]]
    all_samples = sum(sum(i["totals"].values()) for i in info.values())
    mode = "every sample" if not max_samples else f"the first {max_samples} samples of each OpInfo and dtype"
    command = run.command or (
        f"python -m tests.opinfo.sweep {'--full' if not max_samples else f'--max-samples {max_samples}'} "
        f"--out tests/opinfo/RESULTS.md"
    )
    lines += [
        "# OpInfo sweep results",
        "",
        f"`{command}` ({when}, commit {commit}, torch {torch.__version__}): {len(names)} "
        f"OpInfos in scope (tests/opinfo/scope.py), {mode} ({total} of their {all_samples} samples at Ember's "
        f"dtypes), each exported with exir and run on the default and the portable-only build against eager. "
        f"{run.how or f'Wall time {seconds / 60:.1f} min on this 2-core machine (one worker process).'}",
        "",
    ]
    if len(info) < len(names):  # a checkpoint of a run still going, or stopped
        read = [n for n in names if n in info]
        lines += [
            f"**Partial run: {len(read)} of the {len(names)} OpInfos in scope were read** (the last of them "
            f"{read[-1] if read else '-'}); the others have no outcomes here.",
            "",
        ]
    lines += [
        "## Summary",
        "",
        f"- samples tried: {total}",
        f"- passed on both builds: {stages['pass']} ({sum(o['random'] for o in outcomes if o['stage'] == 'pass')} "
        f"of them random ops compared by dtype and shape only)",
        f"- refused by torch.export (or eager): {stages['export']}",
        f"- refused by exir with a named error: {stages['exir']}",
        f"- failed: {stages['fail']} ({len(xfail)} recorded in tests/opinfo/expected.py, {len(new)} not recorded)",
        f"- recorded failures that passed (XPASS): {len(xpass)}",
        f"- complex dtypes refused (Ember has no complex type): {complex_dtypes} (OpInfo, dtype) pairs, not run",
        f"- portable manifest operators reached by at least one sample: {len(reached)} of {len(portable)} "
        f"({len(passed_ops)} with at least one passing sample); optimized: "
        f"{sum(1 for op in optimized if per[op]['tried'])} of {len(optimized)}",
        "",
    ]
    import re

    reasons, dtypes_of = collections.Counter(), collections.defaultdict(list)
    for o in outcomes:
        if o["stage"] == "exir":
            r = _reason(o["reason"])
            m = re.search(r" with (\w+)( \('\w+'\))?:", r)
            if m:  # one line per operator and cause, its dtypes listed
                dtypes_of[r[: m.start(1)] + "{dtypes}" + r[m.end(1) :]].append(m.group(1))
                r = r[: m.start(1)] + "{dtypes}" + r[m.end(1) :]
            reasons[r] += 1
    if reasons:
        lines += ["## Refused by exir (named errors)", "", "| samples | reason |", "|---:|---|"]
        lines += [
            f"| {n} | {r.replace('{dtypes}', ', '.join(dict.fromkeys(dtypes_of.get(r, []))))} |"
            for r, n in reasons.most_common()
        ]
        lines.append("")
    fails = [o for o in outcomes if o["stage"] == "fail"]
    if fails:
        lines += ["## Failures", "", "| sample | kernels | recorded | what differs |", "|---|---|---|---|"]
        from tests.opinfo.expected import expected

        for o in sorted(fails, key=lambda o: o["key"]):
            lines.append(
                f"| `{o['key']}` {_cell(o['text'], 60)} | {', '.join(_k(k) for k in o['kernels'])} | "
                f"{'yes' if expected(o['key']) else '**no**'} | {_cell(o['reason'], 200)} |"
            )
        lines.append("")
    if xpass:
        lines += ["## Recorded failures that passed (remove from expected.py)", ""]
        lines += [f"- `{o['key']}`" for o in xpass]
        lines.append("")
    for title, ops in (("portable", portable), ("optimized", optimized)):
        lines += [
            f"## Per {title} manifest operator",
            "",
            "| operator | tried | passed | refused by export | refused by exir | failed |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for op in ops:
            c = per[op]
            if c["tried"]:
                lines.append(f"| {op} | {c['tried']} | {c['pass']} | {c['export']} | {c['exir']} | {c['fail']} |")
        missing = [op for op in ops if not per[op]["tried"]]
        lines += [
            "",
            f"Not reached by any OpInfo sample ({len(missing)}; tests/kernels' hand-written tests cover "
            f"them): " + ", ".join(f"`{_k(op)}`" for op in missing),
            "",
        ]
    other = sorted(k for k in per if k not in set(portable) | set(optimized))
    if other:
        lines += [
            "## Other kernels reached (prim ops, or operators without a kernel)",
            "",
            "| operator | tried | passed | refused by export | refused by exir | failed |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for op in other:
            c = per[op]
            lines.append(f"| {op} | {c['tried']} | {c['pass']} | {c['export']} | {c['exir']} | {c['fail']} |")
        lines.append("")
    lines += [
        "## Per OpInfo",
        "",
        "| OpInfo | dtypes | samples (run / all) | passed | export | exir | failed | complex refused |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    by_op = collections.defaultdict(list)
    for o in outcomes:
        by_op[o["opinfo"]].append(o)
    for name in names:
        os_ = by_op[name]
        c = collections.Counter(o["stage"] for o in os_)
        i = info.get(name, {"totals": {}, "complex": [], "errors": []})
        dts = " ".join(i["totals"]) + ("; sample errors: " + "; ".join(i["errors"]) if i["errors"] else "")
        lines.append(
            f"| {name} | {dts} | {len(os_)} / {sum(i['totals'].values())} | {c['pass']} | {c['export']} | "
            f"{c['exir']} | {c['fail']} | {' '.join(i['complex'])} |"
        )
    lines.append("")
    return "\n".join(lines)


@dataclasses.dataclass
class Run:
    """How a run was made, for its report's first lines: the command, the commit it ran at (default HEAD) and a
    sentence on where and how long it ran (default: one worker process, its wall time)."""

    command: str = ""
    commit: str = ""
    how: str = ""


def canonical(outcomes: List[dict], names: List[str]) -> List[dict]:
    """Outcomes in scope order, then dtype, then sample index: the order a run's batching and its chunks leave
    them in does not change its report."""
    from tests.opinfo.samples import DTYPE_NAMES

    where = {n: i for i, n in enumerate(names)}
    dtypes = {n: i for i, n in enumerate(DTYPE_NAMES.values())}
    return sorted(outcomes, key=lambda o: (where.get(o["opinfo"], len(where)), dtypes.get(o["dtype"], 0), o["index"]))


def finish(
    outcomes: List[dict],
    info: Dict[str, dict],
    names: List[str],
    max_samples: int,
    seconds: float,
    out: "str | None" = None,
    ci_list: "str | None" = None,
    run: "Run | None" = None,
    note: str = "",
) -> int:
    """A run's results, however it was made (this module's worker, or tools/heavy's chunks on Ray): the report
    (to `out`, or stdout), the CI list, every new failure and XPASS on stderr. Exit status 1 when any."""
    outcomes = canonical(outcomes, names)
    text = report(outcomes, info, names, max_samples, seconds, run)
    if note:
        text = text.replace("\n## Summary", f"\n{note}\n\n## Summary", 1)
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        print(text)
    if ci_list:
        keys = ci_cover(outcomes)
        with open(ci_list, "w") as f:
            f.write(
                "# The CI tier's OpInfo samples (tests/opinfo/test_opinfo_ci.py): one or more per (kernel, dtype "
                "class)\n# the sweep reached; written by `python -m tests.opinfo.sweep ... --ci-list`.\n"
            )
            f.write("".join(k + "\n" for k in keys))
    new, _, xpass = classify(outcomes)
    for o in new:
        print(f"FAILED (not recorded) {o['key']}: {o['reason']}", file=sys.stderr)
    for o in xpass:
        print(f"XPASS (remove from expected.py) {o['key']}", file=sys.stderr)
    return 1 if new or xpass else 0


def _k(op: str) -> str:
    return op.replace("aten::", "")


def _cell(text: str, limit: int) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


def _reason(reason: str) -> str:
    """A refusal's message, without the source lines and sample-specific numbers that would split one reason."""
    import re

    r = re.sub(r"; at .*", "", reason)
    r = re.sub(r",? at /\S+:\d+ \(.*?\)", "", r)
    r = re.sub(r"the program calls operators the runtime cannot run \(kernel libraries [^)]*\): ", "", r)
    r = re.sub(r"method 'forward': the program uses operators Ember cannot run: ", "", r)
    r = re.sub(r" to_edge al.*", "", r).rstrip(")") if "(" not in r else re.sub(r" to_edge al.*", "", r)
    r = re.sub(r"File \"[^\"]*\", line \d+[^;]*", "", r)
    r = re.sub(r"instruction \d+", "instruction N", r)
    r = re.sub(r"\bs\d+\b", "sN", r)
    return _cell(r, 240)


def dtype_class(dtype: str) -> str:
    from tests.opinfo.samples import BY_NAME, CLASSES

    return next(c for c, ds in CLASSES.items() if BY_NAME[dtype] in ds)


def ci_cover(outcomes: List[dict]) -> List[str]:
    """Few samples that together reach every (kernel, dtype class) pair the sweep ran a sample of, passing
    samples first (a pair only failing samples reach gets one of those: its entry in expected.py is then
    checked too). Greedy set cover: each pick reaches the most pairs not yet reached."""
    from tests.opinfo.programs import manifest_ops

    have = set(manifest_ops("portable")) | set(manifest_ops("optimized"))
    cands = []
    for o in outcomes:
        if o["stage"] in ("pass", "fail") and not o["reason"].startswith("the worker process died"):
            pairs = {(k, dtype_class(o["dtype"])) for k in o["kernels"] if k in have}
            if pairs:
                cands.append((o["stage"] != "pass", o["key"], pairs))
    uncovered = set().union(*(c[2] for c in cands)) if cands else set()
    picked = []
    while uncovered:
        best = max(
            cands, key=lambda c: (len(c[2] & uncovered) if not c[0] else 0.5 * len(c[2] & uncovered), -len(c[2]), c[1])
        )
        picked.append(best[1])
        uncovered -= best[2]
    return sorted(picked)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="every sample of every OpInfo in scope")
    ap.add_argument("--max-samples", type=int, default=None, help="the first N samples per OpInfo and dtype")
    ap.add_argument("--ops", help="comma-separated OpInfo names (default: every OpInfo in scope)")
    ap.add_argument("--batch", type=int, default=16, help="samples per exported program")
    ap.add_argument("--out", help="write the results (markdown) here; default stdout")
    ap.add_argument("--json", help="also write every sample's outcome here")
    ap.add_argument("--ci-list", help="write the CI tier's samples (ci_cover) here, one key per line")
    ap.add_argument(
        "--from-json", help="no run: report the outcomes a --json file holds (after editing expected.py, say)"
    )
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    max_samples = 0 if a.full else (a.max_samples if a.max_samples is not None else 4)
    if a.worker:
        worker(max_samples, a.batch)
        return 0
    from tests.opinfo.samples import full_name, op_db
    from tests.opinfo.scope import in_scope

    if a.from_json:
        with open(a.from_json) as f:
            saved = json.load(f)
        names, outcomes, info, seconds = saved["names"], saved["outcomes"], saved["info"], saved["seconds"]
        max_samples = saved["max_samples"]
    else:
        names = a.ops.split(",") if a.ops else [full_name(op) for op in in_scope(op_db())]

        def save(outcomes, info, seconds, partial=True):
            if a.json:
                with open(a.json + ".tmp", "w") as f:
                    json.dump(
                        {
                            "names": names,
                            "outcomes": outcomes,
                            "info": info,
                            "seconds": seconds,
                            "max_samples": max_samples,
                            "partial": partial,
                        },
                        f,
                    )
                os.replace(a.json + ".tmp", a.json)

        t = time.time()
        outcomes, info = sweep(names, max_samples, a.batch, checkpoint=save)
        seconds = time.time() - t
        save(outcomes, info, seconds, partial=False)
    note = ""
    if a.from_json and saved.get("rerun"):
        note = f"OpInfos run again after a fix, their new outcomes replacing the run's: {', '.join(saved['rerun'])}."
    return finish(outcomes, info, names, max_samples, seconds, a.out, a.ci_list, note=note)


if __name__ == "__main__":
    sys.exit(main())
