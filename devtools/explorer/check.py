"""`ember explore`'s overlays for the programs issue #39 names, without a browser: MobileNetV2 plain and lowered to
XNNPACK, the control-flow models cond_gate and while_refine, and the small LLM (`ember llm export` of a seeded
Llama config). For each: the export, a real ETDump of one run (ember.runtime's traced extension, as `ember profile
--engine python --inputs` takes it), then the node data of all three overlays through the CLI's own path
(ember.cli.explore.prepare: `ember explore P.pte --etdump T.etdp --model NAME --inputs X.pt`, or `--llm 'FLAGS'`),
checked: each overlay non-empty and keyed on node ids of the adapter's graph, every delegate call timed and
compared, the numeric overlay's relative errors finite and at most NUMERIC_LIMIT (all programs are fp32).

    python -m devtools.explorer.check            # full size: mobilenet_v2 (224x224), the LLM at 4 layers, dim 256
    python -m devtools.explorer.check --small    # CI's sizes: mobilenet_v2_005_96, a 2-layer dim-64 LLM
    python -m devtools.explorer.check --keep out/explore   # keep the .pte, .etdp and inputs to open them after

A delegated program's trace and debug run need the runtime with the XNNPACK backend and the event tracer:
`--config=xnnpack_profiling` builds both extensions (built on first use unless EMBER_RUNTIME_LIB and
EMBER_RUNTIME_PROFILING_LIB name them), and this sets those variables for the process.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import math
import os
import re
import shlex
import sys
import tempfile
import time
from typing import Dict, List, Optional

# The numeric overlay's bound for these fp32 programs: devtools.debug.compare's relative error (max |program -
# eager| over max(1, max |eager|)) per operator. Ember's kernels stay within compare's FLOAT_TOLERANCE (1e-4);
# XNNPACK's convolutions sum in another order (and with FMA), measured below 2e-5 on mobilenet_v2.
NUMERIC_LIMIT = 1e-4

MEMORY = "memory: planned bytes written"
TIME = ("time: mean us", "time: share of run %")
NUMERIC = "numeric: relative error vs eager"


@dataclasses.dataclass
class Program:
    name: str  # what the line says
    model: Optional[str] = None  # a zoo model (ember export MODEL)
    flags: tuple = ()  # ember export's flags
    llm: Optional[dict] = None  # a Llama config's fields (ember llm export --model config.json)
    max_seq_len: int = 0
    tokens: int = 0  # the LLM call's prompt length


# Two layers, grouped-query attention, 64 wide: tests/llm's tiny Llama.
_TINY_LLAMA = dict(
    vocab_size=320,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
)
_SMALL_LLAMA = dict(
    vocab_size=2048,
    hidden_size=256,
    intermediate_size=704,
    num_hidden_layers=4,
    num_attention_heads=8,
    num_key_value_heads=4,
)


def programs(small: bool) -> List[Program]:
    mnv2 = "mobilenet_v2_005_96" if small else "mobilenet_v2"
    return [
        Program(mnv2, mnv2),
        Program(f"{mnv2} xnnpack", mnv2, ("--delegate", "xnnpack")),
        Program("cond_gate", "cond_gate"),
        Program("while_refine", "while_refine"),
        Program(
            "llm",
            llm=_TINY_LLAMA if small else _SMALL_LLAMA,
            max_seq_len=32 if small else 128,
            tokens=5 if small else 16,
        ),
    ]


def use_xnnpack_runtime(traced: bool = True) -> None:
    """Points ember.runtime at the --config=xnnpack_profiling extensions (XnnpackBackend and event tracer), built
    when missing, unless EMBER_RUNTIME_LIB / EMBER_RUNTIME_PROFILING_LIB already say which. Call it before the
    process loads the runtime. traced=False: the --config=xnnpack extension only (the numeric overlay's debug run
    needs the backend), for check(..., delegate_trace="written"), which then writes the delegated program's trace."""
    from ember import _tools

    wanted = [("EMBER_RUNTIME_LIB", "_ember_runtime.so")]
    if traced:
        wanted.append(("EMBER_RUNTIME_PROFILING_LIB", "_ember_runtime_profiling.so"))
    config = "--config=xnnpack_profiling" if traced else "--config=xnnpack"
    for var, so in wanted:
        if not os.environ.get(var):
            os.environ[var] = _tools.find_extension(f"//runtime/python:{so}", [config])


def _export(p: Program, out: str):
    """Writes the .pte (and its source map) and the inputs file; returns (pte, inputs file, explore's flags)."""
    import torch

    stem = os.path.join(out, p.name.replace(" ", "_"))
    pte, inputs_file = f"{stem}.pte", f"{stem}.inputs.pt"
    if p.llm is not None:
        from ember.cli import llm

        config = os.path.join(out, "llm_config.json")
        with open(config, "w") as f:
            json.dump({"model_type": "llama", "bos_token_id": 1, "eos_token_id": 2, **p.llm}, f)
        flags = f"--model {shlex.quote(config)} --max-seq-len {p.max_seq_len} --seed 0"
        with contextlib.redirect_stdout(io.StringIO()):  # its summary and memory report
            code = llm.main(["export", *shlex.split(flags), "-o", pte, "-q"], "ember llm")
        if code != 0:
            raise RuntimeError(f"ember llm export {flags} failed")
        g = torch.Generator().manual_seed(0)
        tokens = torch.randint(0, p.llm["vocab_size"], (1, p.tokens), generator=g)
        torch.save((tokens, torch.tensor([0])), inputs_file)
        return pte, inputs_file, ["--llm", flags]
    from ember.cli.export import add_export_options, export
    from ember.cli.progress import Progress

    ap = argparse.ArgumentParser()
    add_export_options(ap)
    args = ap.parse_args([p.model, *p.flags])
    prog, inputs, _ = export(args, Progress("check", quiet=True))
    prog.save(pte, etrecord=True)
    torch.save(tuple(inputs["forward"]), inputs_file)
    return pte, inputs_file, ["--model", p.model, *p.flags]


def _trace(pte: str, inputs_file: str, etdp: str) -> None:
    """One warm-up run, then one traced (ember profile --engine python --inputs FILE --trace ETDP)."""
    import torch

    from ember import runtime

    loaded = torch.load(inputs_file)
    inputs = list(loaded) if isinstance(loaded, (tuple, list)) else [loaded]
    program = runtime.load(pte)
    program.run("forward", inputs)
    # Room for a loop's iterations (the default holds one event per instruction).
    _, trace = program.run("forward", inputs, profile=True, profile_events=1 << 16)
    if trace.dropped:
        raise RuntimeError(f"{pte}: the trace dropped {trace.dropped} events")
    trace.save(etdp)


def written_trace(pte: str) -> bytes:
    """Two runs of the method `forward` with every instruction timed 1 us, as the runtime writes an ETDump
    (raw_trace.to_etdump): the time overlay's whole path but the measuring, for a delegated program where no build
    with both the backend and the event tracer is at hand (CI's small check and the browser test; the full check
    measures)."""
    from devtools import etdump, raw_trace
    from exir.serialize import deserialize_pte

    with open(pte, "rb") as f:
        plan = next(x for x in deserialize_pte(f.read()).program.execution_plan if x.name == "forward")
    n = len(plan.chains[0].instructions)
    runs = []
    for r in range(2):
        events = [etdump.ProfileEvent("Method::execute", 0, -1, 0, 1000 * (n + 1))]
        events += [etdump.ProfileEvent("instruction", 0, i, 1000 * i, 1000 * (i + 1)) for i in range(n)]
        runs.append(etdump.Run(f"forward (run {r})", events))
    return raw_trace.to_etdump(runs)


def check(p: Program, out: str, delegate_trace: str = "run") -> Dict[str, object]:
    """Exports, traces and explores `p`; returns what it measured. Raises AssertionError naming what is wrong.
    delegate_trace: "run" traces every program on the runtime; "written" writes a delegated program's trace
    (written_trace) instead, for use_xnnpack_runtime(traced=False)."""
    from devtools.explorer.main import EmberPteAdapter
    from ember.cli import explore
    from exir.serialize import deserialize_pte
    from schema import program as S

    t0 = time.perf_counter()
    pte, inputs_file, numeric_flags = _export(p, out)
    etdp = pte[: -len(".pte")] + ".etdp"
    if delegate_trace == "written" and "xnnpack" in p.flags:
        with open(etdp, "wb") as f:
            f.write(written_trace(pte))
    else:
        _trace(pte, inputs_file, etdp)
    t1 = time.perf_counter()
    _, data, _ = explore.prepare([pte, "--etdump", etdp, "--inputs", inputs_file, *numeric_flags])
    t2 = time.perf_counter()
    graph = next(g for g in EmberPteAdapter().convert(pte, {})["graphs"] if g.id == "forward")
    ids = {n.id for n in graph.nodes}
    with open(pte, "rb") as f:
        plan = next(x for x in deserialize_pte(f.read()).program.execution_plan if x.name == "forward")
    instrs = plan.chains[0].instructions
    delegates = {f"i{k}" for k, ins in enumerate(instrs) if isinstance(ins.instr_args, S.DelegateCall)}
    for name in (MEMORY, *TIME, NUMERIC):
        assert name in data, f"{p.name}: no '{name}' overlay (it has {sorted(data)})"
        results = data[name].graphsData["forward"].results
        assert results, f"{p.name}: the '{name}' overlay is empty"
        stray = sorted(set(results) - ids)
        assert not stray, f"{p.name}: '{name}' names nodes the graph has not: {stray[:5]}"
        values = [r.value for r in results.values()]
        assert all(math.isfinite(v) and v >= 0 for v in values), f"{p.name}: '{name}' has {values}"
        if name != NUMERIC:
            # Every delegate call writes planned memory and is one timed instruction.
            assert delegates <= set(results), f"{p.name}: '{name}' misses delegate calls {delegates - set(results)}"
    numeric = data[NUMERIC].graphsData["forward"].results
    assert delegates <= set(numeric), f"{p.name}: the numeric overlay misses delegate calls {delegates - set(numeric)}"
    worst_id, worst = max(((k, r.value) for k, r in numeric.items()), key=lambda kv: kv[1])
    assert worst <= NUMERIC_LIMIT, f"{p.name}: relative error {worst:.3g} at {worst_id} (limit {NUMERIC_LIMIT:g})"
    kernels = sum(1 for ins in instrs if isinstance(ins.instr_args, (S.KernelCall, S.DelegateCall)))
    return {
        "name": p.name,
        "instructions": len(instrs),
        "delegates": len(delegates),
        "memory_nodes": len(data[MEMORY].graphsData["forward"].results),
        "timed_nodes": len(data[TIME[0]].graphsData["forward"].results),
        "numeric_nodes": len(numeric),
        "calls": kernels,
        "worst_relative_error": worst,
        "worst_node": worst_id,
        "export_trace_s": round(t1 - t0, 2),
        "explore_s": round(t2 - t1, 2),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m devtools.explorer.check", description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="CI's sizes (mobilenet_v2_005_96, the 2-layer LLM)")
    ap.add_argument("--only", action="append", metavar="NAME", help="these programs only (regex on the name)")
    ap.add_argument("--keep", metavar="DIR", help="write the programs, traces and inputs here (default: a temp dir)")
    ap.add_argument("--json", action="store_true", help="one JSON object per program instead of a line")
    args = ap.parse_args(argv)
    todo = [p for p in programs(args.small) if not args.only or any(re.search(o, p.name) for o in args.only)]
    if any("xnnpack" in p.flags for p in todo):
        use_xnnpack_runtime()
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or tmp
        os.makedirs(out, exist_ok=True)
        for p in todo:
            try:
                r = check(p, out)
            except AssertionError as e:
                print(f"FAIL {e}")
                failed += 1
                continue
            if args.json:
                print(json.dumps(r))
            else:
                print(
                    f"ok   {r['name']}: {r['instructions']} instructions ({r['delegates']} delegate), overlay nodes "
                    f"memory {r['memory_nodes']}, time {r['timed_nodes']}, numeric {r['numeric_nodes']}; worst "
                    f"relative error {r['worst_relative_error']:.2g} at {r['worst_node']}; export+trace "
                    f"{r['export_trace_s']} s, explore {r['explore_s']} s"
                )
            sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
