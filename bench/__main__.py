"""Ember's benchmark, both builds (the default one with kernels/optimized, and portable kernels only), against
ExecuTorch 1.5.1 (portable and XNNPACK), ONNX Runtime and eager PyTorch, all single-threaded, on one
machine in one run; LiteRT (--frameworks litert,litert_2t) and 2-thread columns on request. Entry point: bench/run (installs what it needs, then runs this).

    python -m bench                      the zoo models, every framework (about 5-10 minutes on 2 cores)
    python -m bench --quick              the small models, short measurements (CI; under 2 minutes)
    python -m bench --models add,mlp     some models
    python -m bench --models real        the public zoo's real models (ResNet18, MobileNets, EfficientNet-B0 at
                                         224x224, BERT-mini, ViT-Tiny); --models all: both groups
    python -m bench --callgrind          instruction counts of execute and load under valgrind's callgrind
    python -m bench --out DIR            where <date>.json, <date>.md and <date>.png go (default bench/results)
    python -m bench --llm                text generation on SmolLM-135M's architecture (random weights): Ember's
                                         llm_runner and Python path against ExecuTorch's LLM runner, llama.cpp and
                                         eager PyTorch, fp32 / int8 / 8da4w, at 1 and 2 threads (bench/llm.py)
    python -m bench --llm --quick        the same on a 2-layer config, short prompt, one round (CI)

bench/README.md explains every number.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

from bench import harness as H
from bench.models import GROUPS, MODELS, QUICK_MODELS


def parse_args(argv=None, prog="bench/run"):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small models, ~0.1 s of timed runs each (CI)")
    ap.add_argument(
        "--models",
        default="",
        help="comma-separated models or groups (zoo: the default set; real: "
        f"the public zoo's ResNet18, MobileNets, EfficientNet-B0, BERT and ViT; all), from: "
        f"{', '.join(MODELS)}",
    )
    ap.add_argument(
        "--frameworks",
        default="",
        help=f"comma-separated, from: {', '.join(H.FRAMEWORKS)} (both Ember builds are always measured)",
    )
    ap.add_argument("--callgrind", action="store_true", help="instruction counts instead of times")
    ap.add_argument(
        "--target-s",
        type=float,
        default=None,
        help="seconds of timed runs per model and framework (default 1.0, --quick 0.1)",
    )
    ap.add_argument("--out", default=os.path.join(H.ROOT, "bench", "results"))
    ap.add_argument("--name", default=None, help="file stem of the results (default: the date, -quick in quick mode)")
    ap.add_argument("--work", default=os.path.join(H.ROOT, "bench", ".work"), help="exports and scratch files")
    ap.add_argument("--no-pin", action="store_true", help="do not pin the measured processes to one CPU")
    ap.add_argument("--no-plot", action="store_true")
    g = ap.add_argument_group("LLM benchmark (--llm; bench/README.md, \"LLM benchmark\")")
    g.add_argument("--llm", action="store_true", help="the LLM benchmark instead of the model set")
    g.add_argument(
        "--llm-config",
        default=None,
        help="smollm-135m (default), tiny (default with --quick), or a transformers Llama config.json",
    )
    g.add_argument("--llm-threads", default=None, help="comma-separated thread counts (default 1,2)")
    g.add_argument("--llm-prompt-tokens", type=int, default=None, help="prompt length (default 64, --quick 16)")
    g.add_argument("--llm-new-tokens", type=int, default=None, help="tokens generated (default 64, --quick 16)")
    g.add_argument(
        "--llm-group-size",
        type=int,
        default=32,
        help="8da4w group size, both frameworks (default 32: it divides SmolLM's width 576, which 128 does not)",
    )
    g.add_argument(
        "--llm-rounds",
        type=int,
        default=None,
        help="interleaved rounds, one process per measurement each; medians reported (default 3, --quick 1)",
    )
    g.add_argument(
        "--llm-et-extended-ops",
        action="store_true",
        help="ExecuTorch export with --xnnpack-extended-ops (XNNPACK takes fp32 linears too, not only quantized ones)",
    )
    return ap.parse_args(argv)


def resolve_models(spec: str, quick: bool):
    """--models: names and group names (bench/models.py GROUPS), in order, each once; empty: the quick set with
    --quick, else the zoo group (the real group is opt-in: its portable-kernel runs take minutes)."""
    if not spec:
        return list(QUICK_MODELS) if quick else list(GROUPS["zoo"])
    names = []
    for m in (m for m in spec.split(",") if m):
        for n in GROUPS.get(m, [m]):
            if n not in names:
                names.append(n)
    return names


def main(argv=None, prog="bench/run") -> int:
    a = parse_args(argv, prog)
    if a.llm:
        from bench import llm

        return llm.main(a)
    names = resolve_models(a.models, a.quick)
    unknown = [m for m in names if m not in MODELS]
    # The default set: every framework but the optional Ember columns (2 threads, the XNNPACK delegate), which
    # --frameworks names when wanted.
    frameworks = [f for f in a.frameworks.split(",") if f] or (
        [*H.EMBER_RUNNERS, *H.CPP_PEERS] if a.callgrind else [f for f in H.FRAMEWORKS if f not in H.OPTIONAL]
    )
    unknown += [f for f in frameworks if f not in H.FRAMEWORKS]
    if unknown:
        print(f"bench: unknown models or frameworks {unknown}", file=sys.stderr)
        return 2
    # Both Ember builds, always: every ratio and goal is Ember against a peer.
    frameworks = [*H.EMBER_RUNNERS, *(f for f in frameworks if f not in H.EMBER_RUNNERS)]
    target_s = a.target_s if a.target_s is not None else (0.1 if a.quick else 1.0)
    min_runs, max_runs = (5, 2000) if a.quick else (10, 20000)
    # The last CPU: measured processes are pinned there, so every framework really runs on one core.
    pin = None if a.no_pin else max(os.sched_getaffinity(0))
    env = H.Env(os.path.abspath(a.work), pin)
    H.clean_work(env.work, keep=(H.LLM_CACHE,))
    started = time.monotonic()
    # The machine may be shared: the load around the run goes into the results beside its numbers.
    load_start = [round(x, 2) for x in os.getloadavg()]
    today = datetime.date.today().isoformat()
    stem = a.name or (today + ("-callgrind" if a.callgrind else "-quick" if a.quick else ""))

    rss_floor = H.build_peak_rss(env)
    H.build_ember_runners(env)
    optimized_ops = H.optimized_ops()
    if any(H.runner_of(fw) == "xnnpack" for fw in frameworks):
        H.build_xnnpack_runner(env)
    if any(H.program_of(fw) in H.CPP_PEERS for fw in frameworks):
        H.build_et_runner(env)
    # Inputs, eager references and (for the public zoo's models) the torch.export programs the peers start from.
    prepared = H.prepare_models(env, names)
    procs = H.start_peer_exports(env, names, frameworks)
    H.log(f"exporting {len(names)} models (Ember here; the peers in their venvs, in parallel)")
    ember_export = H.export_ember(env, names, prepared)
    peer = H.finish_peer_exports(env, procs)
    H.log(f"exports done in {time.monotonic() - started:.0f} s")

    if a.callgrind:
        from bench import callgrind

        result = callgrind.run_all(env, names, frameworks, ember_export, peer)
    else:
        result = measure_all(env, names, frameworks, ember_export, peer, target_s, min_runs, max_runs, optimized_ops)
    result.update(
        date=today,
        machine=H.machine_info(env),
        quick=a.quick,
        mode="callgrind" if a.callgrind else "time",
        settings={
            "target_s": target_s,
            "min_runs": min_runs,
            "max_runs": max_runs,
            "threads": 1,
            "cpp_rounds": H.ROUNDS,
            "rss_floor_kb": rss_floor,
        },
        frameworks={f: {"description": H.FRAMEWORKS[f], "skipped": env.skipped.get(f)} for f in frameworks},
        ember_optimized_ops=optimized_ops,
        # Every model's label, also those outside this run: the goals name the ones they lack.
        model_labels={n: m.label for n, m in MODELS.items()},
        versions=versions(env, peer),
        wall_s=None,
    )
    result["wall_s"] = round(time.monotonic() - started, 1)
    result["machine"]["load_average"] = {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]}

    from bench import report

    os.makedirs(a.out, exist_ok=True)
    json_path = os.path.join(a.out, f"{stem}.json")
    md_path = os.path.join(a.out, f"{stem}.md")
    png_path = os.path.join(a.out, f"{stem}.png")
    if not a.callgrind and not a.no_plot and os.path.exists(env.bench_python):
        r = subprocess.run(
            [env.bench_python, "-m", "bench.plot", "-", png_path],
            input=json.dumps(result),
            cwd=H.ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if r.returncode == 0:
            result["plot"] = os.path.basename(png_path)
        else:
            H.log(f"plot failed: {r.stderr[-1000:]}")
    H.write_results(json_path, md_path, result, report.markdown(result))
    H.log(
        f"wrote {json_path}, {md_path}"
        + (f", {png_path}" if result.get("plot") else "")
        + f" in {result['wall_s']:.0f} s"
    )
    return 0


def versions(env, peer) -> dict:
    import torch

    v = {"torch (Ember's .venv, eager)": torch.__version__}
    if "et" in peer:
        v.update({f"{k} (.venv-executorch)": x for k, x in peer["et"].get("_versions", {}).items()})
    if "onnx" in peer:
        v.update({f"{k} (.venv-bench)": x for k, x in peer["onnx"].get("_versions", {}).items()})
    if "litert" in peer:
        v.update({f"{k} (.venv-litert)": x for k, x in peer["litert"].get("_versions", {}).items()})
    gcc = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()
    v["g++"] = gcc[0] if gcc else None
    return v


def measure_all(env, names, frameworks, ember_export, peer, target_s, min_runs, max_runs, optimized_ops) -> dict:
    models = {}
    for name in names:
        bm = MODELS[name]
        d = os.path.join(env.work, name)
        ee = ember_export[name]
        et = peer.get("et", {}).get(name, {})
        onnx = peer.get("onnx", {}).get(name, {})
        litert = peer.get("litert", {})
        entry = {"label": bm.label, "ops": bm.ops or None, "frameworks": {}}
        # The runners first (the C++ ones and LiteRT's, which speaks their language), in interleaved rounds; then
        # ONNX Runtime and eager, one process each.
        # Both Ember builds run the same .pte: only the kernels registered behind its operators differ.
        jobs = {}
        for fw in [f for f in H.FRAMEWORKS if f in frameworks and f not in env.skipped]:
            program = H.program_of(fw)
            if program == "ember":
                jobs[fw] = os.path.join(d, "ember.pte")
            elif program in H.CPP_PEERS and program not in env.skipped:
                jobs[fw] = et.get(program, {}).get("path")
            elif program == "litert":
                jobs[fw] = litert.get(name, {}).get("path")
        H.log(f"{name}: {', '.join(jobs)} ({H.ROUNDS} rounds)")
        measured = H.measure_cpp(
            {fw: p for fw, p in jobs.items() if p}, env, d, ee["inputs"], target_s, min_runs, max_runs
        )
        measured.update({fw: missing_program(fw, litert.get(name)) for fw, p in jobs.items() if not p})
        for fw in ("ort", "eager"):
            if fw not in frameworks or fw in env.skipped:
                continue
            H.log(f"{name}: {fw}")
            try:
                if fw == "ort":
                    r = H.measure_py(fw, env, name, d, onnx["path"], target_s, min_runs, max_runs)
                    r.update(
                        file_bytes=onnx["onnx_bytes"],
                        export_s=onnx["export_s"],
                        arena_bytes=None,
                        onnx_nodes=onnx["nodes"],
                    )
                else:
                    r = H.measure_py(fw, env, name, d, os.path.join(d, "state_dict.pt"), target_s, min_runs, max_runs)
                    r.update(file_bytes=H.file_size(os.path.join(d, "state_dict.pt")), arena_bytes=None)
                measured[fw] = r
            except Exception as e:  # one framework failing on one model is recorded, not fatal
                measured[fw] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        for fw in [f for f in H.FRAMEWORKS if f in measured]:
            r = measured[fw]
            if "error" in r:
                H.log(f"{name}: {fw} failed: {r['error'][:300]}")
                entry["frameworks"][fw] = r
                continue
            program = H.program_of(fw)
            if H.runner_of(fw) == "xnnpack":
                r.update(file_bytes=et[program]["pte_bytes"], delegates=et[program]["delegates"])
            elif program == "ember":
                r.update(
                    file_bytes=ee["pte_bytes"],
                    export_s=ee["export_s"],
                    arena_lower_bound_bytes=sum(ee["lower_bound"]),
                    operators=ee["operators"],
                )
                if fw == "ember":
                    r["optimized_kernels_used"] = [o for o in ee["operators"] if o in optimized_ops]
            elif program == "litert":
                facts, run = litert[name], H.litert_facts(r["outputs_path"])
                # Not planned ahead: the interpreter's arena is sized at allocate_tensors, and XNNPACK's apart.
                r.update(
                    file_bytes=facts["tflite_bytes"],
                    export_s=facts["convert_s"],
                    arena_bytes=None,
                    pools=None,
                    tflite_operators=facts["operators"],
                    xnnpack=run["xnnpack"],
                    threads=run["threads"],
                    rss_delta_kb=r["maxrss_kb"] - run["rss_before_load_kb"],
                )
            elif program in H.CPP_PEERS:
                facts = et[program]
                # The driver's planned pools are the program's non_const_buffer_sizes; both are recorded.
                r.update(
                    file_bytes=facts["pte_bytes"],
                    export_s=facts["export_s"],
                    non_const_buffer_sizes=facts["planned"],
                    operators=facts["operators"],
                    delegates=facts["delegates"],
                    instructions=facts["instructions"],
                )
                if fw == "et_portable":
                    opt = set(peer["et"].get("_optimized_ops", []))
                    r["optimized_kernels_used"] = sorted(
                        o for o in facts["operators"] if o.split("::")[-1].split(".")[0] in opt
                    )
            r.update(H.compare_outputs(d, r.pop("outputs_path")))
            if bm.ops:
                r["ns_per_op"] = r["median_us"] * 1e3 / bm.ops
            entry["frameworks"][fw] = r
        models[name] = entry
    pybind_cross_check(env, models, peer, target_s)
    return {"models": models}


def missing_program(fw, converted) -> dict:
    """The error of a column whose program is missing: LiteRT's carries the converter's own message (the model did
    not convert), ExecuTorch's says there was no export."""
    if H.program_of(fw) != "litert":
        return {"error": "no ExecuTorch export"}
    error = (converted or {}).get("error", "litert_torch.convert: no result for this model")
    return {"error": error, "conversion_failed": True}


def pybind_cross_check(env, models, peer, target_s):
    """ExecuTorch's programs once more through its Python bindings (bench/et_side.py pybind): a check that
    bench/et_runner measures what ExecuTorch's own Python runtime would, less the bindings' call overhead."""
    pairs = {}
    for name, entry in models.items():
        for fw in H.CPP_PEERS:
            if fw in entry["frameworks"] and "error" not in entry["frameworks"][fw]:
                pte = peer["et"][name][fw]["path"]
                pairs[pte] = (name, fw)
    if not pairs:
        return
    H.log(f"cross-check: {len(pairs)} ExecuTorch programs through its Python bindings")
    args = [env.et_python, "-m", "bench.et_side", "pybind", "--target-s", str(min(target_s, 0.3))]
    args += [f"{pte}:{os.path.join(env.work, name, 'inputs.npz')}" for pte, (name, _) in pairs.items()]
    rc, out, err, _ = H._spawn(env, args, timeout=3600)
    if rc != 0:
        H.log(f"pybind cross-check failed: {err.strip()[-1000:]}")
        return
    for pte, r in json.loads(out.strip().splitlines()[-1]).items():
        name, fw = pairs[pte]
        models[name]["frameworks"][fw]["pybind_median_us"] = r["median_us"]


if __name__ == "__main__":
    sys.exit(main())
