"""Runs inside the ExecuTorch venv (tools/setup_executorch_venv.sh): ExecuTorch's side of the .ptd (external data)
interop tests, tests/compat/test_external_data.py. It never imports Ember.

  export  --out DIR      ExecuTorch exports a small fixed-seed model with external constants
                         (ExecutorchBackendConfig(external_constants=True)): DIR/et.pte, DIR/<tag>.ptd,
                         DIR/et.inputs.pt and DIR/et.eager.pt (the eager outputs); prints JSON {"ptd": [names]}
  run     PTE PTD INPUTS.pt OUT.pt
                         ExecuTorch's runtime loads PTE with PTD as its data file, runs 'forward' on the inputs,
                         saves the outputs to OUT.pt; prints JSON {"ok": true}
  read    PTD OUT.pt     ExecuTorch's FlatTensorSerializer reads PTD; saves {key: tensor} (from each entry's bytes
                         and tensor layout) to OUT.pt; prints JSON {"keys": [...], "segments": n}
"""

from __future__ import annotations

import argparse
import json
import os

import torch


class _ScaledMLP(torch.nn.Module):
    """Two linears, a buffer and a residual: parameters, a buffer and a transposed weight to resolve by name."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 16)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 16))

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))) * self.scale + x


def _export(out: str):
    from executorch.exir import ExecutorchBackendConfig, to_edge

    torch.manual_seed(34)
    model = _ScaledMLP().eval()
    x = torch.randn(3, 16)
    ep = torch.export.export(model, (x,))
    prog = to_edge(ep).to_executorch(ExecutorchBackendConfig(external_constants=True))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "et.pte"), "wb") as f:
        f.write(prog.buffer)
    prog.write_tensor_data_to_file(out)
    torch.save([x], os.path.join(out, "et.inputs.pt"))
    with torch.no_grad():
        torch.save([model(x)], os.path.join(out, "et.eager.pt"))
    torch.save(dict(model.state_dict()), os.path.join(out, "et.state.pt"))
    print(json.dumps({"ptd": sorted(n for n in os.listdir(out) if n.endswith(".ptd"))}))


def _run(pte: str, ptd: str, inputs_path: str, out: str):
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(pte, data_path=ptd)
    method = program.load_method("forward")
    outputs = method.execute(list(torch.load(inputs_path)))
    torch.save([o.clone() for o in outputs], out)
    print(json.dumps({"ok": True}))


def _read(ptd: str, out: str):
    from executorch.exir._serialize._cord import Cord
    from executorch.exir.scalar_type import ScalarType
    from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer

    with open(ptd, "rb") as f:
        payload = FlatTensorSerializer().deserialize(Cord(f.read()))
    dtypes = {ScalarType.FLOAT: torch.float32, ScalarType.LONG: torch.int64, ScalarType.INT: torch.int32}
    tensors = {}
    for key, entry in payload.named_data.items():
        layout = entry.tensor_layout
        data = bytearray(payload.buffers[entry.buffer_index])
        flat = torch.frombuffer(data, dtype=dtypes[layout.scalar_type]) if data else torch.empty(0)
        tensors[key] = flat.reshape(list(layout.sizes)).clone()
    torch.save(tensors, out)
    print(json.dumps({"keys": sorted(tensors), "segments": len(payload.buffers)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--out", required=True)
    r = sub.add_parser("run")
    for name in ("pte", "ptd", "inputs", "out"):
        r.add_argument(name)
    d = sub.add_parser("read")
    d.add_argument("ptd")
    d.add_argument("out")
    a = ap.parse_args()
    if a.cmd == "export":
        _export(a.out)
    elif a.cmd == "run":
        _run(a.pte, a.ptd, a.inputs, a.out)
    else:
        _read(a.ptd, a.out)


if __name__ == "__main__":
    main()
