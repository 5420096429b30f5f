"""Writes the program fuzzer's seed programs: small .pte files that between them use every kind of value,
instruction and most operators the runtime has, with weights kept tiny so each seed is a few KB and the fuzzer
spends its mutations on structure, not on weight bytes.

    .venv/bin/python3 -m tests.fuzz.make_program_seeds --out tests/fuzz/corpus/program

The committed corpus (tests/fuzz/corpus/program) holds these seeds plus inputs the fuzzer found that reach new
code (tools/fuzz.sh merge). Run this again when the exporter changes what it writes.
"""

import argparse
import os
import sys

import torch
from torch import nn

import exir
from zoo.models import TransformerBlock, export_methods

SMALL_ZOO = ["add", "softmax", "linear", "running_mean", "two_methods"]


class ManyOps(nn.Module):
    """Elementwise, reduction and copy operators in one graph, on tensors of a few elements."""

    def forward(self, x, idx):
        a = torch.sigmoid(x) + torch.tanh(x) * torch.exp(-x.abs())
        b = torch.nn.functional.silu(a) - torch.nn.functional.hardswish(x) / (x.pow(2) + 1.0)
        c = torch.clamp(b, -0.5, 0.5) + torch.sqrt(x.abs() + 1.0) + torch.rsqrt(x.abs() + 1.0) + torch.log(x.abs() + 1)
        d = torch.cat([c, -c], dim=1)[:, 1:5].permute(1, 0).unsqueeze(0).squeeze(0)
        e = d.sum(dim=0, keepdim=True) + d.mean(dim=1).amax() + torch.log_softmax(d, dim=0)
        f = torch.where(e > 0, e, torch.zeros_like(e)).expand(4, 2)
        g = f.select(1, 0) * torch.nn.functional.embedding(idx, d).sum()
        return g.reshape(2, 2).to(torch.float64), torch.nn.functional.hardtanh(e, -0.25, 0.25)


class TinyCNN(nn.Module):
    """Convolutions (plain, grouped, strided), batch norm, ReLU6, both poolings and a linear head on 8x8."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, stride=2, groups=2)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        x = nn.functional.relu6(self.bn(self.conv1(x)))
        x = nn.functional.max_pool2d(x, 2, 1)
        x = nn.functional.avg_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))


class TinyQuantizable(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        x = x + x
        return self.fc(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))


def _export(module, args, config=None):
    edge = exir.to_edge(torch.export.export(module.eval(), args))
    return edge.to_executorch(config) if config is not None else edge.to_executorch()


def seeds():
    """(file name, ExecutorchProgram) for every seed."""
    torch.manual_seed(20261123)
    for name in SMALL_ZOO:
        programs, _, _ = export_methods(name)
        yield f"zoo_{name}.pte", exir.to_edge(programs).to_executorch()
    yield "many_ops.pte", _export(ManyOps(), (torch.randn(2, 4), torch.tensor([1, 0, 3])))
    yield "tiny_cnn.pte", _export(TinyCNN(), (torch.randn(1, 2, 8, 8),))
    fused = exir.ExecutorchBackendConfig(fuse_activations=True)
    yield "tiny_cnn_fused.pte", _export(TinyCNN(), (torch.randn(1, 2, 8, 8),), fused)
    yield "tiny_transformer.pte", _export(TransformerBlock(dim=8, heads=2, mlp=16), (torch.randn(1, 4, 8),))

    from exir.quantization import quantize

    example = (torch.randn(1, 2, 6, 6),)
    q = quantize(TinyQuantizable(), example, [(torch.randn(1, 2, 6, 6),) for _ in range(4)])
    yield "tiny_int8.pte", exir.to_edge(q.exported_program).to_executorch()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for name, program in seeds():
        path = os.path.join(args.out, name)
        program.save(path)
        print(f"{path}: {os.path.getsize(path)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
