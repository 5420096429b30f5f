"""program.run checks each dimension of an input on its own (runtime/executor method.cc, dynamic_shapes.cc): one
message per refusal, naming the input and dimension, for a static and a bounded input alike."""

import re

import pytest
import torch
from torch.export import Dim

import exir


@pytest.fixture(scope="module")
def programs(runtime):
    torch.manual_seed(4)
    model = torch.nn.Linear(4, 3).eval()
    x = torch.randn(2, 4)
    static = exir.to_edge(torch.export.export(model, (x,))).to_executorch()
    bounded = exir.to_edge(
        torch.export.export(model, (x,), dynamic_shapes=({0: Dim("batch", min=1, max=4)},))
    ).to_executorch()
    return runtime.load(static.buffer), runtime.load(bounded.buffer), model


@pytest.mark.parametrize(
    "shape, message",
    [
        ([2, 5], "input 0 has shape [2, 4]; got [2, 5]: dimension 1 is 5, fixed at 4 (a static input)"),
        ([4, 2], "input 0 has shape [2, 4]; got [4, 2]: dimension 0 is 4, fixed at 2"),  # the same 8 elements
        ([8], "input 0 has shape [2, 4]; got [8]: rank 1, the program's is 2"),
    ],
)
def test_static_input_refusals(programs, shape, message):
    static, _, _ = programs
    with pytest.raises(RuntimeError, match=re.escape(message)):
        static.run("forward", [torch.zeros(shape)])


@pytest.mark.parametrize(
    "shape, message",
    [
        ([5, 4], "input 0: dimension 0 is 5, beyond its bound 4 (sizes up to [4, 4]; got [5, 4])"),
        ([2, 8], "input 0: dimension 1 is 8, beyond its bound 4"),  # 16 elements: within the planned bytes
        ([16], "input 0 takes sizes up to [4, 4]; got [16]: rank 1, the program's is 2"),
    ],
)
def test_bounded_input_refusals(programs, shape, message):
    _, bounded, model = programs
    with pytest.raises(RuntimeError, match=re.escape(message)):
        bounded.run("forward", [torch.zeros(shape)])
    x = torch.randn(3, 4)  # still usable at an in-bound shape after the refusal
    torch.testing.assert_close(bounded.run("forward", [x])[0], model(x).detach(), atol=1e-5, rtol=1e-5)
