"""Selections from programs, merging, checking before a build, and the checked-in per-model selections."""
import os

import pytest

import exir
from examples.models import export_methods
from selective_build import check
from selective_build.selection import dump, load, merge, operators_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _program(name):
    programs, _, _ = export_methods(name)
    return exir.to_edge(programs).to_executorch().program


def test_records_every_dtype_a_call_sees():
    ops = operators_of(_program("small_cnn"))
    assert ops["aten::max_pool2d_with_indices.out"] == {"Float", "Long"}  # the indices output is Long
    assert set(ops) == {"aten::convolution.out", "aten::relu.out", "aten::max_pool2d_with_indices.out",
                        "aten::avg_pool2d.out", "aten::addmm.out"}


def test_merge_and_round_trip(tmp_path):
    merged = merge([operators_of(_program("mlp")), operators_of(_program("softmax"))])
    assert set(merged) == {"aten::addmm.out", "aten::relu.out", "aten::_softmax.out"}
    path = tmp_path / "sel.yaml"
    path.write_text(dump(merged))
    assert load(str(path)) == merged


def test_check_names_missing_ops_and_dtypes():
    needed = operators_of(_program("small_cnn"))
    assert check.problems(needed) == []
    mlp_only = operators_of(_program("mlp"))
    missing = check.problems(needed, mlp_only)
    assert "aten::convolution.out: not in the selection" in missing
    # A custom operator (examples/custom_ops): the default libraries have no kernel for it.
    assert check.problems({"ember_example::scaled_tanh.out": {"Float"}}) == [
        "ember_example::scaled_tanh.out: no kernel library implements it"]
    assert check.problems({"aten::gelu.out": {"Int"}}) == [
        "aten::gelu.out: called with ['Int'], the kernel computes ['BFloat16', 'Double', 'Float', 'Half']"]


@pytest.mark.parametrize("name", ["add", "softmax", "linear", "mlp", "small_cnn", "mobilenet_v2_035_96",
                                  "transformer_block"])
def test_checked_in_selections_are_current(name):
    # The per-model selections under examples/selections must be what the current exporter needs.
    kept = load(os.path.join(ROOT, "examples", "selections", f"{name}.yaml"))
    assert kept == operators_of(_program(name)), f"regenerate examples/selections/{name}.yaml"
