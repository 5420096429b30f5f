"""Export refuses what its runtime cannot run (issue 15 item 3): to_executorch() checks every kernel call against
the manifests of the target runtime's kernel libraries (default: the default build's; plus a user's own; narrowed
by a selection) and names every missing operator and dtype with the user's source line.

The refusals use what stays unsupported while the portable library grows: a float8 dtype and custom operators
with no kernel.
"""

import os

import pytest
import torch

import exir
from exir.kernel_check import KernelMissingError, KernelTarget, provided
from tests.conftest import ROOT

_lib = torch.library.Library("ember_kcheck", "DEF")
_lib.define("twice(Tensor x) -> Tensor")
_lib.define("twice.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
_lib.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")
_lib.impl("twice.out", lambda x, *, out: out.copy_(x * 2), "CompositeExplicitAutograd")
torch.library.register_fake("ember_kcheck::twice")(lambda x: torch.empty_like(x))

TWICE_MANIFEST = """\
- func: ember_kcheck::twice.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)
  kernel: twice_out
  file: twice.cc
  dtypes: [Float]
"""


class UsesTwice(torch.nn.Module):
    def forward(self, x):
        return torch.ops.ember_kcheck.twice(x) + 1.0


class ToFloat8(torch.nn.Module):
    def forward(self, x):
        return (x * 2).to(torch.float8_e4m3fn)


class Both(torch.nn.Module):
    def forward(self, x):
        y = torch.ops.ember_kcheck.twice(x)
        return y.to(torch.float8_e4m3fn)


class Add(torch.nn.Module):
    def forward(self, x):
        return x + x


def _edge(module, x=None):
    x = torch.randn(2, 3) if x is None else x
    return exir.to_edge(torch.export.export(module, (x,)))


def test_custom_op_without_kernel_is_refused_with_its_source_line():
    with pytest.raises(KernelMissingError) as e:
        _edge(UsesTwice()).to_executorch()
    msg = str(e.value)
    assert "ember_kcheck::twice.out: no kernel library of the build implements it" in msg
    assert "test_kernel_check.py:" in msg and "torch.ops.ember_kcheck.twice(x)" in msg
    assert "examples/custom_ops" in msg and "KernelTarget(manifests=" in msg  # what to do


def test_float8_is_refused_naming_the_dtype():
    with pytest.raises(KernelMissingError) as e:
        _edge(ToFloat8()).to_executorch()
    msg = str(e.value)
    assert "with Float8_e4m3fn" in msg and "no kernel of the build computes Float8_e4m3fn" in msg
    assert ".to(torch.float8_e4m3fn)" in msg
    assert "cast to one its kernels compute" in msg


def test_every_problem_is_named_at_once():
    with pytest.raises(KernelMissingError) as e:
        _edge(Both()).to_executorch()
    lines = [l for l in str(e.value).splitlines() if l.startswith("  ")]
    assert len(lines) == 2, lines
    assert "ember_kcheck::twice.out" in lines[0] and "Float8_e4m3fn" in lines[1]


def test_a_users_manifest_provides_the_kernel(tmp_path):
    manifest = tmp_path / "kernels.yaml"
    manifest.write_text(TWICE_MANIFEST)
    prog = _edge(UsesTwice()).to_executorch(
        exir.ExecutorchBackendConfig(kernels=KernelTarget(manifests=[str(manifest)]))
    )
    assert "ember_kcheck::twice.out" in [c.op_name for c in prog.method_graphs["forward"].calls]
    # Its dtypes count too: a Double call is refused, naming what the kernel computes.
    with pytest.raises(
        KernelMissingError,
        match=r"ember_kcheck::twice.out with Double: its kernels compute "
        r"\[Float\]",
    ):
        _edge(UsesTwice(), torch.randn(2, 3, dtype=torch.float64)).to_executorch(
            exir.ExecutorchBackendConfig(kernels=KernelTarget(manifests=[str(manifest)]))
        )


def test_the_custom_ops_example_exports_with_its_library():
    from examples.custom_ops.scaled_tanh import ScaledTanhModel

    with pytest.raises(KernelMissingError, match="ember_example::scaled_tanh.out"):
        _edge(ScaledTanhModel()).to_executorch()
    path = os.path.join(ROOT, "examples", "custom_ops", "kernels.yaml")
    target = KernelTarget(manifests=[(path, "ember::custom_example", "examples/custom_ops")])
    _edge(ScaledTanhModel()).to_executorch(exir.ExecutorchBackendConfig(kernels=target))


def test_a_selection_narrows_the_runtime(tmp_path):
    edge = _edge(Add())
    with pytest.raises(KernelMissingError, match=r"aten::add.out: the selection leaves it out; at .*test_kernel_check"):
        edge.to_executorch(exir.ExecutorchBackendConfig(kernels=KernelTarget(selection={"aten::mul.out": ["Float"]})))
    with pytest.raises(KernelMissingError, match=r"aten::add.out with Float: the selection leaves this dtype out"):
        edge.to_executorch(exir.ExecutorchBackendConfig(kernels=KernelTarget(selection={"aten::add.out": ["Double"]})))
    sel = tmp_path / "ops.yaml"
    sel.write_text("operators:\n  aten::add.out:\n    dtypes: [Float]\n")
    edge.to_executorch(exir.ExecutorchBackendConfig(kernels=KernelTarget(selection=str(sel))))
    sel.write_text("include_all_operators: true\n")
    edge.to_executorch(exir.ExecutorchBackendConfig(kernels=KernelTarget(selection=str(sel))))


def test_check_kernels_false_exports_for_a_runtime_built_otherwise():
    prog = _edge(UsesTwice()).to_executorch(exir.ExecutorchBackendConfig(check_kernels=False))
    assert len(prog.buffer) > 0


def test_bad_manifest_and_selection_are_named(tmp_path):
    with pytest.raises(KernelMissingError, match="does not exist"):
        provided(KernelTarget(manifests=[str(tmp_path / "missing.yaml")]))
    bad = tmp_path / "kernels.yaml"
    bad.write_text("- func: not a schema\n  kernel: k\n  file: f.cc\n  dtypes: [Float]\n")
    with pytest.raises(KernelMissingError, match="cannot read a kernel manifest"):
        provided(KernelTarget(manifests=[str(bad)]))


def test_default_libraries_are_the_default_builds():
    have = provided()
    assert have.libraries == ["kernels/optimized", "kernels/portable", "kernels/quantized", "kernels/prim_ops"]
    # Optimized kernels compute Float only; the op's mask is the union with portable's fall-through.
    assert {"Float", "Double", "Half"} <= have.masks["aten::mm.out"]
    assert "aten::split_with_sizes_copy.out" in have.masks


def test_selective_build_check_names_source_lines_from_the_program(tmp_path, capsys):
    from selective_build import check

    prog = _edge(Both()).to_executorch(exir.ExecutorchBackendConfig(check_kernels=False, emit_stacktrace=True))
    pte = tmp_path / "both.pte"
    prog.save(str(pte))
    assert check.main([str(pte)]) == 1
    err = capsys.readouterr().err
    assert "missing ember_kcheck::twice.out: no kernel library implements it; at " in err
    assert "test_kernel_check.py:" in err and "torch.ops.ember_kcheck.twice(x)" in err
    # Without stack traces the instruction is named instead.
    prog = _edge(UsesTwice()).to_executorch(exir.ExecutorchBackendConfig(check_kernels=False))
    prog.save(str(pte))
    assert check.main([str(pte)]) == 1
    assert "at method 'forward' instruction 0" in capsys.readouterr().err


def test_a_program_with_stack_traces_runs(runtime):
    x = torch.randn(2, 3)
    prog = _edge(Add(), x).to_executorch(exir.ExecutorchBackendConfig(emit_stacktrace=True))
    assert prog.program.execution_plan[0].chains[0].stacktrace[0].items[0].filename.endswith("test_kernel_check.py")
    torch.testing.assert_close(runtime.load(prog.buffer).run("forward", [x])[0], x + x)
