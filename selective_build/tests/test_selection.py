"""Selections from programs, merging, checking before a build, and the checked-in per-model selections."""

import os

import pytest

import exir
from zoo.models import export_methods
from selective_build import check
from selective_build.selection import dump, features_of, load, load_features, merge, operators_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _program(name):
    programs, _, _ = export_methods(name)
    return exir.to_edge(programs).to_executorch().program


def test_records_every_dtype_a_call_sees():
    ops = operators_of(_program("small_cnn"))
    assert ops["aten::max_pool2d_with_indices.out"] == {"Float", "Long"}  # the indices output is Long
    assert set(ops) == {
        "aten::convolution.out",
        "aten::relu.out",
        "aten::max_pool2d_with_indices.out",
        "aten::avg_pool2d.out",
        "aten::addmm.out",
    }


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
        "ember_example::scaled_tanh.out: no kernel library implements it"
    ]
    assert check.problems({"aten::gelu.out": {"Int"}}) == [
        "aten::gelu.out: called with ['Int'], the kernel computes ['BFloat16', 'Double', 'Float', 'Half']"
    ]


@pytest.mark.parametrize(
    "name", ["add", "softmax", "linear", "mlp", "small_cnn", "mobilenet_v2_035_96", "transformer_block"]
)
def test_checked_in_selections_are_current(name):
    # The per-model selections under examples/selections must be what the current exporter needs.
    path = os.path.join(ROOT, "examples", "selections", f"{name}.yaml")
    program = _program(name)
    assert load(path) == operators_of(program), f"regenerate examples/selections/{name}.yaml"
    assert load_features(path) == features_of(program), f"regenerate examples/selections/{name}.yaml"


def _exported(module, name):
    programs, _, _ = module.export_methods(name)
    return exir.to_edge(programs).to_executorch().program


def test_records_the_runtime_features_a_program_uses():
    from zoo import control_flow, dynamic

    assert features_of(_program("mlp")) == set()
    assert features_of(_exported(control_flow, "cond_gate")) == {"control_flow"}
    assert "control_flow" in features_of(_exported(control_flow, "while_refine"))
    assert features_of(_exported(dynamic, "dynamic_mlp")) == {"dynamic_shapes"}
    # Constants in a .ptd (docs/external_data.md).
    programs, _, _ = export_methods("mlp")
    config = exir.ExecutorchBackendConfig(external_constants=True)
    assert features_of(exir.to_edge(programs).to_executorch(config).program) == {"external_data"}


def test_select_writes_features_and_merges_them(tmp_path):
    from zoo import control_flow
    from selective_build.select import main as select_main

    gate = tmp_path / "cond_gate.pte"
    programs, _, _ = control_flow.export_methods("cond_gate")
    exir.to_edge(programs).to_executorch().save(str(gate))
    out = tmp_path / "sel.yaml"
    assert select_main([str(gate), "-o", str(out)]) == 0
    assert load_features(str(out)) == {"control_flow"}
    # A selection without `features` keeps every feature, and so does anything merged with it.
    every = tmp_path / "every.yaml"
    every.write_text(dump(operators_of(_program("mlp"))))
    assert load_features(str(every)) is None
    merged = tmp_path / "merged.yaml"
    assert select_main([str(gate), "--merge", str(every), "-o", str(merged)]) == 0
    assert load_features(str(merged)) is None
    assert "\nfeatures:" not in merged.read_text()


def test_unknown_feature_is_named(tmp_path):
    from selective_build.selection import SelectionError

    bad = tmp_path / "bad.yaml"
    bad.write_text("operators: {}\nfeatures: [control_flow, threads]\n")
    with pytest.raises(SelectionError, match="unknown runtime feature 'threads'"):
        load_features(str(bad))


def test_check_names_a_feature_the_selection_lacks(tmp_path, capsys):
    from zoo import control_flow

    programs, _, _ = control_flow.export_methods("cond_gate")
    pte = tmp_path / "cond_gate.pte"
    exir.to_edge(programs).to_executorch().save(str(pte))
    program = exir.to_edge(programs).to_executorch().program
    sel = tmp_path / "sel.yaml"
    sel.write_text(dump(operators_of(program), features=[]))
    assert check.main([str(pte), "--selection", str(sel)]) == 1
    assert (
        "control_flow: a runtime feature the programs use, not in the selection's features" in capsys.readouterr().err
    )
    sel.write_text(dump(operators_of(program), features=["control_flow"]))
    assert check.main([str(pte), "--selection", str(sel)]) == 0
