"""ExecuTorch 1.5.1's XNNPACK-delegated programs on Ember's XnnpackBackend (backends/xnnpack/runtime), on Debian's
2022 XNNPACK: an MLP, MobileNetV2, ResNet18, a transformer block, a model of the newer element-wise and slicing
nodes (sin, cos, tanh, exp, log, rsqrt, slices) that the backend runs on the CPU and one whose blob lists its
inputs in another order than its arguments, made and seeded here
(backends/xnnpack/test/models.py), exported with ExecuTorch's own XnnpackPartitioner in its venv
(tools/et_xnnpack.py), run by the runner and the Python bindings built with --config=xnnpack, against eager PyTorch.

Tolerance (float32, the only dtype these programs have): max |Ember - eager| <= 1e-4 * max(1, max |eager|), with
rtol 1e-4: XNNPACK sums in another order than eager (its GEMM tiles, Winograd-free direct convolutions),
ExecuTorch folds batch norm into the convolutions, and the CPU nodes' exp, tanh and GELU are Ember's vector
versions (a few ulp from eager's). The numbers each model reaches are printed (-s).

Malformed blobs (truncated, wrong magic, bad header offsets, out-of-range value ids, wrong shapes, random bytes)
are refused at load with a message naming what is wrong; the runner never crashes.

Skipped, saying why, without ExecuTorch's venv or Debian's libxnnpack-dev (./setup.sh installs it).
"""

import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys

import pytest
import torch

from zoo.runner_io import read_outputs, run
from exir.serialize.flatc import decode, encode
from exir.serialize.json_codec import _read_nonfinite
from exir.serialize.pte import deserialize_pte
from tests.conftest import ROOT
from backends.xnnpack.test.models import make

ET_PYTHON = os.environ.get("EMBER_ET_PYTHON", os.path.join(ROOT, ".venv-executorch", "bin", "python3"))
DRIVER = os.path.join(ROOT, "tools", "et_xnnpack.py")
SCHEMA = os.path.join(ROOT, "schema", "xnnpack_graph.fbs")

pytestmark = [
    pytest.mark.skipif(
        not os.path.exists(ET_PYTHON),
        reason=f"ExecuTorch venv not found at {ET_PYTHON}: run tools/setup_executorch_venv.sh",
    ),
    pytest.mark.skipif(
        not os.path.exists("/usr/include/xnnpack.h"), reason="Debian's libxnnpack-dev is not installed: run ./setup.sh"
    ),
]


def _bazel_xnnpack(*targets):
    """Builds `targets` with --config=xnnpack; returns that configuration's bazel-bin (its own output tree)."""
    r = subprocess.run(
        ["bazel", "build", "--config=xnnpack", *targets], cwd=ROOT, capture_output=True, text=True, timeout=3600
    )
    assert r.returncode == 0, f"bazel build --config=xnnpack {' '.join(targets)} failed:\n{r.stderr[-3000:]}"
    r = subprocess.run(
        ["bazel", "info", "--config=xnnpack", "bazel-bin"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip()


@pytest.fixture(scope="module")
def xnn_runner(tmp_path_factory):
    bin_dir = _bazel_xnnpack("//runtime/runner:runner_all_backends")
    path = tmp_path_factory.mktemp("bin") / "runner_all_backends"
    shutil.copy(os.path.join(bin_dir, "runtime", "runner", "runner_all_backends"), path)
    return str(path)


@pytest.fixture(scope="module")
def xnn_bindings(tmp_path_factory):
    """Runs a .pte through ember.runtime over the extension built with --config=xnnpack (a copy, in a subprocess:
    this process may hold the default extension already)."""
    bin_dir = _bazel_xnnpack("//runtime/python:_ember_runtime.so")
    lib = tmp_path_factory.mktemp("ext") / "_ember_runtime.so"
    shutil.copy(os.path.join(bin_dir, "runtime", "python", "_ember_runtime.so"), lib)
    script = (
        "import sys, torch\n"
        "from ember import runtime\n"
        "pte, inputs, out = sys.argv[1:4]\n"
        "p = runtime.load(pte)\n"
        "xs = torch.load(inputs)\n"
        "torch.save([p.run('forward', xs) for _ in range(2)], out)\n"
    )

    def go(pte, inputs, workdir):
        os.makedirs(workdir, exist_ok=True)
        torch.save(list(inputs), os.path.join(workdir, "inputs.pt"))
        env = dict(os.environ, EMBER_RUNTIME_LIB=str(lib), PYTHONPATH=f"{ROOT}:{ROOT}/runtime/python")
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                script,
                str(pte),
                os.path.join(workdir, "inputs.pt"),
                os.path.join(workdir, "out.pt"),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return torch.load(os.path.join(workdir, "out.pt"))

    return go


_EXPORTS = {}


def export(name, tmp_path_factory, partitioner="all", inline=False):
    """(pte path, inputs, eager outputs, ExecuTorch's report) for `name`, exported once per variant."""
    key = (name, partitioner, inline)
    if key not in _EXPORTS:
        d = tmp_path_factory.mktemp(f"{name}_{partitioner}{'_inline' if inline else ''}")
        model, inputs = make(name)
        with torch.no_grad():
            eager = model(*inputs)
        torch.export.save(torch.export.export(model, inputs), str(d / "model.pt2"))
        pte = d / "model.pte"
        args = [ET_PYTHON, DRIVER, str(d / "model.pt2"), str(pte), "--partitioner", partitioner]
        proc = subprocess.run(args + (["--inline"] if inline else []), capture_output=True, text=True, timeout=1800)
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        _EXPORTS[key] = (pte, inputs, [eager], report)
    return _EXPORTS[key]


def _errors(got, want):
    err = (got.double() - want.double()).abs().max().item()
    scale = max(1.0, want.abs().max().item())
    return err, err / scale


def _check(name, got, want, how):
    err, rel = _errors(got, want)
    print(f"\n{name} ({how}): max abs error {err:.3g}, relative to max |eager| {rel:.3g}")
    torch.testing.assert_close(got, want, atol=1e-4 * max(1.0, want.abs().max().item()), rtol=1e-4)


# The transformer block with ExecuTorch's full partitioner has batched matmuls and GELU in its blob, which the 2022
# library lacks: the backend runs them on the CPU between XNNPACK runtimes (cpu_nodes.h). With the 2022 configs
# its linears, softmax, adds and permutes are delegated and the rest (layer norm, batched matmul, GELU) runs on
# Ember's kernels around the delegate calls.
CASES = [
    ("mlp", "all"),
    ("mobilenet_v2", "all"),
    ("resnet18", "all"),
    ("transformer_block", "2022"),
    ("transformer_block", "all"),
    ("head_split", "all"),
    ("newer_nodes", "all"),
    ("argument_order", "all"),
]


@pytest.mark.parametrize("name,partitioner", CASES)
def test_runner_matches_eager(xnn_runner, tmp_path_factory, tmp_path, name, partitioner):
    pte, inputs, eager, report = export(name, tmp_path_factory, partitioner)
    assert report["delegates"] >= 1, report
    proc = run(xnn_runner, pte, inputs, str(tmp_path), runs=2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for got, want in zip(read_outputs(str(tmp_path), eager), eager):
        _check(name, got, want, f"runner, {report['delegates']} delegate(s)")


# XNNPACK on its own pthreadpool, made at init for the threads the method was loaded for (runner --threads).
# The transformer block: several delegate calls around Ember's own (threaded) kernels, on one shared pool.
@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18", "transformer_block"])
def test_runner_on_two_threads_matches_eager(xnn_runner, tmp_path_factory, tmp_path, name):
    pte, inputs, eager, _ = export(name, tmp_path_factory, "all")
    proc = run(xnn_runner, pte, inputs, str(tmp_path), runs=2, extra_args=["--threads", "2"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    for got, want in zip(read_outputs(str(tmp_path), eager), eager):
        _check(name, got, want, "runner, 2 threads")


@pytest.mark.parametrize("name,partitioner", CASES)
def test_python_bindings_match_eager(xnn_bindings, tmp_path_factory, tmp_path, name, partitioner):
    pte, inputs, eager, _ = export(name, tmp_path_factory, partitioner)
    for outputs in xnn_bindings(pte, inputs, str(tmp_path)):  # two runs: the second reuses the set-up runtimes
        _check(name, outputs[0], eager[0], "Python bindings")


def test_inline_blob_runs(xnn_runner, tmp_path_factory, tmp_path):
    # extract_delegate_segments=False: the blob sits in the flatbuffer (backend_delegate_data), the weights in
    # the program's named data either way.
    pte, inputs, eager, _ = export("mlp", tmp_path_factory, inline=True)
    program = deserialize_pte(pte.read_bytes()).program
    assert program.backend_delegate_data and program.named_data
    proc = run(xnn_runner, pte, inputs, str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check("mlp", read_outputs(str(tmp_path), eager)[0], eager[0], "inline blob")


def test_full_partition_of_a_transformer_runs_its_newer_nodes_on_the_cpu(tmp_path_factory):
    _, _, _, report = export("transformer_block", tmp_path_factory, "all")
    # Everything but the layer norms in the blobs: the batched matmuls and GELU included (run above, against eager).
    assert not any("bmm" in op or "gelu" in op for op in report["operators"]), report


def test_the_newer_nodes_are_in_the_blob_and_run_on_the_cpu(tmp_path_factory):
    from backends.xnnpack.test.survey import blob_kinds

    pte, _, _, report = export("newer_nodes", tmp_path_factory, "all")
    # All delegated (none left to Ember's kernels outside the blob), run above against eager.
    assert report["operators"] == [], report
    newer = {"StaticSlice", "Tanh", "Exp", "Log", "Sin", "Cos", "ReciprocalSquareRoot"}
    assert newer <= set(blob_kinds(str(pte))), blob_kinds(str(pte))


def test_the_blob_lists_its_inputs_out_of_argument_order(tmp_path_factory):
    # What argument_order is for (run above against eager): the delegate call's arguments are in external-id order,
    # and its input_ids list the same values in another.
    pte, _, _, _ = export("argument_order", tmp_path_factory, "all")
    data = pte.read_bytes()
    at, n = _blob_span(data)
    blob = data[at : at + n]
    fb_off, fb_size = struct.unpack_from("<II", blob, 10)
    graph = json.loads(_read_nonfinite(decode(blob[fb_off : fb_off + fb_size], SCHEMA, "an XNNGraph")))
    tensors = {}
    for v in graph["values"]:
        t = v["value"].get("tensor_value", v["value"])
        tensors[t.get("id_out", 0)] = t
    external = [tensors[i].get("external_id", 0) for i in graph["input_ids"]]
    assert sorted(external) == list(range(len(external))) and external != sorted(external), external


def test_a_node_the_library_lacks_is_refused_naming_it(xnn_runner, tmp_path_factory, tmp_path):
    # Attention is the one node kind of ExecuTorch's schema the backend neither defines in the 2022 library nor runs
    # on the CPU; ExecuTorch 1.5.1 never writes it, so the MLP's sigmoid is made one.
    pte, inputs, _, _ = export("mlp", tmp_path_factory)

    def to_attention(graph):
        node = next(n for n in graph["nodes"] if n["node_type"] == "Sigmoid")
        node["node_type"] = "ScaledDotProductAttention"
        # Only its output: the refusal comes before any field is read, and the graph must fit where it was.
        node["node"] = {"output_id": node["node"]["output_id"]}
        node.pop("debug_handle", None)

    bad = tmp_path / "attention.pte"
    bad.write_bytes(_patched(pte.read_bytes(), _rewrite_graph(to_attention)))
    proc = run(xnn_runner, bad, inputs, str(tmp_path / "w"))
    assert proc.returncode > 0, proc.stderr
    assert re.search(
        r"node \d+ \(XNNScaledDotProductAttention\) needs an XNNPACK newer than this build's", proc.stderr
    ), proc.stderr


def test_selection_names_the_backend(tmp_path_factory, tmp_path):
    # selective_build writes `backends: [XnnpackBackend]` beside the operators outside the delegates, so a
    # per-model runner built from it with --config=xnnpack offers exactly that backend.
    from selective_build.select import main as select_main

    pte, _, _, _ = export("mlp", tmp_path_factory)
    out = tmp_path / "sel.yaml"
    assert select_main([str(pte), "-o", str(out)]) == 0
    assert "backends: [XnnpackBackend]" in out.read_text()


# --- malformed blobs -------------------------------------------------------------------------------------------


def _blob_span(data):
    """(offset, length) of the first delegate's blob inside the .pte bytes."""
    pte = deserialize_pte(data)
    ref = pte.program.execution_plan[0].delegates[0].processed
    blob = (
        pte.segment(ref.index)
        if ref.location.name == "SEGMENT"
        else bytes(pte.program.backend_delegate_data[ref.index].data)
    )
    at = data.find(blob)
    assert at >= 0 and blob[4:8] == b"XH00", blob[:16]
    return at, len(blob)


def _patched(data, fn):
    """The .pte with its first blob rewritten in place by fn(bytearray blob) (same length)."""
    at, n = _blob_span(data)
    blob = bytearray(data[at : at + n])
    fn(blob)
    assert len(blob) == n
    return data[:at] + bytes(blob) + data[at + n :]


def _rewrite_graph(edit):
    """A patch that decodes the blob's XNNGraph with schema/xnnpack_graph.fbs, applies edit(dict), re-encodes it in
    place (the flatbuffer region is padded to 16 bytes; re-encoding ExecuTorch's own flatc output fits in it)."""

    def fn(blob):
        fb_off, fb_size, cd_off = struct.unpack_from("<IIII", blob, 10)[:3]
        # flatc writes a clamp's unbounded side as `inf`, which JSON spells Infinity.
        graph = json.loads(_read_nonfinite(decode(bytes(blob[fb_off : fb_off + fb_size]), SCHEMA, "an XNNGraph")))
        edit(graph)
        text = re.sub(r"(?<![\w\"])(-?)Infinity", r"\1inf", json.dumps(graph))
        new = encode(text, SCHEMA, "the XNNGraph")
        assert len(new) <= cd_off - fb_off, (len(new), cd_off - fb_off)
        blob[fb_off:cd_off] = new + b"\0" * (cd_off - fb_off - len(new))
        struct.pack_into("<I", blob, 14, len(new))

    return fn


def _set_u32(offset, value):
    return lambda blob: struct.pack_into("<I", blob, offset, value)


def _first_fc(graph):
    return next(n for n in graph["nodes"] if n["node_type"] == "FullyConnected")["node"]


MALFORMED = {
    "truncated flatbuffer": (_set_u32(14, 24), "is not a valid flatbuffer"),
    "constant data past the end": (lambda b: struct.pack_into("<Q", b, 22, len(b)), "constant data at ["),
    "flatbuffer offset past the end": (_set_u32(10, 0x7FFF0000), "puts the flatbuffer at [2147418112"),
    "wrong magic": (lambda b: b.__setitem__(slice(36, 40), b"XN99"), "wrong magic: the graph's identifier is 'XN99'"),
    "output id out of range": (
        _rewrite_graph(lambda g: g.__setitem__("output_ids", [4096])),
        "output 0 is value 4096, out of range",
    ),
    "node input id out of range": (
        _rewrite_graph(lambda g: _first_fc(g).__setitem__("input1_id", 5000)),
        "(XNNFullyConnected) input 0 is value 5000, out of range",
    ),
    "output shape the operator cannot fill": (
        _rewrite_graph(
            lambda g: [
                v["value"].__setitem__("dims", [4, 999])
                for v in g["values"]
                if v["value_type"] == "TensorValue" and v["value"].get("dims") == [4, 10]
            ]
        ),
        "expected [4, 10]",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_blob_is_refused_by_name(xnn_runner, tmp_path_factory, tmp_path, case):
    pte, inputs, _, _ = export("mlp", tmp_path_factory)
    patch, message = MALFORMED[case]
    bad = tmp_path / "bad.pte"
    bad.write_bytes(_patched(pte.read_bytes(), patch))
    proc = run(xnn_runner, bad, inputs, str(tmp_path / "w"))
    assert proc.returncode > 0, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    assert message in proc.stderr, proc.stderr[-2000:]
    assert "XnnpackBackend" in proc.stderr


def test_random_bytes_in_the_blob_never_crash(xnn_runner, tmp_path_factory, tmp_path):
    pte, inputs, _, _ = export("mlp", tmp_path_factory)
    data = pte.read_bytes()
    at, n = _blob_span(data)
    (tmp_path / "x.bin").write_bytes(inputs[0].numpy().tobytes())
    rng = random.Random(17)
    outcomes = {}
    for trial in range(40):
        blob = bytearray(data[at : at + n])
        fb_end = min(n, 32 + struct.unpack_from("<I", blob, 14)[0])
        for _ in range(3):  # a few bytes of the header or graph, never the weights (those are just numbers)
            blob[rng.randrange(0, fb_end)] = rng.randrange(256)
        path = tmp_path / f"r{trial}.pte"
        path.write_bytes(data[:at] + bytes(blob) + data[at + n :])
        # Bytes, not text: a corrupted named key is printed as it is, and need not be UTF-8.
        proc = subprocess.run(
            [xnn_runner, str(path), "--input", f"{tmp_path / 'x.bin'}@[4,32]"], capture_output=True, timeout=600
        )
        assert proc.returncode >= 0, f"trial {trial}: killed by signal {-proc.returncode}\n{proc.stderr[-2000:]}"
        outcomes[proc.returncode] = outcomes.get(proc.returncode, 0) + 1
    print(f"\nrandom blob bytes: exit codes {outcomes}")
