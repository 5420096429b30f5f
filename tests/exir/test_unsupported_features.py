"""Models with features Ember cannot export fail in exir with an error naming the feature, the node and the
user's source line, instead of an unrelated error from deep inside decomposition or emission (a bare
"9 is not a valid ScalarType", a result_type cast error from a sparse decomposition)."""

import pytest
import torch

import exir
from exir.edge.unsupported import UnsupportedFeatureError

THIS_FILE = __file__.rsplit("/", 1)[-1]


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def export_error(fn, *args):
    ep = torch.export.export(Fn(fn), args)
    with pytest.raises(UnsupportedFeatureError) as e:
        exir.to_edge(ep).to_executorch()
    return str(e.value)


def test_complex_input():
    msg = export_error(lambda x: x * 2, torch.randn(3, dtype=torch.complex64))
    assert "method 'forward' uses features Ember cannot export" in msg
    assert "input 'args_0' is torch.complex64: Ember's kernels and the .pte format are real-valued" in msg


def test_complex_intermediate_names_the_op_and_line():
    msg = export_error(lambda x: torch.fft.rfft(x).abs(), torch.randn(8))
    assert "is torch.complex64" in msg and f"{THIS_FILE}:" in msg


def test_sparse_input_and_sparse_op():
    msg = export_error(lambda x: x * 2, torch.randn(3, 3).to_sparse())
    assert "input 'args_0' is a torch.sparse_coo tensor" in msg and ".to_dense()" in msg
    msg = export_error(lambda x: (x.to_sparse() * 2).to_dense(), torch.randn(3, 3))
    assert "(aten::_to_sparse) is a torch.sparse_coo tensor" in msg or "sparse_coo tensor" in msg
    assert f"{THIS_FILE}:" in msg


@pytest.mark.parametrize(
    "fn",
    [lambda x: torch.nonzero(x), lambda x: x[x > 0], lambda x: torch.unique(x)],
    ids=["nonzero", "mask_index", "unique"],
)
def test_data_dependent_shapes(fn):
    msg = export_error(fn, torch.randn(6))
    assert "has a data-dependent shape [u" in msg and "plans every tensor's bytes before any data exists" in msg
    assert f"{THIS_FILE}:" in msg


def test_control_flow_is_lowered_not_refused():
    # cond, map, scan and while_loop lower to jumps (tests/exir/test_control_flow.py runs them); only other
    # higher-order ops are refused, by name.
    class Branchy(torch.nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda x: x + 1, lambda x: x - 1, (x,))

    prog = exir.to_edge(torch.export.export(Branchy(), (torch.randn(4),))).to_executorch()
    assert any(c.op is None for c in prog.method_graphs["forward"].calls)


def test_an_unbounded_dynamic_dimension_is_refused_naming_it():
    class Double(torch.nn.Module):
        def forward(self, x):
            return x * 2

    ep = torch.export.export(Double(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: torch.export.Dim("b")}})
    with pytest.raises(Exception, match=r"dimension 0 of node 'x' .*no upper bound.*max=128"):
        exir.to_edge(ep).to_executorch()


def test_not_an_exported_program():
    with pytest.raises(TypeError, match="takes a torch.export.ExportedProgram .*got Linear. Call torch.export"):
        exir.to_edge(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="method 'forward': expected a torch.export.ExportedProgram, got Linear"):
        exir.to_edge({"forward": torch.nn.Linear(2, 2)})


def test_quantize_names_a_python_error_in_the_model():
    from exir.quantization import QuantizationError, quantize

    class Broken(torch.nn.Module):
        def forward(self, x):
            return x + self.missing_weight  # an attribute error in the user's code

    with pytest.raises(QuantizationError) as e:
        quantize(Broken(), (torch.randn(2),), [(torch.randn(2),)])
    msg = str(e.value)
    assert "torch.export could not capture the model: AttributeError" in msg and "missing_weight" in msg

    class Fine(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)

    with pytest.raises(QuantizationError, match=r"calibration batch 1 failed: .*shaped like example_inputs"):
        quantize(Fine(), (torch.randn(2, 3),), [(torch.randn(2, 3),), ("not a tensor",)])
