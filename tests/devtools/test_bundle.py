"""devtools.bundled_program.bundle: .bpte round trip, the embedded program's alignment, and refusals that name
what is wrong."""

import pytest
import torch

import exir
from devtools.bundled_program import BundleError, bundle, load
from exir.serialize.bpte import BpteFormatError, deserialize_bpte, program_offset


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).eval()
    prog = exir.to_edge(torch.export.export(model, (torch.randn(1, 16),))).to_executorch()
    return model, prog


def test_round_trip_keeps_program_cases_and_tolerances(mlp):
    model, prog = mlp
    cases = [(torch.randn(1, 16),), (torch.randn(1, 16),)]
    data = bundle(prog, cases, expected=model, atol=1e-3, rtol=2e-3).buffer
    assert data[4:8] == b"BP08"
    off = program_offset(data)
    assert off % 32 == 0 and data[off : off + len(prog.buffer)] == prog.buffer
    b = deserialize_bpte(data)
    assert b.version == 2 and b.program == prog.buffer
    s = b.suite("forward")
    assert (s.atol, s.rtol) == (1e-3, 2e-3)
    for (x,), case in zip(cases, s.test_cases):
        assert torch.equal(case.inputs[0], x)
        assert torch.equal(case.expected_outputs[0], model(x).detach())


def test_expected_outputs_given_by_the_caller(mlp):
    _, prog = mlp
    x = torch.randn(1, 16)
    b = load(bundle(prog, [(x,)], expected=[torch.ones(1, 4)]).buffer)
    assert torch.equal(b.suite("forward").test_cases[0].expected_outputs[0], torch.ones(1, 4))


@pytest.mark.parametrize(
    "cases,expected,message",
    [
        ([(torch.randn(2, 16),)], None, "expected outputs are needed"),
        ([(torch.randn(2, 16),)], "model", r"input 0 has shape \[2, 16\]; the program wants \[1, 16\]"),
        ([(torch.randn(1, 16).double(),)], "model", "has dtype torch.float64; the program wants FLOAT"),
        ([(torch.randn(1, 16), torch.randn(1, 16))], [torch.zeros(1, 4)], "2 inputs given, the method takes 1"),
        ([(torch.randn(1, 16),)], [(torch.zeros(1, 4), torch.zeros(1))], "2 expected outputs, the method returns 1"),
        ({"encode": [(torch.randn(1, 16),)]}, "model", "the program has no method 'encode'"),
    ],
)
def test_refusals(mlp, cases, expected, message):
    model, prog = mlp
    with pytest.raises(BundleError, match=message):
        bundle(prog, cases, expected=model if expected == "model" else expected)


def test_not_a_bundle():
    with pytest.raises(
        BpteFormatError, match=r"not a bundled program: identifier at byte 4 is 'ET12' \(45543132\), expected 'BP08'"
    ):
        deserialize_bpte(b"\0\0\0\0ET12" + bytes(64))
