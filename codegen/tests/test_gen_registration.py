"""Codegen from manifests: the table is exactly the selection, sorted, and dtype masks follow the selection."""

import textwrap

import pytest

from codegen.gen_registration import _apply_selection, arg_signature, render
from codegen.manifest import ManifestError, load_manifest, merge_chains
from schema import scalar_types

MANIFEST = textwrap.dedent("""
- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  kernel: add_out
  file: op_add.cc
  dtypes: [Float, Int, Long]
- func: max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))
  kernel: max_pool2d_with_indices_out
  file: op_max_pool2d.cc
  dtypes: [Float]
- func: convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, *, Tensor(a!) out) -> Tensor(a!)
  kernel: convolution_out
  file: op_convolution.cc
  dtypes: [Float]
""")


@pytest.fixture
def decls(tmp_path):
    p = tmp_path / "kernels.yaml"
    p.write_text(MANIFEST)
    return load_manifest(str(p), namespace="ember::portable", library="kernels/portable")


def chains(*libraries):
    return merge_chains(libraries)


def test_manifest_names_ops_like_pte(decls):
    assert [d.op for d in decls] == ["aten::add.out", "aten::max_pool2d_with_indices.out", "aten::convolution.out"]
    assert decls[0].dtype_mask == (1 << 6) | (1 << 3) | (1 << 4)


def test_arg_signature_matches_emitted_args(decls):
    # add.out: self, other, alpha, out, then the return (the out tensor again)
    assert arg_signature(decls[0])[0] == "TTsTT"
    # two outs: the return is a TensorList of them, as the emitter writes it
    assert arg_signature(decls[1])[0] == "TIIIIbTTL"
    assert arg_signature(decls[2])[0] == "TTtIIIbIiTT"


def test_selection_prunes_ops_and_dtypes(decls):
    chosen = _apply_selection(chains(decls), {"operators": {"aten::add.out": {"dtypes": ["Float"]}}})
    assert [(d.op, m) for d, m, _ in chosen] == [("aten::add.out", scalar_types.mask(["Float"]))]
    registry, dtypes = render(chosen)
    assert "kKernels[1]" in registry and "max_pool2d" not in registry
    assert "add_out_portable = 0x00000040u" in dtypes


def test_selection_of_unimplemented_dtype_is_refused(decls):
    with pytest.raises(ManifestError, match=r"aten::add.out: the selection needs dtypes \['Double'\]"):
        _apply_selection(chains(decls), {"operators": {"aten::add.out": {"dtypes": ["Double"]}}})


def test_selection_of_missing_op_names_it(decls):
    with pytest.raises(ManifestError, match="aten::gelu.out"):
        _apply_selection(chains(decls), {"operators": {"aten::gelu.out": {"dtypes": ["Float"]}}})


def test_table_is_sorted_for_binary_search(decls):
    registry, _ = render(_apply_selection(chains(decls), None))
    rows = [l.strip() for l in registry.splitlines() if l.strip().startswith('{"aten::')]
    names = [r.split('"')[1] for r in rows]
    assert names == sorted(names) and len(names) == 3


def test_non_out_schema_is_rejected(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("- func: relu(Tensor self) -> Tensor\n  kernel: relu\n  file: op_relu.cc\n  dtypes: [Float]\n")
    with pytest.raises(ManifestError, match="not an out variant"):
        load_manifest(str(p), namespace="ember::portable", library="kernels/portable")


def test_dtypes_an_optimized_kernel_lacks_fall_through_to_portable(decls, tmp_path):
    p = tmp_path / "optimized.yaml"
    p.write_text(
        "- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)\n"
        "  kernel: add_out\n  file: op_add.cc\n  dtypes: [Float]\n"
    )
    fast = load_manifest(str(p), namespace="ember::optimized", library="kernels/optimized")
    chosen = _apply_selection(chains(fast, decls), {"operators": {"aten::add.out": {"dtypes": ["Float", "Long"]}}})
    ((d, mask, per),) = chosen
    f, l = scalar_types.mask(["Float"]), scalar_types.mask(["Long"])
    # The optimized kernel is registered for both; it computes Float and hands Long to portable.
    assert d.library == "kernels/optimized" and mask == f | l
    assert [(x.library, m) for x, m in per] == [("kernels/optimized", f), ("kernels/portable", l)]
    registry, dtypes = render(chosen, fast + decls)
    assert "ember::optimized::add_out(" in registry and "ember::portable::add_out(" not in registry
    assert "add_out_optimized = 0x00000040u" in dtypes and "add_out_portable = 0x00000010u" in dtypes
    # Only Float selected: portable's add is compiled for nothing.
    ((_, _, per),) = _apply_selection(chains(fast, decls), {"operators": {"aten::add.out": {"dtypes": ["Float"]}}})
    assert [m for _, m in per] == [f, 0]


def test_contract_operators_are_named_not_written(tmp_path):
    p = tmp_path / "own.yaml"
    p.write_text(
        "- op: ember::convolution_clamp.out\n  kernel: convolution_clamp_out\n  file: op_c.cc\n  dtypes: [Float]\n"
    )
    (d,) = load_manifest(str(p), namespace="ember::portable", library="kernels/portable")
    assert d.op == "ember::convolution_clamp.out"
    sig, _ = arg_signature(d)
    # input, weight, bias?, 4 int lists, transposed, groups, min, max, out, then the returned out.
    assert sig == "TTtIIIbIiddTT"


@pytest.mark.parametrize(
    "entry, message",
    [
        ("- op: ember::no_such_op.out\n", "not an out= operator of schema/operators.yaml"),
        ("- op: ember::convolution_clamp\n", "not an out= operator of schema/operators.yaml"),
        (
            "- op: ember::convolution_clamp.out\n  func: relu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n",
            "either 'func'",
        ),
    ],
)
def test_contract_operator_errors_say_what_to_write(tmp_path, entry, message):
    p = tmp_path / "bad.yaml"
    p.write_text(entry + "  kernel: k\n  file: f.cc\n  dtypes: [Float]\n")
    with pytest.raises(ManifestError, match=message):
        load_manifest(str(p), namespace="ember::portable", library="kernels/portable")


def test_table_points_the_executor_at_the_selected_features_only(decls, tmp_path):
    from codegen.features import render_header
    from codegen.gen_registration import main

    sel = tmp_path / "sel.yaml"
    sel.write_text("operators:\n  aten::add.out: {dtypes: [Float]}\nfeatures: [control_flow]\n")
    manifest = tmp_path / "kernels.yaml"
    manifest.write_text(MANIFEST)
    out = tmp_path / "out"
    assert (
        main(
            [
                "--manifest",
                f"{manifest}@ember::portable@kernels/portable",
                "--selection",
                str(sel),
                "--out-dir",
                str(out),
            ]
        )
        == 0
    )
    table = (out / "kernel_registry.cc").read_text()
    assert "&kControlFlowSupport,  // control_flow" in table
    assert "nullptr,  // dynamic_shapes" in table and "false,  // scalar_outputs" in table
    assert "nullptr,  // external_data" in table
    # Without a selection (or without `features:`), every feature.
    registry, _ = render(_apply_selection(merge_chains([decls]), None), decls)
    assert "&kDynamicShapeSupport,  // dynamic_shapes" in registry and "true,  // scalar_outputs" in registry
    assert "&kExternalDataSupport,  // external_data" in registry
    header = render_header(["dynamic_shapes"])
    assert "constexpr bool kDynamicShapes = true;" in header and "constexpr bool kControlFlow = false;" in header
    assert "constexpr bool kScalarOutputs = true;" in render_header(None)


def test_operators_sharing_a_kernel_name_share_one_mask():
    """Helium's Float aten::avg_pool2d.out and int8 ember_quantized::avg_pool2d.out are C++ overloads of one
    kernel name: with both selected (every operator, as an SDK bundle builds them) the header defines one mask,
    the union of their dtypes, instead of a redefinition."""
    import os
    import re

    from tests.conftest import ROOT

    libs = [
        load_manifest(os.path.join(ROOT, path), namespace=ns, library=lib)
        for path, ns, lib in [
            ("kernels/helium/kernels.yaml", "ember::helium", "kernels/helium"),
            ("kernels/portable/kernels.yaml", "ember::portable", "kernels/portable"),
            ("kernels/quantized/kernels.yaml", "ember::quantized", "kernels/quantized"),
        ]
    ]
    c = merge_chains(libs)
    _, dtypes = render(_apply_selection(c, None), [d for chain in c for d in chain])
    names = re.findall(r"constexpr uint32_t (\w+) =", dtypes)
    assert len(names) == len(set(names)), sorted(n for n in set(names) if names.count(n) > 1)
    mask = int(re.search(r"avg_pool2d_out_helium = 0x([0-9a-f]+)u", dtypes).group(1), 16)
    float_bit, char_bit = scalar_types.mask(["Float"]), scalar_types.mask(["Char"])
    assert mask & float_bit and mask & char_bit
