"""Malformed manifests and selections, run through the commands people and Bazel run (`python -m
codegen.gen_registration`, `python -m selective_build.select`, `python -m selective_build.check`): each is
refused with exit status 1 and one message naming the file, the line or entry, what is wrong and what to write,
never a Python traceback."""

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GOOD_ENTRY = """\
- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  kernel: add_out
  file: op_add.cc
  dtypes: [Float]
"""

# (name, manifest text, expected fragments of the message)
MANIFESTS = [
    (
        "syntax",
        GOOD_ENTRY + "- func: [unclosed\n",
        ["kernels.yaml:6", "flow sequence that starts at line 5", "unclosed bracket"],
    ),
    ("tab_indent", GOOD_ENTRY.replace("  kernel", "\tkernel"), ["kernels.yaml:2", "not valid YAML"]),
    ("not_a_list", "func: add.out\n", ["expected a list of kernel entries", "got dict"]),
    ("entry_is_string", "- add.out\n", ["kernels.yaml:1 (entry 0)", "each entry is a mapping", "got str 'add.out'"]),
    (
        "missing_key",
        GOOD_ENTRY.replace("  file: op_add.cc\n", ""),
        ["kernels.yaml:1 (entry 0) (add.out)", "missing 'file'"],
    ),
    ("typo_key", GOOD_ENTRY.replace("dtypes:", "dtype:"), ["missing 'dtypes'"]),
    ("extra_key", GOOD_ENTRY + "  dtypess: [Float]\n", ["unknown key 'dtypess'"]),
    (
        "kernel_not_string",
        GOOD_ENTRY.replace("kernel: add_out", "kernel: 42"),
        ["'kernel' must be a non-empty string", "got int 42"],
    ),
    (
        "kernel_not_identifier",
        GOOD_ENTRY.replace("kernel: add_out", "kernel: add-out"),
        ["kernel 'add-out' is not a C++ function name"],
    ),
    (
        "func_null",
        GOOD_ENTRY.replace(
            "func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", "func:"
        ),
        ["'func' must be a non-empty string", "null"],
    ),
    ("bad_schema", GOOD_ENTRY.replace("Tensor other,", "Tensor other"), ["cannot parse schema"]),
    (
        "not_out_variant",
        GOOD_ENTRY.replace(", *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", ", *, Scalar alpha=1) -> Tensor"),
        ["is not an out variant"],
    ),
    (
        "dtypes_string",
        GOOD_ENTRY.replace("[Float]", "Float"),
        ["'dtypes' must be a list of dtype names", "got str 'Float'"],
    ),
    ("dtypes_mapping", GOOD_ENTRY.replace("[Float]", "{Float: 1}"), ["'dtypes' must be a list", "got dict"]),
    ("dtypes_nested", GOOD_ENTRY.replace("[Float]", "[[Float]]"), ["dtypes must be names like Float"]),
    (
        "unknown_dtype",
        GOOD_ENTRY.replace("[Float]", "[Float, Float128]"),
        ["unknown dtypes ['Float128']", "use names from"],
    ),
    (
        "duplicate_op",
        GOOD_ENTRY + GOOD_ENTRY.replace("add_out", "add_out2"),
        ["operator aten::add.out declared twice (entries 0 and 1, lines 1 and 5)"],
    ),
]

# (name, selection text, expected fragments)
SELECTIONS = [
    ("syntax", "operators:\n  aten::add.out: {dtypes: [Float\n", ["selection.yaml:", "not valid YAML"]),
    ("a_list", "- aten::add.out\n", ["a selection is a mapping with 'operators'", "got list"]),
    (
        "typo_top_key",
        "operator:\n  aten::add.out:\n    dtypes: [Float]\n",
        ["selection.yaml:1: unknown key 'operator'"],
    ),
    ("operators_list", "operators: [aten::add.out]\n", ["selection.yaml:1: 'operators' must map operator names"]),
    (
        "op_is_list",
        "operators:\n  aten::add.out: [Float]\n",
        ["selection.yaml:2: operator 'aten::add.out'", "expected a mapping with 'dtypes'"],
    ),
    (
        "dtypes_string",
        "operators:\n  aten::add.out:\n    dtypes: Float\n",
        ["operator 'aten::add.out'", "'dtypes' must be a list"],
    ),
    ("unknown_dtype", "operators:\n  aten::add.out:\n    dtypes: [Flaot]\n", ["unknown dtypes ['Flaot']"]),
    (
        "bad_op_name",
        "operators:\n  add_out:\n    dtypes: [Float]\n",
        ["operator 'add_out'", "look like 'aten::add.out'"],
    ),
    (
        "include_all_not_bool",
        "include_all_operators: maybe\noperators: {}\n",
        ["include_all_operators must be true or false"],
    ),
    ("op_extra_key", "operators:\n  aten::add.out:\n    dtype: [Float]\n", ["unknown key 'dtype'"]),
]


class Ran:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run(module, *args):
    """The command's main() in this process (what `python -m module` runs, without a second torch import)."""
    import contextlib
    import importlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = importlib.import_module(module).main(list(args))
        except SystemExit as e:
            code = e.code
        except Exception:  # what a user would see as a traceback
            import traceback

            traceback.print_exc()
            code = "raised"
    return Ran(code, out.getvalue(), err.getvalue())


def run_command(module, *args):
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def assert_named_error(proc, fragments):
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Traceback" not in out, out
    for f in fragments:
        assert f in out, f"{f!r} not in:\n{out}"


@pytest.mark.parametrize("name,text,fragments", MANIFESTS, ids=[m[0] for m in MANIFESTS])
def test_codegen_names_manifest_errors(tmp_path, name, text, fragments):
    manifest = tmp_path / "kernels.yaml"
    manifest.write_text(text)
    proc = run(
        "codegen.gen_registration", "--manifest", f"{manifest}@ember::mine@mine", "--out-dir", str(tmp_path / "out")
    )
    assert_named_error(proc, ["codegen: ", *fragments])


@pytest.mark.parametrize("name,text,fragments", SELECTIONS, ids=[s[0] for s in SELECTIONS])
def test_codegen_names_selection_errors(tmp_path, name, text, fragments):
    manifest = tmp_path / "kernels.yaml"
    manifest.write_text(GOOD_ENTRY)
    selection = tmp_path / "selection.yaml"
    selection.write_text(text)
    proc = run(
        "codegen.gen_registration",
        "--manifest",
        f"{manifest}@ember::mine@mine",
        "--selection",
        str(selection),
        "--out-dir",
        str(tmp_path / "out"),
    )
    assert_named_error(proc, ["codegen: ", *fragments])


@pytest.mark.parametrize("name,text,fragments", SELECTIONS, ids=[s[0] for s in SELECTIONS])
def test_select_merge_names_selection_errors(tmp_path, name, text, fragments):
    selection = tmp_path / "selection.yaml"
    selection.write_text(text)
    assert_named_error(run("selective_build.select", "--merge", str(selection)), ["select: ", *fragments])


def test_missing_files_are_named(tmp_path):
    missing = str(tmp_path / "nope.yaml")
    assert_named_error(
        run("codegen.gen_registration", "--manifest", f"{missing}@ember::mine@mine", "--out-dir", str(tmp_path)),
        [f"codegen: {missing}: cannot read it"],
    )
    assert_named_error(run("selective_build.select", "--merge", missing), [missing])


def test_check_names_bad_selection_and_manifest(tmp_path):
    from zoo.models import export_methods
    import exir

    programs, _, _ = export_methods("add")
    pte = tmp_path / "add.pte"
    pte.write_bytes(exir.to_edge(programs).to_executorch().buffer)
    selection = tmp_path / "selection.yaml"
    selection.write_text(SELECTIONS[4][1])
    assert_named_error(
        run("selective_build.check", str(pte), "--selection", str(selection)),
        ["check: ", "expected a mapping with 'dtypes'"],
    )
    manifest = tmp_path / "kernels.yaml"
    manifest.write_text(MANIFESTS[-1][1])
    assert_named_error(
        run("selective_build.check", str(pte), "--manifest", f"{manifest}@ember::mine@mine"),
        ["check: ", "declared twice"],
    )


def test_corrupt_program_operator_index_is_named(tmp_path):
    from zoo.models import export_methods
    import exir
    from tests.runtime.hostile import rewrite

    programs, _, _ = export_methods("add")
    good = exir.to_edge(programs).to_executorch().buffer

    def edit(p):
        p.execution_plan[0].chains[0].instructions[0].instr_args.op_index = 99

    pte = tmp_path / "bad.pte"
    pte.write_bytes(rewrite(good, edit))
    assert_named_error(
        run("selective_build.select", str(pte)),
        ["select: method 'forward' calls operator 99, but its operator table has 1 entries"],
    )
    assert_named_error(run("selective_build.check", str(pte)), ["check: method 'forward' calls operator 99"])


def test_valid_files_still_pass(tmp_path):
    manifest = tmp_path / "kernels.yaml"
    manifest.write_text(GOOD_ENTRY)
    selection = tmp_path / "selection.yaml"
    selection.write_text(
        textwrap.dedent("""\
        build_features: []
        include_all_operators: false
        operators:
          aten::add.out:
            dtypes: [Float]
            is_root_operator: true
        """)
    )
    proc = run(
        "codegen.gen_registration",
        "--manifest",
        f"{manifest}@ember::mine@mine",
        "--selection",
        str(selection),
        "--out-dir",
        str(tmp_path / "out"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "add_out_mine = 0x00000040u" in (tmp_path / "out" / "selected_dtypes.h").read_text()


def test_documented_commands_print_no_traceback(tmp_path):
    """The same errors through `python -m`, as a shell or Bazel's genrule runs them."""
    manifest = tmp_path / "kernels.yaml"
    manifest.write_text(MANIFESTS[0][1])
    assert_named_error(
        run_command(
            "codegen.gen_registration", "--manifest", f"{manifest}@ember::mine@mine", "--out-dir", str(tmp_path / "out")
        ),
        ["codegen: ", "not valid YAML"],
    )
    selection = tmp_path / "selection.yaml"
    selection.write_text(SELECTIONS[4][1])
    assert_named_error(
        run_command("selective_build.select", "--merge", str(selection)),
        ["select: ", "expected a mapping with 'dtypes'"],
    )
