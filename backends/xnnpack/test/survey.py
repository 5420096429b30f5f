"""Which of the zoo's and the benchmark's models ExecuTorch lowers to XNNPACK, and whether Ember's XnnpackBackend
(on Debian's 2022 XNNPACK) loads and runs each of those programs, against eager PyTorch.

    .venv/bin/python3 -m backends.xnnpack.test.survey                   # every model; writes backends/xnnpack/SURVEY.md
    .venv/bin/python3 -m backends.xnnpack.test.survey resnet18 vit_hf   # some models only; prints the table
    .venv/bin/python3 -m backends.xnnpack.test.survey --runner PATH     # a runner built elsewhere

Models: the zoo (zoo/models.py, forward only), its control-flow and dynamic-shape entries (zoo/control_flow.py,
zoo/dynamic.py), the public zoo at its CI sizes (zoo/public/models.py) and the benchmark's own models
(bench/models.py: the 200-op chain and the "real" group at full size; the rest of its "zoo" group is the zoo's).
Each is exported with torch.export here, lowered with ExecuTorch 1.5.1's own XnnpackPartitioner
(tools/et_xnnpack.py, in .venv-executorch) and run by //runtime/runner:runner_all_backends built with
--config=xnnpack (built here when --runner is not given). The table says, per model: the XNNGraph node kinds in
its blobs, and the outcome: parity with eager, a refusal by the XnnpackBackend (its message names the node and
kind), or a failure elsewhere (an export ExecuTorch refuses, a kernel the runner lacks outside the delegates).

Slow (tens of minutes on 2 cores: an ExecuTorch process per model); not part of CI. The CI-sized checks of the
nodes Ember runs on the CPU are backends/xnnpack/test/test_executorch_xnnpack.py.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from typing import Callable, Dict, List, Optional, Tuple

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ET_PYTHON = os.environ.get("EMBER_ET_PYTHON", os.path.join(ROOT, ".venv-executorch", "bin", "python3"))
DRIVER = os.path.join(ROOT, "tools", "et_xnnpack.py")
SCHEMA = os.path.join(ROOT, "schema", "xnnpack_graph.fbs")
OUT = os.path.join(ROOT, "backends", "xnnpack", "SURVEY.md")
# Parity as backends/xnnpack/test/test_executorch_xnnpack.py measures it: max |Ember - eager| over max(1, max |eager|).
RELATIVE_TOLERANCE = 1e-4


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    group: str  # zoo, control_flow, dynamic, public (CI size), bench
    # () -> (ExportedProgram, inputs, eager outputs); raises when torch.export cannot capture it.
    export: Callable[[], Tuple[torch.export.ExportedProgram, tuple, list]]


@dataclasses.dataclass
class Outcome:
    name: str
    group: str
    status: str  # "runs", "refused", "fails elsewhere", "no export"
    detail: str = ""
    delegates: int = 0
    kinds: Dict[str, int] = dataclasses.field(default_factory=dict)
    error: Optional[float] = None  # against eager, relative to max(1, max |eager|)
    et_error: Optional[float] = None  # against ExecuTorch's own runtime on the same .pte, likewise


def _flat(outputs) -> List[torch.Tensor]:
    leaves, _ = torch.utils._pytree.tree_flatten(outputs)
    return [t for t in leaves if isinstance(t, torch.Tensor)]


def _from_module(make):
    def export():
        module, inputs = make()
        with torch.no_grad():
            eager = _flat(module(*inputs))
        return torch.export.export(module, tuple(inputs)), tuple(inputs), eager

    return export


def _from_methods(export_methods, name):
    def export():
        programs, inputs, module = export_methods(name)
        with torch.no_grad():
            eager = _flat(module(*inputs["forward"]))
        return programs["forward"], tuple(inputs["forward"]), eager

    return export


def entries() -> List[Entry]:
    from bench import models as B
    from zoo import control_flow, dynamic
    from zoo import models as Z
    from zoo.public import models as P

    out = [Entry(n, "zoo", _from_methods(Z.export_methods, n)) for n in Z.ZOO]
    out += [Entry(n, "control_flow", _from_methods(control_flow.export_methods, n)) for n in control_flow.MODELS]
    out += [Entry(n, "dynamic", _from_methods(dynamic.export_methods, n)) for n in dynamic.MODELS]
    out += [Entry(n, "public", _from_module(lambda m=m: m.build("ci"))) for n, m in P.MODELS.items()]
    out += [Entry(n, "bench", _from_module(m.build)) for n, m in B.MODELS.items() if n not in Z.ZOO]
    return out


def build_runner() -> str:
    r = subprocess.run(
        ["bazel", "build", "--config=xnnpack", "//runtime/runner:runner_all_backends"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        sys.exit(f"bazel build --config=xnnpack failed:\n{r.stderr[-3000:]}")
    r = subprocess.run(
        ["bazel", "info", "--config=xnnpack", "bazel-bin"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return os.path.join(r.stdout.strip(), "runtime", "runner", "runner_all_backends")


def blob_kinds(pte_path: str) -> Dict[str, int]:
    """XNNGraph node kinds over every XnnpackBackend blob of the program's first plan, with their counts."""
    import struct

    from exir.serialize.flatc import decode
    from exir.serialize.json_codec import _read_nonfinite
    from exir.serialize.pte import deserialize_pte

    pte = deserialize_pte(open(pte_path, "rb").read())
    kinds: Dict[str, int] = collections.Counter()
    for d in pte.program.execution_plan[0].delegates:
        if d.id != "XnnpackBackend":
            continue
        ref = d.processed
        if ref.location.name == "SEGMENT":
            blob = pte.segment(ref.index)
        else:
            blob = bytes(pte.program.backend_delegate_data[ref.index].data)
        if blob[4:8] == b"XH00":
            fb_off, fb_size = struct.unpack_from("<II", blob, 10)
            blob = blob[fb_off : fb_off + fb_size]
        graph = json.loads(_read_nonfinite(decode(blob, SCHEMA, "an XNNGraph")))
        for n in graph.get("nodes", []):
            kinds[n["node_type"]] += 1
    return dict(kinds)


def _first_error(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if "XnnpackBackend:" in ln]
    lines = lines or [ln for ln in stderr.splitlines() if re.match(r"^[EF] ", ln)] or stderr.splitlines()[-1:]
    text = lines[0] if lines else ""
    return re.sub(r"^[EWIF] ember [\w.]+:\d+\] ", "", text).strip()


def survey_one(entry: Entry, runner: str, work: str) -> Outcome:
    from zoo.runner_io import read_outputs, run

    out = Outcome(entry.name, entry.group, "no export")
    d = os.path.join(work, f"{entry.group}_{entry.name}")
    os.makedirs(d, exist_ok=True)
    try:
        torch.manual_seed(0)
        ep, inputs, eager = entry.export()
    except Exception as e:  # the model itself does not export: nothing reaches ExecuTorch
        out.detail = f"torch.export: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        return out
    torch.export.save(ep, os.path.join(d, "model.pt2"))
    torch.save(list(inputs), os.path.join(d, "inputs.pt"))
    pte = os.path.join(d, "model.pte")
    et_out = os.path.join(d, "et_outputs.pt")
    # ExecuTorch also runs its .pte (its runtime, its XNNPACK): where eager and ExecuTorch's own program disagree,
    # Ember is held to the program.
    args = [ET_PYTHON, DRIVER, os.path.join(d, "model.pt2"), pte, "--run", os.path.join(d, "inputs.pt"), et_out]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        # The exception's own line (a multi-line message continues below it).
        raised = [ln for ln in proc.stderr.splitlines() if re.match(r"^[\w.]+(Error|Exception): ", ln)]
        tail = raised or [ln for ln in proc.stderr.splitlines() if ln.strip()]
        out.detail = f"ExecuTorch's lowering: {tail[-1][:200] if tail else 'exit ' + str(proc.returncode)}"
        return out
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    out.delegates = report["delegates"]
    out.kinds = blob_kinds(pte)
    r = run(runner, pte, inputs, os.path.join(d, "run"), timeout=1800)
    if r.returncode != 0:
        message = _first_error(r.stderr)
        out.status = "refused" if "XnnpackBackend" in message else "fails elsewhere"
        out.detail = message[:300]
        return out
    got = read_outputs(os.path.join(d, "run"), eager)
    out.status = "runs"
    out.error = _relative_error(got, eager)
    if os.path.exists(et_out):
        out.et_error = _relative_error(got, _flat(torch.load(et_out)))
    if not out.error <= RELATIVE_TOLERANCE:
        out.detail = f"differs from eager by {out.error:.2g} of the output's magnitude"
        if out.et_error is not None and out.et_error <= RELATIVE_TOLERANCE:
            out.detail += ", as ExecuTorch's own runtime does on this program"
    if "run_error" in report:
        out.detail = (out.detail + "; " if out.detail else "") + f"ExecuTorch's runtime: {report['run_error'][:120]}"
    return out


def _relative_error(got: List[torch.Tensor], want: List[torch.Tensor]) -> float:
    """max |got - want| over max(1, max |want|), the worst over the outputs; inf when they do not pair up."""
    if len(got) != len(want):
        return float("inf")
    worst = 0.0
    for g, w in zip(got, want):
        if g.shape != w.shape:
            return float("inf")
        if w.numel() == 0:
            continue
        scale = max(1.0, w.double().abs().max().item())
        worst = max(worst, (g.double() - w.double()).abs().max().item() / scale)
    return worst


_ORDER = {"runs": 0, "refused": 1, "fails elsewhere": 2, "no export": 3}

# What a model's row cannot say by itself, checked by hand; appended to its detail.
NOTES = {
    "running_mean": "ExecuTorch's program gives its mutable buffers no initial value (data_buffer_idx 0), so the "
    "output depends on what planned memory holds: ExecuTorch's runtime starts it at zero, the runner at whatever its "
    "allocation holds",
    "dynamic_mlp": "the blob's shapes are the batch bound (8); ExecuTorch's runtime reshapes its XNNPACK runtimes "
    "per call, which the 2022 library cannot: Ember runs it at the bound only",
    "cond_gate": "ExecuTorch leaves the linears inside torch.cond's branches undelegated but undecomposed",
}


def table(outcomes: List[Outcome], runner_note: str) -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    counts = collections.Counter(o.status for o in outcomes)
    lowered = [o for o in outcomes if o.status != "no export"]
    refused = [o for o in outcomes if o.status == "refused"]
    lines = [
        "# ExecuTorch's XNNPACK programs on Ember's XnnpackBackend",
        "",
        "Written by `.venv/bin/python3 -m backends.xnnpack.test.survey` (backends/xnnpack/test/survey.py says how).",
        "",
        f"{datetime.date.today().isoformat()}, commit {commit or 'unknown'}, {runner_note}. "
        f"{len(outcomes)} models; {len(lowered)} lowered by ExecuTorch 1.5.1's XnnpackPartitioner; "
        f"{counts['runs']} run on Ember's XnnpackBackend, {counts['refused']} refused by it, "
        f"{counts['fails elsewhere']} fail outside it, {counts['no export']} do not export. "
        f"Errors: max |Ember - eager| (or - ExecuTorch's own runtime on the same .pte) over max(1, max |eager|), "
        f"float32.",
        "",
        "| model | group | delegates | XNNGraph node kinds (count) | outcome | vs eager | vs ExecuTorch | detail |",
        "|---|---|---:|---|---|---:|---:|---|",
    ]
    for o in sorted(outcomes, key=lambda o: (_ORDER[o.status], o.group, o.name)):
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(o.kinds.items()))
        err = "" if o.error is None else f"{o.error:.1e}"
        et_err = "" if o.et_error is None else f"{o.et_error:.1e}"
        status = o.status if o.status == "runs" else f"**{o.status}**"
        detail = "; ".join(t for t in (o.detail, NOTES.get(o.name, "")) if t).replace("|", "\\|")
        lines.append(f"| {o.name} | {o.group} | {o.delegates} | {kinds} | {status} | {err} | {et_err} | {detail} |")
    all_kinds = collections.Counter()
    for o in lowered:
        for k in o.kinds:
            all_kinds[k] += 1
    lines += ["", "Node kinds over all lowered programs (in how many models):", ""]
    lines.append(", ".join(f"{k} ({n})" for k, n in sorted(all_kinds.items(), key=lambda kv: (-kv[1], kv[0]))))
    if refused:
        by_kind = collections.defaultdict(list)
        for o in refused:
            m = re.search(r"\((XNN\w+)\)", o.detail)
            by_kind[m.group(1) if m else o.detail[:80]].append(o.name)
        lines += ["", "Refusals, by the node kind (or the argument) the message names first:", ""]
        lines += [f"- `{k}`: {', '.join(v)}" for k, v in sorted(by_kind.items())]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help="model names (default: all)")
    ap.add_argument("--runner", help="runner_all_backends built with --config=xnnpack (default: build it)")
    ap.add_argument("--out", help=f"the table's file (default: {os.path.relpath(OUT, ROOT)} for a full survey)")
    ap.add_argument("--keep", help="keep the exports and runs in this folder")
    args = ap.parse_args(argv)
    if not os.path.exists(ET_PYTHON):
        sys.exit(f"ExecuTorch's venv is not at {ET_PYTHON}: run tools/setup_executorch_venv.sh")
    runner = args.runner or build_runner()
    chosen = [e for e in entries() if not args.models or e.name in args.models]
    work = args.keep or tempfile.mkdtemp(prefix="xnn_survey_")
    os.makedirs(work, exist_ok=True)
    # The runner is copied: a build in the meantime must not change it under the survey.
    local = os.path.join(work, "runner_all_backends")
    shutil.copy(runner, local)
    outcomes = []
    for e in chosen:
        try:
            o = survey_one(e, local, work)
        except Exception as ex:  # a survey reports; one model's surprise must not lose the others
            o = Outcome(e.name, e.group, "fails elsewhere", f"survey: {type(ex).__name__}: {ex}"[:300])
            traceback.print_exc()
        print(f"{o.group}/{o.name}: {o.status} {o.detail}", file=sys.stderr, flush=True)
        outcomes.append(o)
    text = table(outcomes, "runner_all_backends --config=xnnpack, one thread")
    out = args.out or (OUT if not args.models else None)
    if out:
        with open(out, "w") as f:
            f.write(text)
    print(text)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
