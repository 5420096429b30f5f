"""The benchmark's steps: build the C++ runners (Ember's two builds and ExecuTorch's driver), export every model
for every framework, and measure each (model, framework) pair in a process of its own. Runs in the project's .venv
(torch + exir); the peers' exports and the Python-hosted measurements run in their own venvs as subprocesses.
"""

from __future__ import annotations

import copy
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional

import numpy as np

from bench.pymeasure import plan_runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FRAMEWORKS = {
    "ember": "Ember, default build: runtime/runner (bazel build //:runner) with kernels/optimized (tiled GEMM, "
    "convolution, clamps; Float) registered ahead of the portable kernels, C++ timing loop",
    "ember_portable": "Ember, portable kernels only: the same runner (bazel build //runtime/runner:runner_portable), "
    "same .pte, same C++ timing loop",
    "et_portable": "ExecuTorch 1.5.1, no delegate: the wheel's C++ runtime and CPU kernel library (its optimized "
    "kernels where it has one, else its portable ones) driven by bench/et_runner.cc",
    "et_xnnpack": "ExecuTorch 1.5.1 with the XNNPACK delegate (XnnpackPartitioner), same driver, threadpool of 1",
    "ort": "ONNX Runtime (PyPI), CPUExecutionProvider, 1 intra-op and 1 inter-op thread, all graph optimizations, "
    "timed around session.run from Python",
    "eager": "eager PyTorch, torch.set_num_threads(1), inference_mode, timed around module(*inputs) from Python",
    "ember_2t": "Ember, default build, 2 threads: the same runner and .pte as Ember with --threads 2, pinned to two "
    "CPUs (runtime/threads; kernels/optimized splits its GEMMs, convolutions and large passes)",
    "ember_xnnpack": "Ember + XNNPACK delegate: runtime/runner:runner_all_backends built with --config=xnnpack "
    "(Debian's 2022 XNNPACK, a pthreadpool of 1) running ExecuTorch's XNNPACK .pte (the ET XNNPACK "
    "column's file)",
    "ember_xnnpack_2t": "Ember + XNNPACK delegate, 2 threads: the Ember+XNNPACK runner and .pte with --threads 2 (the "
    "backend's pthreadpool of 2), pinned to two CPUs",
    "et_xnnpack_2t": "ExecuTorch 1.5.1 with the XNNPACK delegate, 2 threads: the ET XNNPACK driver and .pte with a "
    "threadpool of 2, pinned to two CPUs",
    "litert": "LiteRT: litert-torch 0.10.0's .tflite on ai-edge-litert 2.3.0's Interpreter, 1 thread, its default "
    "CPU path (the XNNPACK delegate), timed around interpreter.invoke() from Python (bench/litert_side.py)",
    "litert_2t": "LiteRT, 2 threads: the same .tflite and Interpreter with num_threads=2 (XNNPACK's threadpool of 2), "
    "pinned to two CPUs",
}

# Ember's two builds of runtime/runner, both always measured: framework -> (Bazel target, binary under bazel-bin).
EMBER_RUNNERS = {
    "ember": ("//:runner", "runtime/runner/runner"),
    "ember_portable": ("//runtime/runner:runner_portable", "runtime/runner/runner_portable"),
}
CPP_PEERS = ("et_portable", "et_xnnpack")
# LiteRT's columns: Python-hosted (bench/litert_side.py in .venv-litert), one .tflite per model for both.
LITERT = ("litert", "litert_2t")
# Columns measured only when --frameworks names them: another runner or thread count on a program the default
# columns already have, or a peer whose venv is large (LiteRT). framework -> (runner: an EMBER_RUNNERS key,
# "xnnpack" for the --config=xnnpack runner, "et" for bench/et_runner or "litert" for bench/litert_side.py;
# program: "ember" for Ember's .pte, the CPP_PEERS column whose .pte it runs, or "litert" for the .tflite;
# threads, which is also the number of CPUs the process is pinned to).
OPTIONAL = {
    "ember_2t": ("ember", "ember", 2),
    "ember_xnnpack": ("xnnpack", "et_xnnpack", 1),
    "ember_xnnpack_2t": ("xnnpack", "et_xnnpack", 2),
    "et_xnnpack_2t": ("et", "et_xnnpack", 2),
    "litert": ("litert", "litert", 1),
    "litert_2t": ("litert", "litert", 2),
}


def runner_of(fw: str) -> str:
    return OPTIONAL[fw][0] if fw in OPTIONAL else fw if fw in EMBER_RUNNERS else "et"


def program_of(fw: str) -> str:
    """Whose program a column runs: "ember", or the ExecuTorch column that exported it."""
    return OPTIONAL[fw][1] if fw in OPTIONAL else "ember" if fw in EMBER_RUNNERS else fw


class Env:
    """Where things are: the interpreters of the peer venvs, the work folder, the CPU the runs are pinned to."""

    def __init__(self, work: str, pin_cpu: Optional[int]):
        self.work = work
        self.python = sys.executable
        self.et_python = os.environ.get("EMBER_ET_PYTHON", os.path.join(ROOT, ".venv-executorch", "bin", "python3"))
        self.bench_python = os.environ.get("EMBER_BENCH_PYTHON", os.path.join(ROOT, ".venv-bench", "bin", "python3"))
        self.litert_python = os.environ.get("EMBER_LITERT_PYTHON", os.path.join(ROOT, ".venv-litert", "bin", "python3"))
        self.pin_cpu = pin_cpu
        # Several CPUs instead of pin_cpu (a multi-threaded measurement): with_cpus() sets it on a copy.
        self.pin_cpus: Optional[frozenset] = None
        self.ember_runners: Dict[str, str] = {}  # framework (EMBER_RUNNERS) -> the runner's copy in work
        self.et_runner: Optional[str] = None
        self.peak_rss: Optional[str] = None
        self.skipped: Dict[str, str] = {}
        self.last_spawn: dict = {}

    def preexec(self):
        if self.pin_cpus is not None:
            cpus = set(self.pin_cpus)
            return lambda: os.sched_setaffinity(0, cpus)
        if self.pin_cpu is None:
            return None
        cpu = self.pin_cpu
        return lambda: os.sched_setaffinity(0, {cpu})

    def with_cpus(self, cpus) -> "Env":
        """This environment with its processes pinned to the CPUs given (None: not pinned), sharing everything else."""
        other = copy.copy(self)
        other.pin_cpu, other.pin_cpus = None, (frozenset(cpus) if cpus is not None else None)
        return other


_T0 = time.monotonic()


def log(msg: str):
    print(f"bench: [{time.monotonic() - _T0:6.1f} s] {msg}", file=sys.stderr, flush=True)


def run(args, timeout=1800, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


# --- machine ---------------------------------------------------------------------------------------------------


def machine_info(env: Env) -> dict:
    cpu = None
    try:
        for line in run(["lscpu"], timeout=30).stdout.splitlines():
            if line.startswith("Model name:"):
                cpu = line.split(":", 1)[1].strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    if cpu is None and os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.M)
            cpu = m.group(1).strip() if m else None
    commit = run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, timeout=30).stdout.strip() or None
    dirty = bool(run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, timeout=30).stdout.strip())
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "machine": platform.machine(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "pinned_cpu": env.pin_cpu,
        "git_commit": commit,
        "git_dirty": dirty,
    }


# --- builds ----------------------------------------------------------------------------------------------------


def build_peak_rss(env: Env):
    """bench/peak_rss.c, static when the C library allows it (a smaller floor under every RSS it reports)."""
    out = os.path.join(env.work, "peak_rss")
    src = os.path.join(ROOT, "bench", "peak_rss.c")
    r = run(["gcc", "-O2", "-static", src, "-o", out], timeout=300)
    if r.returncode != 0:
        r = run(["gcc", "-O2", src, "-o", out], timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"bench: bench/peak_rss.c did not build:\n{r.stderr[-2000:]}")
    env.peak_rss = out
    rc, _, _, floor = _spawn(env, ["true"], timeout=60)
    return floor


def build_ember_runners(env: Env):
    """Both Ember runners in one `bazel build`, so they come from the same sources and configuration."""
    targets = [t for t, _ in EMBER_RUNNERS.values()]
    log(f"bazel build {' '.join(targets)}")
    r = run(["bazel", "build", *targets], cwd=ROOT, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"bench: bazel build {' '.join(targets)} failed:\n{r.stderr[-3000:]}")
    # `bazel info` names this configuration's output folder; bazel-bin may point at another platform's build.
    bin_dir = run(["bazel", "info", "bazel-bin"], cwd=ROOT, timeout=600).stdout.strip()
    for fw, (_, binary) in EMBER_RUNNERS.items():
        # A copy: a later build in this workspace (another manifest, another engineer) must not change it under us.
        env.ember_runners[fw] = os.path.join(env.work, f"{fw}_runner")
        shutil.copy2(os.path.join(bin_dir, binary), env.ember_runners[fw])


def build_xnnpack_runner(env: Env):
    """runner_all_backends with the XnnpackBackend (--config=xnnpack: its own output tree), for ember_xnnpack."""
    if not os.path.exists("/usr/include/xnnpack.h"):
        env.skipped["ember_xnnpack"] = "Debian's libxnnpack-dev is not installed (./setup.sh installs it)"
        return
    target = "//runtime/runner:runner_all_backends"
    log(f"bazel build --config=xnnpack {target}")
    r = run(["bazel", "build", "--config=xnnpack", target], cwd=ROOT, timeout=3600)
    if r.returncode != 0:
        env.skipped["ember_xnnpack"] = f"bazel build --config=xnnpack {target} failed: {r.stderr[-800:]}"
        return
    bin_dir = run(["bazel", "info", "--config=xnnpack", "bazel-bin"], cwd=ROOT, timeout=600).stdout.strip()
    env.ember_runners["xnnpack"] = os.path.join(env.work, "xnnpack_runner")
    shutil.copy2(os.path.join(bin_dir, "runtime", "runner", "runner_all_backends"), env.ember_runners["xnnpack"])


def env_for(env: Env, fw: str) -> Env:
    """The environment a framework's processes run in: pinned to one CPU, or for a multi-threaded Ember column to
    that CPU and as many others as it has threads (unpinned if the run is)."""
    cpus = OPTIONAL.get(fw, (None, None, 1))[2]
    if cpus == 1 or env.pin_cpu is None:
        return env
    others = sorted(c for c in os.sched_getaffinity(0) if c != env.pin_cpu)
    return env.with_cpus([env.pin_cpu, *others[: cpus - 1]])


def optimized_ops() -> List[str]:
    """The operators kernels/optimized has a Float kernel for ("relu.out", ...), read from its manifest when the
    runners are built, so the report can say which of a program's operators the two Ember builds run differently."""
    # The codegen's own reader: a manifest entry names its operator by `func:` (a PyTorch schema) or `op:` (one of
    # schema/operators.yaml), and only the manifest reader knows both spellings.
    from codegen.manifest import load_manifest
    from schema import scalar_types

    decls = load_manifest(
        os.path.join(ROOT, "kernels", "optimized", "kernels.yaml"),
        namespace="ember::optimized",
        library="kernels/optimized",
    )
    # Float, and int8 for the quantized ops (ember_quantized::conv2d ...) and int8 pools.
    numbers = {scalar_types.BY_NAME["Float"].number, scalar_types.BY_NAME["Char"].number}
    # Names as kernel_calls() gives them: without the namespace ("convolution_clamp.out", not "ember::...").
    return sorted({d.op.split("::")[-1] for d in decls if numbers & set(d.dtypes)})


def executorch_package(env: Env) -> Optional[str]:
    r = run(
        [
            env.et_python,
            "-c",
            "import os, executorch.exir as e; print(os.path.dirname(os.path.dirname(os.path.abspath(e.__file__))))",
        ],
        timeout=600,
    )
    return r.stdout.strip() if r.returncode == 0 else None


def build_et_runner(env: Env):
    """bench/et_runner.cc against the wheel's headers and shared libraries (as its CMake config describes them)."""
    if not os.path.exists(env.et_python):
        for fw in CPP_PEERS:
            env.skipped[fw] = f"no ExecuTorch venv at {env.et_python} (tools/setup_executorch_venv.sh)"
        return
    pkg = executorch_package(env)
    if pkg is None:
        for fw in CPP_PEERS:
            env.skipped[fw] = f"executorch does not import in {env.et_python}"
        return
    out = os.path.join(env.work, "et_runner")
    lib = os.path.join(pkg, "lib")
    cmd = [
        "g++",
        "-std=c++17",
        "-O2",
        "-DC10_USING_CUSTOM_GENERATED_MACROS",
        "-DET_EVENT_TRACER_ENABLED",
        "-DET_USE_THREADPOOL",
        "-I",
        os.path.join(pkg, "include"),
        "-I",
        os.path.join(pkg, "include", "executorch", "runtime", "core", "portable_type", "c10"),
        "-Wno-deprecated-declarations",
        os.path.join(ROOT, "bench", "et_runner.cc"),
        "-o",
        out,
        "-L",
        lib,
        # Kernels and the XNNPACK backend register from their libraries' initializers: link them even unused.
        "-Wl,--no-as-needed",
        "-lexecutorch",
        "-lexecutorch_kernels_optimized",
        "-lexecutorch_backend_xnnpack",
        "-lexecutorch_threadpool",
        "-Wl,--as-needed",
        f"-Wl,-rpath,{lib}",
    ]
    log("g++ bench/et_runner.cc (ExecuTorch wheel's runtime)")
    r = run(cmd, timeout=600)
    if r.returncode != 0:
        for fw in CPP_PEERS:
            env.skipped[fw] = f"bench/et_runner.cc did not build: {r.stderr[-800:]}"
        return
    env.et_runner = out


# --- exports ---------------------------------------------------------------------------------------------------


def prepare_models(env: Env, names: List[str]) -> dict:
    """Builds each model once, here: the inputs, eager outputs and weights every framework shares, and for a model
    whose definition needs the public zoo's libraries (torchvision, transformers: this venv only) its torch.export
    program, saved as program.pt2 for the peers' venvs. Returns name -> (module, inputs, ExportedProgram or None)."""
    import torch

    from bench.models import MODELS, program_path, save_calibration

    prepared = {}
    for name in names:
        module, args = MODELS[name].build()
        d = os.path.join(env.work, name)
        os.makedirs(d, exist_ok=True)
        with torch.no_grad():
            out = module(*args)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        np.savez(os.path.join(d, "inputs.npz"), **{f"input_{i}": x.numpy() for i, x in enumerate(args)})
        np.savez(os.path.join(d, "eager_ref.npz"), **{f"output_{i}": o.numpy() for i, o in enumerate(outs)})
        for i, x in enumerate(args):
            x.contiguous().numpy().tofile(os.path.join(d, f"input_{i}.bin"))
        torch.save(module.state_dict(), os.path.join(d, "state_dict.pt"))
        if MODELS[name].int8:
            save_calibration(env.work, name, args)
        ep = None
        if MODELS[name].needs_zoo_libs:
            t0 = time.perf_counter()
            ep = torch.export.export(module, args)
            torch.export.save(ep, program_path(env.work, name))
            log(f"{name}: torch.export for the peers in {time.perf_counter() - t0:.0f} s")
        prepared[name] = (module, args, ep, [list(o.shape) for o in outs])
    return prepared


def export_ember(env: Env, names: List[str], prepared: dict) -> dict:
    """Ember's export of each model (from prepare_models: the module, or the program the peers also start from)."""
    import torch

    import exir
    from bench.models import MODELS, calibration

    report = {}
    for name in names:
        module, args, ep, out_shapes = prepared[name]
        d = os.path.join(env.work, name)
        t0 = time.perf_counter()
        # Convolution + ReLU6 as one kernel call, as XNNPACK fuses them inside its delegate. Opt-in in exir because
        # the fused operator is Ember's own: this .pte runs on Ember's runners, not on ExecuTorch's runtime.
        # And dense 3x3 convolutions as Winograd F(4x4, 3x3) with filters transformed at export (Ember's own too).
        config = exir.ExecutorchBackendConfig(fuse_activations=True, winograd=True)
        if MODELS[name].int8:
            # Ember's quantizer (exir.quantization): its int8 kernels take the conv + activation pairs whole.
            from exir.quantization import quantize

            ep = quantize(module, args, calibration(env.work, name)).exported_program
        prog = exir.to_edge(ep if ep is not None else torch.export.export(module, args)).to_executorch(config)
        pte = os.path.join(d, "ember.pte")
        prog.save(pte)
        elapsed = time.perf_counter() - t0
        pools = prog.reports["forward"].pools
        report[name] = {
            "export_s": elapsed,
            "pte_bytes": os.path.getsize(pte),
            "planned": [p.planned_bytes for p in pools],
            "lower_bound": [p.lower_bound_bytes for p in pools],
            "inputs": len(args),
            "outputs": out_shapes,
            "operators": kernel_calls(prog.program, "forward"),
        }
    return report


def kernel_calls(program, method: str) -> Dict[str, int]:
    """How many kernel calls the method makes per operator ("relu.out": 50), as the runtime looks them up."""
    from schema import program as S

    plan = next(p for p in program.execution_plan if p.name == method)
    ops = [f"{o.name.split('::')[-1]}.{o.overload}" if o.overload else o.name.split("::")[-1] for o in plan.operators]
    counts: Dict[str, int] = {}
    for ins in plan.chains[0].instructions if plan.chains else []:
        if isinstance(ins.instr_args, S.KernelCall):
            op = ops[ins.instr_args.op_index]
            counts[op] = counts.get(op, 0) + 1
    return dict(sorted(counts.items()))


def start_peer_exports(env: Env, names: List[str], frameworks: List[str]):
    """ExecuTorch's, ONNX's and LiteRT's exports, started in the background (they only export; nothing is timed yet)."""
    procs = {}
    models = ",".join(names)
    if env.et_runner and any(program_of(fw) in CPP_PEERS for fw in frameworks):
        d = os.path.join(env.work, "_et")
        procs["et"] = subprocess.Popen(
            [env.et_python, "-m", "bench.et_side", "export", "--out", d, "--models", models, "--work", env.work],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    if "ort" not in frameworks:
        pass
    elif os.path.exists(env.bench_python):
        d = os.path.join(env.work, "_onnx")
        procs["onnx"] = subprocess.Popen(
            [env.bench_python, "-m", "bench.onnx_export", "--out", d, "--models", models, "--work", env.work],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    else:
        env.skipped["ort"] = f"no benchmark venv at {env.bench_python} (tools/setup_bench_venv.sh)"
    litert = [fw for fw in frameworks if program_of(fw) == "litert"]
    if not litert:
        pass
    elif os.path.exists(env.litert_python):
        d = os.path.join(env.work, "_litert")
        procs["litert"] = subprocess.Popen(
            [
                env.litert_python,
                "-m",
                "bench.litert_side",
                "convert",
                "--out",
                d,
                "--models",
                models,
                "--work",
                env.work,
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    else:
        for fw in litert:
            env.skipped[fw] = f"no LiteRT venv at {env.litert_python} (tools/setup_litert_venv.sh)"
    return procs


# The columns each background export feeds (skipped together when it fails as a whole).
EXPORT_COLUMNS = {"et": CPP_PEERS, "onnx": ("ort",), "litert": LITERT}


def finish_peer_exports(env: Env, procs) -> dict:
    reports = {}
    for key, p in procs.items():
        out, err = p.communicate(timeout=3600)
        if p.returncode != 0:
            reason = f"{key} export failed: {err.strip()[-1500:]}"
            for fw in EXPORT_COLUMNS[key]:
                env.skipped[fw] = reason
            log(reason)
            continue
        reports[key] = json.loads(out.strip().splitlines()[-1])
    return reports


# --- results ---------------------------------------------------------------------------------------------------


def write_results(json_path: str, md_path: str, result: dict, md: str):
    """Every number to json_path, the report to md_path and to stdout."""
    with open(json_path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(md_path, "w") as f:
        f.write(md)
    print(md)


# --- measurement -----------------------------------------------------------------------------------------------


def _spawn(env: Env, args, timeout):
    """Runs args in a process of its own, started by bench/peak_rss (pinned to one CPU when asked); returns
    (exit code, stdout, stderr, the process's ru_maxrss in KiB). The process's CPU time (user + system, every
    thread) and wall time are left in env.last_spawn."""
    out_path = os.path.join(env.work, "_stdout.txt")
    err_path = os.path.join(env.work, "_stderr.txt")
    rss_path = os.path.join(env.work, "_rss.txt")
    if os.path.exists(rss_path):
        os.remove(rss_path)
    wall0 = time.perf_counter()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        try:
            rc = subprocess.run(
                [env.peak_rss, rss_path, *args],
                cwd=ROOT,
                stdout=out,
                stderr=err,
                preexec_fn=env.preexec(),
                timeout=timeout,
            ).returncode
        except subprocess.TimeoutExpired:
            rc = -9
    env.last_spawn = {"wall_s": time.perf_counter() - wall0, "cpu_s": None}
    maxrss = None
    if os.path.exists(rss_path):
        with open(rss_path) as f:
            text = f.read()
        m = re.match(r"maxrss_kb=(\d+) exit=(-?\d+)", text)
        if m:
            maxrss = int(m.group(1))
        cpu = re.search(r"cpu_us=(\d+)", text)
        if cpu:
            env.last_spawn["cpu_s"] = int(cpu.group(1)) / 1e6
    with open(out_path) as f, open(err_path) as g:
        return rc, f.read(), g.read(), maxrss


_TIME_RE = {
    "mean_min": re.compile(r"^time: (\d+) runs, mean ([\d.]+) us, min ([\d.]+) us$", re.M),
    "median": re.compile(r"^time: (\d+) warm-up runs, min ([\d.]+) us, median ([\d.]+) us, p90 ([\d.]+) us$", re.M),
    "load": re.compile(r"^time: load ([\d.]+) us", re.M),
    "pool": re.compile(r"^memory: pool \d+: (\d+) bytes planned$", re.M),
    "method_alloc": re.compile(r"^memory: method allocator: (\d+) bytes used", re.M),
}


def parse_runner(stdout: str) -> dict:
    mm, med, load = (_TIME_RE[k].search(stdout) for k in ("mean_min", "median", "load"))
    if not (mm and med and load):
        raise ValueError(f"runner output without timing lines:\n{stdout[-1500:]}")
    alloc = _TIME_RE["method_alloc"].search(stdout)
    return {
        "runs": int(mm.group(1)),
        "mean_us": float(mm.group(2)),
        "min_us": float(med.group(2)),
        "warmup": int(med.group(1)),
        "median_us": float(med.group(3)),
        "p90_us": float(med.group(4)),
        "load_us": float(load.group(1)),
        "pools": [int(b) for b in _TIME_RE["pool"].findall(stdout)],
        "method_allocator_bytes": int(alloc.group(1)) if alloc else None,
    }


def _runner_args(fw: str, env: Env, model_dir: str, pte: str, n_inputs: int, out_dir: str):
    runner = runner_of(fw)
    threads = OPTIONAL.get(fw, (None, None, 1))[2]
    if runner == "litert":  # bench/litert_side.py prints the runners' timing lines and writes their output files
        inputs = os.path.join(model_dir, "inputs.npz")
        return [env.litert_python, "-m", "bench.litert_side", "measure", pte, inputs, "--threads", str(threads)] + [
            "--output-dir",
            out_dir,
        ]
    args = [env.et_runner if runner == "et" else env.ember_runners[runner], pte, "--output-dir", out_dir]
    for i in range(n_inputs):
        args += ["--input", os.path.join(model_dir, f"input_{i}.bin")]
    return args + (
        ["--threads", str(threads)]
        if runner == "et"
        else ["--print", "0"] + (["--threads", str(threads)] if threads > 1 else [])
    )


LOAD_SAMPLES = 7
ROUNDS = 3


def _median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2]


def measure_cpp(
    jobs: Dict[str, str], env: Env, model_dir: str, n_inputs: int, target_s: float, min_runs: int, max_runs: int
) -> Dict[str, dict]:
    """Measures one model on the runners (jobs: framework -> .pte, or .tflite for LiteRT's columns, whose
    bench/litert_side.py speaks the runners' language), in ROUNDS interleaved rounds (Ember, Ember portable,
    ExecuTorch portable, ExecuTorch XNNPACK, ..., LiteRT, then again), so that a burst of load from elsewhere on
    a shared machine falls on all of them alike. Each round is a process of its own doing a third of the planned
    runs; the median and p90 reported are the medians of the rounds' medians and p90s. Returns framework ->
    result (or error)."""
    base, plans, rounds, loads, results = {}, {}, {}, {}, {}

    def spawn(fw, extra, timeout=3600):
        rc, out, err, maxrss = _spawn(env_for(env, fw), base[fw] + extra, timeout=timeout)
        if rc != 0:
            raise RuntimeError(f"{os.path.basename(base[fw][0])} exited {rc}: {err.strip()[-1500:]}")
        return parse_runner(out), maxrss

    for fw, pte in jobs.items():
        out_dir = os.path.join(model_dir, f"out_{fw}")
        os.makedirs(out_dir, exist_ok=True)
        base[fw] = _runner_args(fw, env, model_dir, pte, n_inputs, out_dir)
        try:
            # A probe of 3 runs (after one warm-up) plans the measurement, so that it takes about target_s.
            probe, _ = spawn(fw, ["--runs", "3", "--warmup", "1"], timeout=1800)
            runs, warmup = plan_runs(probe["median_us"], target_s, min_runs, max_runs)
            plans[fw] = (probe["median_us"], -(-runs // ROUNDS), max(1, warmup // ROUNDS))
            rounds[fw], loads[fw] = [], [probe["load_us"]]
        except Exception as e:  # recorded for this framework; the others go on
            results[fw] = {"error": f"{type(e).__name__}: {e}"[:2000]}
    for _ in range(ROUNDS):
        for fw in list(plans):
            try:
                _, runs, warmup = plans[fw]
                r, maxrss = spawn(fw, ["--runs", str(runs), "--warmup", str(warmup)])
                r["maxrss_kb"] = maxrss
                rounds[fw].append(r)
                loads[fw].append(r["load_us"])
            except Exception as e:
                results[fw] = {"error": f"{type(e).__name__}: {e}"[:2000]}
                del plans[fw]
    for fw, (estimate_us, _, _) in plans.items():
        try:
            # Load time is one sample per process, and tens of µs: the median of up to LOAD_SAMPLES processes
            # (extra ones run once, and only while a run is cheap).
            while len(loads[fw]) < LOAD_SAMPLES and estimate_us < 100_000:
                loads[fw].append(spawn(fw, ["--runs", "1"], timeout=600)[0]["load_us"])
        except Exception as e:
            results[fw] = {"error": f"{type(e).__name__}: {e}"[:2000]}
            continue
        rs = rounds[fw]
        runs = sum(r["runs"] for r in rs)
        results[fw] = {
            "median_us": _median([r["median_us"] for r in rs]),
            "p90_us": _median([r["p90_us"] for r in rs]),
            "min_us": min(r["min_us"] for r in rs),
            "mean_us": sum(r["mean_us"] * r["runs"] for r in rs) / runs,
            "runs": runs,
            "warmup": sum(r["warmup"] for r in rs),
            "rounds": len(rs),
            "round_medians_us": [r["median_us"] for r in rs],
            "load_us": _median(loads[fw]),
            "load_samples_us": loads[fw],
            "pools": rs[0]["pools"],
            "arena_bytes": sum(rs[0]["pools"]),
            "method_allocator_bytes": rs[0]["method_allocator_bytes"],
            "maxrss_kb": max(r["maxrss_kb"] for r in rs if r["maxrss_kb"] is not None),
            "outputs_path": os.path.join(model_dir, f"out_{fw}"),
        }
    return results


def measure_py(
    fw: str, env: Env, name: str, model_dir: str, model_file: str, target_s: float, min_runs: int, max_runs: int
) -> dict:
    out_npz = os.path.join(model_dir, f"out_{fw}.npz")
    common = ["--target-s", str(target_s), "--min-runs", str(min_runs), "--max-runs", str(max_runs), "--out", out_npz]
    inputs = os.path.join(model_dir, "inputs.npz")
    if fw == "ort":
        args = [env.bench_python, "-m", "bench.pymeasure", "ort", model_file, inputs] + common
    else:
        args = [env.python, "-m", "bench.pymeasure", "eager", name, model_file, inputs] + common
    rc, out, err, maxrss = _spawn(env, args, timeout=3600)
    if rc != 0:
        raise RuntimeError(f"{fw} measurement exited {rc}: {err.strip()[-1500:]}")
    r = json.loads(out.strip().splitlines()[-1])
    r["maxrss_kb"] = maxrss
    # The Python process's own peak before the model was loaded (interpreter, framework imports) is set apart.
    r["rss_delta_kb"] = maxrss - r.pop("rss_before_load_kb") if maxrss is not None else None
    r["outputs_path"] = out_npz
    return r


def litert_facts(outputs_path: str) -> dict:
    """What bench/litert_side.py measure left beside its outputs: threads, its peak RSS before loading the model,
    and which operators XNNPACK took."""
    with open(os.path.join(outputs_path, "litert.json")) as f:
        return json.load(f)


def compare_outputs(model_dir: str, outputs_path: str) -> dict:
    """Largest absolute difference from eager's outputs (computed once at export), and whether it is within
    1e-3 of the reference's scale (fp32 kernels sum in other orders; BN is folded into convolutions)."""
    ref = np.load(os.path.join(model_dir, "eager_ref.npz"))
    worst, scale = 0.0, 1.0
    for i in range(len(ref.files)):
        want = ref[f"output_{i}"]
        if outputs_path.endswith(".npz"):
            got = np.load(outputs_path)[f"output_{i}"]
        else:
            got = np.fromfile(os.path.join(outputs_path, f"output_{i}.bin"), dtype=want.dtype)
        got = got.reshape(want.shape)
        worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - want))))
        scale = max(scale, float(np.max(np.abs(want))))
    return {"max_abs_err": worst, "matches_eager": worst <= 1e-3 * scale}


def file_size(path: str) -> Optional[int]:
    return os.path.getsize(path) if path and os.path.exists(path) else None


# The LLM benchmark keeps ExecuTorch's exports (about 20 minutes to remake) in this folder of --work; the model
# benchmark empties --work around it.
LLM_CACHE = "llm-cache"


def clean_work(work: str, keep: tuple = ()):
    """Empties `work` except the entries named in `keep` (caches that take long to remake, such as the LLM
    benchmark's ExecuTorch exports, which live in the same --work folder as the model benchmark's scratch)."""
    os.makedirs(work, exist_ok=True)
    for name in os.listdir(work):
        if name in keep:
            continue
        path = os.path.join(work, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
