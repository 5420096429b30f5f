"""One program holding every case of bench/cortex_m/cases.py (the anchor table's layers, the zoo's, and the
kernels' edge shapes), one after another in its forward method, each on its own seeded int8 input and weights:
the M55 layer benchmark's firmware runs it traced, to time each case's calls (report.py), and the parity test
runs it on the M55 and on the host and compares the outputs byte for byte.

    python -m bench.cortex_m.program --out DIR    # DIR/layers.pte, DIR/layers.json (cases and their calls)
"""

import argparse
import json
import math
import os
import sys
from typing import List, Tuple

import torch

import exir
import kernels.quantized.ops  # noqa: F401  (registers the ember_quantized operators with torch)
from bench.cortex_m.cases import (
    ANCHOR,
    EDGES,
    ELEMENTWISE,
    WIDE_BIAS,
    ZOO,
    Add,
    Case,
    Conv,
    GlobalPool,
    Linear,
    Mul,
    Pool,
    Softmax,
)

CASES = ANCHOR + ZOO + ELEMENTWISE + EDGES
Q = torch.ops.ember_quantized


class QTensor:
    """An int8 activation's quantization as the next layer sees it."""

    def __init__(self, scale: float, zero_point: int):
        self.scale, self.zero_point = scale, zero_point


def _output_scale(q_in: QTensor, weight_scales: torch.Tensor, taps: int) -> float:
    # Random int8 inputs and weights (about 74 standard deviation each): keep the outputs' spread near 40 levels.
    return q_in.scale * float(weight_scales.mean()) * 74 * 74 * math.sqrt(taps) / 40


class CaseModule(torch.nn.Module):
    """A case's layers with seeded weights; forward(x) runs them in order on int8 x."""

    def __init__(self, case: Case, seed: int):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.case = case
        self.steps = []
        q = QTensor(0.02, -3)
        self.q_in = q
        wide = case.group == WIDE_BIAS
        for i, layer in enumerate(case.layers):
            if isinstance(layer, (Conv, Linear)):
                if isinstance(layer, Conv):
                    shape = (layer.cout, layer.cin // layer.groups, *layer.kernel)
                else:
                    shape = (layer.cout, layer.cin)
                w = torch.randint(-127, 128, shape, dtype=torch.int8, generator=g)
                ws = (torch.rand(layer.cout, generator=g) * 0.008 + 0.002).float()
                taps = int(torch.tensor(shape[1:]).prod())
                if wide:
                    # bias - zp * sum(w) beyond int32: extreme biases of the sign that adds to -zp * sum(w).
                    sums = w.reshape(layer.cout, -1).sum(1).to(torch.int64)
                    b = torch.where(sums * -q.zero_point >= 0, torch.tensor(2**31 - 7), torch.tensor(-(2**31) + 7))
                    b = b.to(torch.int32)
                else:
                    b = torch.randint(-2000, 2000, (layer.cout,), dtype=torch.int32, generator=g)
                q_out = QTensor(_output_scale(q, ws, taps), int(torch.randint(-10, 10, (1,), generator=g)))
                # Every other layer clamps at its zero point, as a fused ReLU arrives.
                lo = q_out.zero_point if i % 2 == 1 else -128
                self.register_buffer(f"w{i}", w)
                self.register_buffer(f"s{i}", ws)
                self.register_buffer(f"b{i}", b)
                self.steps.append((layer, i, q, q_out, lo))
                q = q_out
            elif isinstance(layer, GlobalPool):
                q_out = QTensor(q.scale * 1.5, int(torch.randint(-10, 10, (1,), generator=g)))
                self.steps.append((layer, i, q, q_out, -128))
                q = q_out
            elif isinstance(layer, Softmax):
                q_in = QTensor(layer.input_scale, q.zero_point) if i == 0 else q
                q_out = QTensor(*layer.output)
                self.steps.append((layer, i, q_in, q_out, -128))
            elif isinstance(layer, Pool):
                # A max pool keeps its input's quantization (the lowering's rule); an average pool rescales.
                q_out = (
                    q
                    if layer.kind == "max"
                    else QTensor(q.scale * 1.25, int(torch.randint(-10, 10, (1,), generator=g)))
                )
                self.steps.append((layer, i, q, q_out, -128))
                q = q_out
            elif isinstance(layer, Add):
                q_other = QTensor(q.scale * 0.7, 4)
                q_out = QTensor(q.scale * 1.3, -2)
                self.register_buffer(f"other{i}", torch.randint(-128, 128, layer.shape, dtype=torch.int8, generator=g))
                self.steps.append((layer, i, (q, q_other), q_out, -128))
                q = q_out
            elif isinstance(layer, Mul):
                zp_x, zp_other, zp_out = layer.zero_points
                q = QTensor(q.scale, zp_x)
                q_other = QTensor(0.03, zp_other)
                q_out = QTensor(q.scale * q_other.scale * layer.output_step, zp_out)
                other = torch.randint(-128, 128, layer.other_shape or layer.shape, dtype=torch.int8, generator=g)
                self.register_buffer(f"other{i}", other)
                self.steps.append((layer, i, (q, q_other), q_out, zp_out if layer.relu else -128))
                q = q_out

    def example_input(self, seed: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(seed)
        first = self.case.layers[0]
        if isinstance(first, Conv):
            shape = (1, first.cin, first.h, first.w)
        elif isinstance(first, Linear):
            shape = (3 if self.case.group == "edge" else 1, first.cin)
        elif isinstance(first, (GlobalPool, Pool)):
            shape = (1, first.channels, first.h, first.w)
        elif isinstance(first, Softmax):
            shape = first.shape
        else:
            shape = first.shape
        return torch.randint(-128, 128, shape, dtype=torch.int8, generator=g)

    def forward(self, x):
        for layer, i, q, q_out, lo in self.steps:
            if isinstance(layer, Conv):
                x = Q.conv2d(
                    x,
                    q.scale,
                    q.zero_point,
                    getattr(self, f"w{i}"),
                    getattr(self, f"s{i}"),
                    getattr(self, f"b{i}"),
                    list(layer.stride),
                    list(layer.padding),
                    list(layer.dilation),
                    layer.groups,
                    q_out.scale,
                    q_out.zero_point,
                    lo,
                    127,
                )
            elif isinstance(layer, Linear):
                if x.dim() == 4:
                    x = x.reshape(x.shape[0], -1)
                x = Q.linear(
                    x,
                    q.scale,
                    q.zero_point,
                    getattr(self, f"w{i}"),
                    getattr(self, f"s{i}"),
                    getattr(self, f"b{i}"),
                    q_out.scale,
                    q_out.zero_point,
                    lo,
                    127,
                )
            elif isinstance(layer, Softmax):
                if layer.equal_rows:  # an int8 add clamped to [5, 5]: the same value everywhere
                    x = Q.add(x, q.scale, q.zero_point, x, q.scale, q.zero_point, q.scale, q.zero_point, 5, 5)
                x = Q.softmax(x, q.scale, q.zero_point, layer.dim, q_out.scale, q_out.zero_point)
            elif isinstance(layer, GlobalPool):
                x = Q.adaptive_avg_pool2d(x, q.scale, q.zero_point, [1, 1], q_out.scale, q_out.zero_point)
            elif isinstance(layer, Mul):
                qa, qb = q
                x = Q.mul(
                    x,
                    qa.scale,
                    qa.zero_point,
                    getattr(self, f"other{i}"),
                    qb.scale,
                    qb.zero_point,
                    q_out.scale,
                    q_out.zero_point,
                    lo,
                    127,
                )
            elif isinstance(layer, Pool) and layer.kind == "max":
                x = torch.nn.functional.max_pool2d(
                    x,
                    list(layer.kernel),
                    list(layer.stride),
                    list(layer.padding),
                    list(layer.dilation),
                    layer.ceil_mode,
                    layer.indices,
                )
                x = x[1] if layer.indices else x
            elif isinstance(layer, Pool):
                x = Q.avg_pool2d(
                    x,
                    q.scale,
                    q.zero_point,
                    list(layer.kernel),
                    list(layer.stride),
                    list(layer.padding),
                    layer.ceil_mode,
                    layer.count_include_pad,
                    layer.divisor_override,
                    q_out.scale,
                    q_out.zero_point,
                )
            else:
                qa, qb = q
                x = Q.add(
                    x,
                    qa.scale,
                    qa.zero_point,
                    getattr(self, f"other{i}"),
                    qb.scale,
                    qb.zero_point,
                    q_out.scale,
                    q_out.zero_point,
                    lo,
                    127,
                )
        return x


class SetModule(torch.nn.Module):
    def __init__(self, modules: List[CaseModule]):
        super().__init__()
        self.cases = torch.nn.ModuleList(modules)

    def forward(self, *xs):
        return tuple(m(x) for m, x in zip(self.cases, xs))


def _export(module: torch.nn.Module, inputs: Tuple[torch.Tensor, ...]):
    return exir.to_edge(torch.export.export(module, inputs)).to_executorch()


def build(cases: List[Case] = CASES):
    """(program, inputs, manifest): manifest lists each case with its first instruction and its number of calls."""
    modules = [CaseModule(c, seed=1000 + i).eval() for i, c in enumerate(cases)]
    inputs = tuple(m.example_input(seed=2000 + i) for i, m in enumerate(modules))
    manifest, first = [], 0
    for m, x, c in zip(modules, inputs, cases):
        calls = len(_export(m, (x,)).method_graphs["forward"].calls)
        manifest.append(
            {
                "name": c.name,
                "group": c.group,
                "macs": c.macs(),
                "cmsis_nn": c.cmsis_nn,
                "cmsis_nn_scalar": c.cmsis_nn_scalar,
                "first": first,
                "calls": calls,
            }
        )
        first += calls
    program = _export(SetModule(modules).eval(), inputs)
    assert len(program.method_graphs["forward"].calls) == first, "cases' calls do not add up to the program's"
    return program, inputs, manifest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--inputs", action="store_true", help="also write input_<i>.bin files")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    program, inputs, manifest = build()
    stem = os.path.join(args.out, "layers")
    program.save(stem + ".pte")
    with open(stem + ".json", "w") as f:
        json.dump({"cases": manifest, "inputs": [list(x.shape) for x in inputs]}, f, indent=1)
    if args.inputs:
        for i, x in enumerate(inputs):
            with open(os.path.join(args.out, f"input_{i}.bin"), "wb") as f:
                f.write(x.numpy().tobytes())
    return 0


if __name__ == "__main__":
    sys.exit(main())
