"""The int8 layers the Cortex-M layer benchmark measures: the anchor table's shapes (issue 33: the layers CMSIS-NN
was measured on, in the same emulator) and the zoo's own int8 layers, each written as Ember's quantized operators
on int8 tensors, with seeded random data and per-channel requantization.

A case is a list of layers run one after another (a network: the DS-CNN-like one, the MLP); `cmsis_nn` is Arm's
figure for it where the anchor table has one (CMSIS-NN v7.0.0-43 with MVE, `-O2`, QEMU 7.2 mps3-an547 -icount
shift=0, instructions per call, warm).
"""

from dataclasses import dataclass
from typing import List, Optional, Tuple


@dataclass(frozen=True)
class Conv:
    cin: int
    cout: int
    h: int
    w: int
    kernel: Tuple[int, int]
    stride: Tuple[int, int] = (1, 1)
    padding: Tuple[int, int] = (0, 0)
    groups: int = 1
    dilation: Tuple[int, int] = (1, 1)

    def out_hw(self) -> Tuple[int, int]:
        kh, kw = self.kernel
        oh = (self.h + 2 * self.padding[0] - self.dilation[0] * (kh - 1) - 1) // self.stride[0] + 1
        ow = (self.w + 2 * self.padding[1] - self.dilation[1] * (kw - 1) - 1) // self.stride[1] + 1
        return oh, ow

    def macs(self) -> int:
        oh, ow = self.out_hw()
        return oh * ow * self.cout * (self.cin // self.groups) * self.kernel[0] * self.kernel[1]


@dataclass(frozen=True)
class Linear:
    cin: int
    cout: int

    def macs(self) -> int:
        return self.cin * self.cout


@dataclass(frozen=True)
class GlobalPool:
    channels: int
    h: int
    w: int

    def macs(self) -> int:
        return 0


@dataclass(frozen=True)
class Pool:
    """A windowed int8 pool over [1, channels, h, w]: max (aten's max_pool2d on the int8 tensor, as the quantized
    programs keep it) or average (ember_quantized::avg_pool2d)."""

    kind: str  # "max" or "avg"
    channels: int
    h: int
    w: int
    kernel: Tuple[int, int]
    stride: Tuple[int, int]
    padding: Tuple[int, int] = (0, 0)
    dilation: Tuple[int, int] = (1, 1)  # max only
    ceil_mode: bool = False
    count_include_pad: bool = True  # avg only
    divisor_override: Optional[int] = None  # avg only
    indices: bool = False  # max only: the layer's output is the indices, int64 (the case's last layer)

    def macs(self) -> int:
        return 0


@dataclass(frozen=True)
class Add:
    shape: Tuple[int, ...]

    def macs(self) -> int:
        return 0


@dataclass(frozen=True)
class Mul:
    """x * other: x of `shape`, a constant `other` of `other_shape` (broadcast as aten::mul; `shape` if None)."""

    shape: Tuple[int, ...]
    other_shape: Optional[Tuple[int, ...]] = None
    zero_points: Tuple[int, int, int] = (-3, 4, -2)  # x, other, output
    # The output's step in units of the product's (x scale * other scale): random int8 values sit about 74 from a
    # central zero point, so this default spreads the products over about 40 steps; 64 clamps the larger ones.
    output_step: float = 74 * 74 / 40
    relu: bool = False  # clamped at the output zero point, as a fused ReLU arrives

    def macs(self) -> int:
        return 0


@dataclass(frozen=True)
class Softmax:
    shape: Tuple[int, ...]
    dim: int = -1
    input_scale: float = 0.0625
    output: Tuple[float, int] = (1 / 256, -128)  # PT2E's fixed parameters for softmax
    equal_rows: bool = False  # the input clamped to one value first: every output an exact 1 / n of a row

    def macs(self) -> int:
        return 0


@dataclass
class Case:
    name: str
    layers: list
    cmsis_nn: Optional[int] = None  # CMSIS-NN with MVE, instructions per call
    cmsis_nn_scalar: Optional[int] = None  # CMSIS-NN built +nomve
    group: str = "anchor"

    def macs(self) -> int:
        return sum(layer.macs() for layer in self.layers)


DSCNN_CONV = Conv(1, 48, 49, 10, (9, 5), stride=(2, 2), padding=(4, 2))
DSCNN_DW = Conv(48, 48, 25, 5, (3, 3), padding=(1, 1), groups=48)
DSCNN_PW = Conv(48, 48, 25, 5, (1, 1))
DSCNN_POOL = GlobalPool(48, 25, 5)
DSCNN_FC = Linear(48, 12)

ANCHOR: List[Case] = [
    Case("conv 9x5, stride 2, pad (4,2), 49x10x1 -> 25x5x48", [DSCNN_CONV], 271_023, 941_015),
    Case("depthwise 3x3, 25x5x48", [DSCNN_DW], 134_179, 402_109),
    Case("pointwise 1x1, 25x5x48 -> 48", [DSCNN_PW], 135_960, 656_929),
    Case("average pool 25x5 -> 1, 48 channels", [DSCNN_POOL], 9_875, 33_093),
    Case("fully connected 48 -> 12", [DSCNN_FC], 593, 1_820),
    Case(
        "DS-CNN-like network: conv + 3 x (depthwise + pointwise) + pool + FC",
        [DSCNN_CONV] + [DSCNN_DW, DSCNN_PW] * 3 + [DSCNN_POOL, DSCNN_FC],
        1_092_007,
        4_153_148,
    ),
    Case("fully connected 784 -> 256", [Linear(784, 256)], 97_445, 389_101),
    Case("the int8 MLP 784-256-256-10", [Linear(784, 256), Linear(256, 256), Linear(256, 10)], 133_328, 530_218),
]

# The zoo's int8 layers (MobileNetV2 0.05 at 96x96, the small CNN): the shapes that carry most of their time.
ZOO: List[Case] = [
    Case(
        "MobileNetV2 0.05: first conv 3x3 s2, 96x96x3 -> 48x48x8",
        [Conv(3, 8, 96, 96, (3, 3), stride=(2, 2), padding=(1, 1))],
        group="zoo",
    ),
    Case("MobileNetV2 0.05: expand 1x1, 48x48x8 -> 48", [Conv(8, 48, 48, 48, (1, 1))], group="zoo"),
    Case(
        "MobileNetV2 0.05: depthwise 3x3 s2, 48x48x48",
        [Conv(48, 48, 48, 48, (3, 3), stride=(2, 2), padding=(1, 1), groups=48)],
        group="zoo",
    ),
    Case(
        "MobileNetV2 0.05: depthwise 3x3, 24x24x48",
        [Conv(48, 48, 24, 24, (3, 3), padding=(1, 1), groups=48)],
        group="zoo",
    ),
    Case("MobileNetV2 0.05: project 1x1, 24x24x48 -> 8", [Conv(48, 8, 24, 24, (1, 1))], group="zoo"),
    Case("MobileNetV2 0.05: residual add, 48x48x8", [Add((1, 8, 48, 48))], group="zoo"),
    Case("MobileNetV2 0.05: head 1x1, 3x3x16 -> 1280", [Conv(16, 1280, 3, 3, (1, 1))], group="zoo"),
    Case("small CNN: conv 3x3, 32x32x3 -> 16", [Conv(3, 16, 32, 32, (3, 3), padding=(1, 1))], group="zoo"),
    Case("small CNN: conv 3x3, 16x16x16 -> 32", [Conv(16, 32, 16, 16, (3, 3), padding=(1, 1))], group="zoo"),
]

# Elementwise int8 layers at the DS-CNN's activation shape.
ELEMENTWISE: List[Case] = [
    Case("mul, 25x5x48 elementwise", [Mul((1, 48, 25, 5))], group="elementwise"),
]

# Shapes that exercise every path and edge of the kernels (parity only, not timed): dilation, groups, odd widths
# and channel counts, stride 3, padding wider than the kernel's reach, taps past 16, a 1x1 with stride, biases whose
# zero-point correction needs 64 bits.
EDGES: List[Case] = [
    Case("dilated 3x3, 13x11x5 -> 7", [Conv(5, 7, 13, 11, (3, 3), padding=(2, 2), dilation=(2, 2))], group="edge"),
    Case("grouped 3x3, 4 groups, 9x9x8 -> 12", [Conv(8, 12, 9, 9, (3, 3), padding=(1, 1), groups=4)], group="edge"),
    Case(
        "depthwise x2 multiplier 5x5 s3, 17x19x6",
        [Conv(6, 12, 17, 19, (5, 5), stride=(3, 3), padding=(2, 2), groups=6)],
        group="edge",
    ),
    Case(
        "depthwise 3x3 s2 odd, 15x13x5",
        [Conv(5, 5, 15, 13, (3, 3), stride=(2, 2), padding=(1, 1), groups=5)],
        group="edge",
    ),
    Case("depthwise 7x7 wide pad, 6x5x3", [Conv(3, 3, 6, 5, (7, 7), padding=(4, 4), groups=3)], group="edge"),
    Case("conv 3x3 s3, 20x17x4 -> 9", [Conv(4, 9, 20, 17, (3, 3), stride=(3, 3), padding=(1, 1))], group="edge"),
    Case("1x1 stride 2, 9x7x19 -> 5", [Conv(19, 5, 9, 7, (1, 1), stride=(2, 2))], group="edge"),
    Case("1x1, 5x3x37 -> 6", [Conv(37, 6, 5, 3, (1, 1))], group="edge"),
    Case("conv 2x4, 6x9x33 -> 3", [Conv(33, 3, 6, 9, (2, 4), padding=(1, 0))], group="edge"),
    Case("fully connected 17 -> 5, 3 rows", [Linear(17, 5)], group="edge"),
    Case("add, 3x5x7", [Add((3, 5, 7))], group="edge"),
    Case("global pool 7x3, 9 channels", [GlobalPool(9, 7, 3)], group="edge"),
]

# The mul's paths: both inputs stepping (an odd length, for the predicated tail), one broadcast along the runs
# (per channel, a scalar, self the broadcast one), saturation with zero points at the extremes, a ReLU clamp.
EDGES += [
    Case("mul, 3x5x7", [Mul((3, 5, 7))], group="edge"),
    Case("mul by channel, 2x6x5x7 * 1x6x1x1", [Mul((2, 6, 5, 7), (1, 6, 1, 1))], group="edge"),
    Case("mul by scalar, 5x13 * 1", [Mul((5, 13), (1,), zero_points=(2, 0, -1))], group="edge"),
    Case("mul broadcast self, 1x5x1 * 3x5x11", [Mul((1, 5, 1), (3, 5, 11))], group="edge"),
    Case(
        "mul saturating low, zero points at extremes, 6x21",
        [Mul((6, 21), zero_points=(127, -128, 0), output_step=64)],
        group="edge",
    ),
    Case(
        "mul saturating high, zero points at extremes, 6x21 * 21",
        [Mul((6, 21), (21,), zero_points=(-128, -128, -128), output_step=64)],
        group="edge",
    ),
    # An output step below 2^-14 products: the requantization has no final shift (the Helium kernel's scalar path).
    Case("mul without final shift, 2x19", [Mul((2, 19), zero_points=(5, -7, 3), output_step=2.0**-15)], group="edge"),
    Case("mul with relu, 4x1x9 * 1x3x1", [Mul((4, 1, 9), (1, 3, 1), zero_points=(-3, 4, -5), relu=True)], group="edge"),
]

# The pools' shapes: the zoo's (the small CNN's 2x2 max and average pools, the MLPerf models' whole-map average
# pools), then the edges of the Helium pools' paths (strides 1, 2 and 3, padding, ceil_mode, dilation, odd sizes,
# blocks past 16 outputs, divisors with and without the padding, a tap count past the 16-bit sums, windows reaching
# the plane's end).
ZOO += [
    Case("small CNN: max pool 2x2 s2, 32x32x8", [Pool("max", 8, 32, 32, (2, 2), (2, 2))], group="zoo"),
    Case("small CNN: average pool 2x2 s2, 16x16x16", [Pool("avg", 16, 16, 16, (2, 2), (2, 2))], group="zoo"),
    Case("DS-CNN: average pool 25x5 (whole map), 64 channels", [Pool("avg", 64, 25, 5, (25, 5), (25, 5))], group="zoo"),
    Case("ResNet-8: average pool 8x8 (whole map), 64 channels", [Pool("avg", 64, 8, 8, (8, 8), (8, 8))], group="zoo"),
]
EDGES += [
    Case("max pool 3x3 s2 pad 1, 15x17x5", [Pool("max", 5, 15, 17, (3, 3), (2, 2), (1, 1))], group="edge"),
    Case("max pool 2x2 s2 ceil, 9x11x3", [Pool("max", 3, 9, 11, (2, 2), (2, 2), ceil_mode=True)], group="edge"),
    Case("max pool 3x3 s1 pad 1, 6x37x4", [Pool("max", 4, 6, 37, (3, 3), (1, 1), (1, 1))], group="edge"),
    Case(
        "max pool 3x2 s3 ceil pad 1, 14x50x2",
        [Pool("max", 2, 14, 50, (3, 2), (3, 3), (1, 1), ceil_mode=True)],
        group="edge",
    ),
    Case("max pool 3x3 dilation 2, 11x40x3", [Pool("max", 3, 11, 40, (3, 3), (2, 2), (1, 1), (2, 2))], group="edge"),
    Case("max pool 2x3 s(1,2), 5x34x7", [Pool("max", 7, 5, 34, (2, 3), (1, 2))], group="edge"),
    Case(
        "max pool indices 3x3 s2 pad 1, 15x35x3",
        [Pool("max", 3, 15, 35, (3, 3), (2, 2), (1, 1), indices=True)],
        group="edge",
    ),
    Case(
        "max pool indices 3x2 dilation (1,2) s(1,3) ceil, 7x61x2",
        [Pool("max", 2, 7, 61, (3, 2), (1, 3), (1, 1), (1, 2), ceil_mode=True, indices=True)],
        group="edge",
    ),
    Case(
        "max pool indices 2x3 dilation (2,1) s(1,2) pad 1, 13x20x2",
        [Pool("max", 2, 13, 20, (2, 3), (1, 2), (1, 1), (2, 1), indices=True)],
        group="edge",
    ),
    Case("average pool 3x3 s2 pad 1, 15x17x5", [Pool("avg", 5, 15, 17, (3, 3), (2, 2), (1, 1))], group="edge"),
    Case(
        "average pool 3x3 s2 pad 1 without padding, ceil, 14x40x3",
        [Pool("avg", 3, 14, 40, (3, 3), (2, 2), (1, 1), ceil_mode=True, count_include_pad=False)],
        group="edge",
    ),
    Case("average pool 2x2 s2 ceil, 9x11x3", [Pool("avg", 3, 9, 11, (2, 2), (2, 2), ceil_mode=True)], group="edge"),
    Case("average pool 3x3 s1 pad 1, 6x37x4", [Pool("avg", 4, 6, 37, (3, 3), (1, 1), (1, 1))], group="edge"),
    Case(
        "average pool 5x3 s3 divisor 7, 17x52x2",
        [Pool("avg", 2, 17, 52, (5, 3), (3, 3), (2, 1), divisor_override=7)],
        group="edge",
    ),
    Case("average pool 16x17 s1 (272 taps), 17x20x2", [Pool("avg", 2, 17, 20, (16, 17), (1, 1))], group="edge"),
    Case("average pool 3x5 (whole map), 3x5x9", [Pool("avg", 9, 3, 5, (3, 5), (3, 5))], group="edge"),
]

# A layer whose biases push bias - zp * sum(w) past int32: the kernels' 64-bit finishing path.
WIDE_BIAS = "wide bias"
EDGES.append(
    Case("conv 3x3 with extreme biases, 6x6x2 -> 5", [Conv(2, 5, 6, 6, (3, 3), padding=(1, 1))], group=WIDE_BIAS)
)
EDGES.append(
    Case(
        "depthwise 3x3 with extreme biases, 6x6x4",
        [Conv(4, 4, 6, 6, (3, 3), padding=(1, 1), groups=4)],
        group=WIDE_BIAS,
    )
)
EDGES.append(Case("fully connected 9 -> 6 with extreme biases", [Linear(9, 6)], group=WIDE_BIAS))

# Softmax: a keyword spotter's output over its 12 classes, and attention-sized rows (timed, with the elementwise ones);
# odd lengths for the tail predication, rows of one element, long rows, another dim (which the Helium kernel hands to
# the scalar one) and general output parameters (parity only).
ELEMENTWISE.append(
    Case(
        "keyword spotting output: softmax over 12 classes, 1x12",
        [Softmax((1, 12), input_scale=0.125)],
        group="elementwise",
    )
)
ELEMENTWISE.append(Case("softmax over rows of 256, 8x256", [Softmax((8, 256))], group="elementwise"))
EDGES.append(Case("softmax, odd rows 3x37", [Softmax((3, 37), input_scale=0.0731)], group="edge"))
EDGES.append(Case("softmax, rows of one, 5x1", [Softmax((5, 1))], group="edge"))
EDGES.append(Case("softmax, long rows 2x1000", [Softmax((2, 1000), input_scale=0.05)], group="edge"))
EDGES.append(Case("softmax along dim 1 of 2x9x5", [Softmax((2, 9, 5), dim=1, input_scale=0.0817)], group="edge"))
# Rows of 512 equal values: each output is 256 / 512 = 0.5 steps (768 / 512 = 1.5 at scale 1/768), exact ties that
# the kernels round to even.
EDGES.append(Case("softmax, equal rows 2x512, ties at 0.5 steps", [Softmax((2, 512), equal_rows=True)], group="edge"))
EDGES.append(
    Case(
        "softmax, equal rows 1x512, ties at 1.5 steps",
        [Softmax((1, 512), output=(1 / 768, -128), equal_rows=True)],
        group="edge",
    )
)
EDGES.append(
    Case(
        "softmax, output 0.0021 zero point -50, 4x33",
        [Softmax((4, 33), input_scale=0.0519, output=(0.0021, -50))],
        group="edge",
    )
)
