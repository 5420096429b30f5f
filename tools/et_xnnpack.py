"""Runs inside the ExecuTorch venv (tools/setup_executorch_venv.sh): lowers an exported program with ExecuTorch
1.5.1's own XnnpackPartitioner and writes the .pte, the files backends/xnnpack/test runs on Ember's XnnpackBackend.

  et_xnnpack.py PROGRAM.pt2 OUT.pte [--partitioner all|2022] [--inline] [--run INPUTS.pt OUTPUTS.pt]

PROGRAM.pt2 is torch.export.save's file (made in Ember's venv, where the model definitions live; both venvs have
torch 2.13.0). --partitioner all: ExecuTorch's default configs; 2022: only the configs whose nodes Debian's 2022
XNNPACK has (no batched matmul, attention, concatenation, slicing, GELU, tanh, exp, log, sin, cos, rsqrt, pow,
max.dim, quantization), so the rest stays with the portable kernels. --inline keeps delegate blobs in the
flatbuffer (extract_delegate_segments=False). --run also runs the .pte in ExecuTorch's runtime (its XNNPACK) and
saves the outputs; a program its runtime cannot run is still written, the report saying why ("run_error").
Prints JSON: {"delegates": n, "instructions": {kind: count}, "operators": [...]}.
"""

import argparse
import json
import sys
from collections import Counter

import torch

# Config class names whose XNNGraph nodes need an XNNPACK newer than Debian's 2022 snapshot.
NEWER_THAN_2022 = {
    "BMMConfig",
    "CatConfig",
    "CosConfig",
    "ExpConfig",
    "GeluConfig",
    "LogConfig",
    "MaxDimConfig",
    "MMConfig",
    "PowConfig",
    "ReciprocalSquareRootConfig",
    "SinConfig",
    "SliceCopyConfig",
    "TanhConfig",
    "QuantizedPerTensorConfig",
    "DeQuantizedPerTensorConfig",
    "QuantizeAffineConfig",
    "DeQuantizeAffineConfig",
    "ChooseQParamsAffineConfig",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("program")
    ap.add_argument("out")
    ap.add_argument("--partitioner", choices=["all", "2022"], default="all")
    ap.add_argument("--inline", action="store_true")
    ap.add_argument("--run", nargs=2, metavar=("INPUTS", "OUTPUTS"))
    args = ap.parse_args()

    from executorch.backends.xnnpack.partition.config import ALL_PARTITIONER_CONFIGS
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower

    ep = torch.export.load(args.program)
    if args.partitioner == "all":
        partitioner = XnnpackPartitioner()
    else:
        partitioner = XnnpackPartitioner(
            configs=[c for c in ALL_PARTITIONER_CONFIGS if c.__name__ not in NEWER_THAN_2022]
        )
    edge = to_edge_transform_and_lower(ep, partitioner=[partitioner])
    prog = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=not args.inline))
    with open(args.out, "wb") as f:
        f.write(prog.buffer)
    plan = prog.executorch_program.execution_plan[0]
    kinds = Counter(type(i.instr_args).__name__ for c in plan.chains for i in c.instructions)
    report = {
        "delegates": len(plan.delegates),
        "instructions": dict(kinds),
        "operators": sorted({op.name for op in plan.operators}),
    }
    if args.run:
        from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

        try:
            module = _load_for_executorch_from_buffer(prog.buffer)
            inputs = torch.load(args.run[0])
            torch.save(list(module.forward(tuple(inputs))), args.run[1])
        except Exception as e:  # the lowering stands; the caller learns why the run did not
            report["run_error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
