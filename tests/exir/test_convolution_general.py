"""Transposed and 3-d convolutions: exir routes them to ember::convolution_general.out, both builds compute what
eager computes, only programs that make such a call select its kernel, and the aten kernel refuses them by name
(a program from another exporter)."""

import pytest
import torch

import exir
from exir.lowering import convolution_general as general
from selective_build.selection import operators_of

aten = torch.ops.aten
GENERAL = "ember::convolution_general.out"


class Decoder(torch.nn.Module):
    """A transposed 1-d, 2-d (grouped, strided, dilated, output_padding) and 3-d convolution, a 3-d one, and a
    plain 2-d one, which stays aten's."""

    def __init__(self):
        super().__init__()
        self.t1 = torch.nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1)
        self.t2 = torch.nn.ConvTranspose2d(
            4, 6, 3, stride=(2, 1), padding=(1, 2), output_padding=(1, 0), groups=2, dilation=(1, 2)
        )
        self.t3 = torch.nn.ConvTranspose3d(4, 2, 2, stride=2, bias=False)
        self.c3 = torch.nn.Conv3d(4, 3, (1, 3, 3), padding=(0, 1, 1), stride=(1, 2, 1))
        self.c2 = torch.nn.Conv2d(4, 5, 3)

    def forward(self, x):
        v = x.unsqueeze(2).expand(-1, -1, 2, -1, -1).contiguous()
        return self.t1(x[:, :, 0]), self.t2(x), self.t3(v), self.c3(v), self.c2(x)


def _program(module, x):
    torch.manual_seed(0)
    return exir.to_edge(torch.export.export(module.eval(), (x,))).to_executorch()


def _x():
    return torch.randn(1, 4, 6, 7, generator=torch.Generator().manual_seed(1))


def test_general_calls_are_routed_and_plain_ones_stay():
    torch.manual_seed(0)
    prog = _program(Decoder(), _x())
    ops = [
        c.op
        for c in prog.method_graphs["forward"].calls
        if c.op in (aten.convolution.out, general.convolution_general_out)
    ]
    assert ops == [general.convolution_general_out] * 4 + [aten.convolution.out]


@pytest.mark.parametrize("kernels", ["default", "portable"])
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_both_builds_match_eager(runtime, kernels, dtype, tol):
    torch.manual_seed(0)
    module = Decoder().to(dtype)
    x = _x().to(dtype)
    got = runtime.load(_program(module, x).buffer, kernels=kernels).run("forward", [x])
    want = module(x)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        # Sums of up to 18 products in a different order than ATen's: relative to the output's scale.
        torch.testing.assert_close(g, w, atol=tol * max(1.0, w.abs().max().item()), rtol=tol)


def test_half_is_rounded_once_from_float(runtime):
    torch.manual_seed(0)
    module = Decoder().half()
    x = _x().half()
    got = runtime.load(_program(module, x).buffer, kernels="portable").run("forward", [x])
    # The kernel sums in float and rounds once: within one half ulp of eager run in float32 and rounded.
    want = Decoder().float()
    want.load_state_dict({k: v.float() for k, v in module.state_dict().items()})
    for g, w in zip(got, want(x.float())):
        torch.testing.assert_close(g.float(), w.half().float(), atol=1e-3 * max(1.0, w.abs().max().item()), rtol=2**-10)


def test_only_programs_that_need_it_select_it():
    torch.manual_seed(0)
    decoder = operators_of(_program(Decoder(), _x()).program)
    assert decoder[GENERAL] == {"Float"}
    plain = operators_of(_program(torch.nn.Conv2d(4, 5, 3), _x()).program)
    assert GENERAL not in plain and "aten::convolution.out" in plain


def test_aten_kernel_refuses_a_transposed_call_by_name(runtime, monkeypatch):
    # As ExecuTorch's exporter writes it: aten::convolution.out with transposed=True.
    monkeypatch.setattr("exir.program.route_general_convolutions", lambda graph: 0)
    torch.manual_seed(0)
    module = torch.nn.ConvTranspose2d(4, 2, 3)
    prog = _program(module, _x())
    for kernels in ("default", "portable"):
        with pytest.raises(RuntimeError, match=r"instruction 0 \(aten::convolution.out\) failed: NotSupported"):
            runtime.load(prog.buffer, kernels=kernels).run("forward", [_x()])
