"""Instruction counts (bench/run --callgrind): each C++ runner runs once per model under valgrind's callgrind, with
everything collected, and the counts are read from callgrind's inclusive costs of the runtime's own calls:

  execute_ir    Method::execute(), instructions per steady-state call (see count())
  load_ir       Program::load + Program::load_method (what the runtime does to get from a file to a method)

Ember's two runners (//:runner and //runtime/runner:runner_portable) and bench/et_runner.cc (ExecuTorch 1.5.1's
C++ runtime from its wheel, CPU kernels or XNNPACK) are counted the same way, so no Python interpreter runs inside
the counted calls and no baseline has to be subtracted. Counts depend on the code paths valgrind's emulated CPU
selects (XNNPACK picks its kernels from CPUID, kernels/optimized its AVX2 paths), not on timing; they are stable
from run to run.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import Dict

from bench import harness as H

SYMBOLS = {
    "ember": {
        "execute": "ember::Method::execute()",
        "load": "ember::Program::load(",
        "load_method": "ember::Program::load_method(",
    },
    "et": {
        "execute": "executorch::runtime::Method::execute()",
        "load": "executorch::runtime::Program::load(",
        "load_method": "executorch::runtime::Program::load_method(",
    },
}
SMALL_IR = 200_000_000  # below this per 2 calls, steady-state counts come from a second run


def inclusive_costs(path: str, prefixes: Dict[str, str]) -> Dict[str, dict]:
    """For each key, the summed inclusive Ir and call count of every call to a function whose name starts with
    the prefix, read from a callgrind output file (name compression and one event, Ir, as callgrind writes)."""
    names: Dict[str, str] = {}
    out = {k: {"ir": 0, "calls": 0} for k in prefixes}
    pending = None  # (key, calls) after a calls= line; the next line carries the inclusive cost
    total = None
    name_re = re.compile(r"^c?fn=(?:\((\d+)\))?\s*(.*)$")
    with open(path) as f:
        for line in f:
            if pending is not None:
                key, calls = pending
                pending = None
                parts = line.split()
                if key is not None and len(parts) >= 2:
                    out[key]["ir"] += int(parts[-1])
                    out[key]["calls"] += calls
                continue
            if line.startswith("cfn=") or line.startswith("fn="):
                m = name_re.match(line.rstrip("\n"))
                ident, name = m.group(1), m.group(2)
                if ident is not None and name:
                    names[ident] = name
                elif ident is not None:
                    name = names.get(ident, "")
                if line.startswith("cfn="):
                    current_callee = name
                continue
            if line.startswith("calls="):
                calls = int(line.split("=", 1)[1].split()[0])
                key = next((k for k, p in prefixes.items() if current_callee.startswith(p)), None)
                pending = (key, calls)
                continue
            if line.startswith("summary:") or line.startswith("totals:"):
                total = int(line.split(":", 1)[1].split()[0])
    out["_total"] = total
    return out


def _callgrind(env: H.Env, fw: str, model_dir: str, pte: str, n_inputs: int, runs: int) -> dict:
    cg_dir = os.path.join(model_dir, f"callgrind_{fw}")
    os.makedirs(cg_dir, exist_ok=True)
    out_file = os.path.join(cg_dir, f"callgrind.out.{runs}")
    args = H._runner_args(fw, env, model_dir, pte, n_inputs, cg_dir) + ["--runs", str(runs), "--warmup", "1"]
    r = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", *args],
        cwd=H.ROOT,
        capture_output=True,
        text=True,
        timeout=7200,
    )
    if r.returncode != 0:
        raise RuntimeError(f"valgrind exited {r.returncode}: {r.stderr.strip()[-1500:]}")
    costs = inclusive_costs(out_file, SYMBOLS["ember" if fw in H.EMBER_RUNNERS else "et"])
    ex, ld, lm = costs["execute"], costs["load"], costs["load_method"]
    if ex["calls"] != runs + 1 or ld["calls"] != 1 or lm["calls"] != 1:
        raise RuntimeError(
            f"unexpected call counts in {out_file}: execute {ex['calls']} (want {runs + 1}), "
            f"load {ld['calls']}, load_method {lm['calls']}"
        )
    costs["dir"] = cg_dir
    return costs


def count(env: H.Env, fw: str, model_dir: str, pte: str, n_inputs: int) -> dict:
    """Instruction counts of one program on one runtime. A first run makes 2 execute() calls (1 warm-up + 1). When
    they are cheap (under SMALL_IR), a second run makes 3, and the difference is exactly one steady-state call,
    with whatever the first call does once (lazy initialization) left out; for larger programs that once-only
    work is a negligible part of a call, and the mean of the 2 calls is reported."""
    a = _callgrind(env, fw, model_dir, pte, n_inputs, runs=1)
    result = {
        "program_load_ir": a["load"]["ir"],
        "load_method_ir": a["load_method"]["ir"],
        "load_ir": a["load"]["ir"] + a["load_method"]["ir"],
        "process_ir": a["_total"],
    }
    if a["execute"]["ir"] < SMALL_IR:
        b = _callgrind(env, fw, model_dir, pte, n_inputs, runs=2)
        steady = b["execute"]["ir"] - a["execute"]["ir"]
        result.update(
            execute_ir=steady,
            first_execute_ir=a["execute"]["ir"] - steady,
            execute_ir_method="difference of 3 and 2 calls (steady state)",
        )
    else:
        result.update(execute_ir=a["execute"]["ir"] // 2, execute_ir_method="mean of 2 calls")
    result.update(H.compare_outputs(model_dir, a["dir"]))
    return result


def run_all(env: H.Env, names, frameworks, ember_export, peer) -> dict:
    version = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()
    models = {}
    from bench.models import MODELS

    for name in names:
        d = os.path.join(env.work, name)
        entry = {"label": MODELS[name].label, "ops": MODELS[name].ops or None, "frameworks": {}}
        for fw in (*H.EMBER_RUNNERS, *H.CPP_PEERS):
            if fw not in frameworks or fw in env.skipped:
                continue
            H.log(f"{name}: {fw} under callgrind")
            pte = os.path.join(d, "ember.pte") if fw in H.EMBER_RUNNERS else peer["et"][name][fw]["path"]
            try:
                entry["frameworks"][fw] = count(env, fw, d, pte, ember_export[name]["inputs"])
            except Exception as e:  # recorded per model and framework
                H.log(f"{name}: {fw} failed: {e}")
                entry["frameworks"][fw] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        models[name] = entry
    return {"models": models, "settings_callgrind": {"valgrind": version, "small_ir": SMALL_IR}}
