"""Writes xnnpack_blob_fuzz's seeds: the XnnpackBackend blobs (XH00 header, XN01 graph, constant data) that Ember's
XnnpackPartitioner makes for a few tiny models, taken out of their .pte files. Each model is lowered twice: weights
in the program's named data (the default; the fuzz target serves every key from one small fixed buffer) and
weights inline in the blob's constant data (so constant offsets and sizes are the blob's own).

    .venv/bin/python3 -m tests.fuzz.make_xnnpack_seeds --out tests/fuzz/corpus/xnnpack_blob

The committed corpus holds these seeds plus inputs the fuzzer found that reach new code (tools/fuzz.sh merge).
Run this again when preprocess changes what it writes.
"""

import argparse
import os

import torch
from torch import nn

import exir
from backends.xnnpack import XnnpackPartitioner
from exir.serialize import deserialize_pte


class Linear(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


class ConvRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


class Add(nn.Module):
    def forward(self, x, y):
        return x + y


class SmallCnn(nn.Module):
    """Convolution, batch norm, ReLU, a depthwise convolution, mean pooling and a linear head on 4x4."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.dw = nn.Conv2d(4, 4, 3, padding=1, groups=4)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        y = self.dw(y).mean((2, 3))
        return self.fc(y)


class TwoInOut(nn.Module):
    """Two arguments and two results: the external ids of inputs and outputs."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x, y):
        h = self.fc(x) * y
        return torch.sigmoid(h), h + 1.0


class PermuteCat(nn.Module):
    """Nodes the CPU runs between XNNPACK stages: a transpose, a concatenation, a slice, a batch matmul."""

    def forward(self, x, y):
        t = x.permute(0, 2, 1)
        c = torch.cat([t, t * 2.0], dim=2)[:, :, 1:3]
        return torch.bmm(c, y)


MODELS = {
    "linear": (Linear, lambda: (torch.randn(1, 4),)),
    "conv_relu": (ConvRelu, lambda: (torch.randn(1, 2, 4, 4),)),
    "add": (Add, lambda: (torch.randn(2, 3), torch.randn(2, 3))),
    "small_cnn": (SmallCnn, lambda: (torch.randn(1, 2, 4, 4),)),
    "two_in_out": (TwoInOut, lambda: (torch.randn(1, 3), torch.randn(1, 2))),
    "permute_cat": (PermuteCat, lambda: (torch.randn(1, 2, 3), torch.randn(1, 2, 2))),
}


def blobs_of(model: nn.Module, inputs, weights: str):
    """The delegate blobs of `model` lowered with every supported node delegated, in the order the program holds them."""
    ep = torch.export.export(model.eval(), inputs)
    prog = exir.to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner(weights=weights)]).to_executorch()
    pte = deserialize_pte(prog.buffer)
    out = []
    for d in pte.program.execution_plan[0].delegates:
        ref = d.processed
        if ref.location.name == "SEGMENT":
            out.append(pte.segment(ref.index))
        else:
            out.append(bytes(pte.program.backend_delegate_data[ref.index].data))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    seen = set()  # a model without weights lowers to the same blob either way: one copy
    for name, (cls, make_inputs) in MODELS.items():
        for weights in ("named", "inline"):
            torch.manual_seed(0)
            model = cls()
            blobs = blobs_of(model, make_inputs(), weights)
            for k, blob in enumerate(blobs):
                if blob in seen:
                    continue
                seen.add(blob)
                path = os.path.join(args.out, f"{name}-{weights}-{k}.blob")
                with open(path, "wb") as f:
                    f.write(blob)
                print(f"{path}: {len(blob)} bytes")


if __name__ == "__main__":
    main()
