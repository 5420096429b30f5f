"""devtools.explorer: the Model Explorer adapter's graphs (no browser) and the overlays' node data."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("model_explorer")

from devtools import etdump  # noqa: E402
from devtools.explorer import overlays  # noqa: E402
from devtools.explorer.main import EmberPteAdapter  # noqa: E402
from exir.serialize import deserialize_pte  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# devtools.explorer.check at the smallest sizes, in a subprocess (its delegated program's debug run needs the runtime
# built with --config=xnnpack, which the backend's tests built, set before the runtime loads; its trace is written,
# since a build with both the backend and the event tracer would compile every kernel again for this test alone): `ember explore P --etdump T --model M --inputs X` (and
# `--llm 'FLAGS'`) without serving, for small_cnn plain and lowered to XNNPACK (standing in for MobileNetV2, which
# `python -m devtools.explorer.check` runs at full size), cond_gate, while_refine and a 1-layer LLM. Its exports
# (with their source maps) are the other tests' programs.
CHECK = """
import sys
from devtools.explorer import check
check.use_xnnpack_runtime(traced=False)
cfg = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
           num_key_value_heads=1)
for p in [check.Program("small_cnn", "small_cnn"), check.Program("small_cnn xnnpack", "small_cnn", ("--delegate", "xnnpack")),
          check.Program("cond_gate", "cond_gate"), check.Program("while_refine", "while_refine"),
          check.Program("llm", llm=cfg, max_seq_len=8, tokens=3)]:
    r = check.check(p, sys.argv[1], delegate_trace="written")
    print(r["name"].replace(" ", "_"), r["numeric_nodes"], r["worst_relative_error"], flush=True)
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """(the check's output lines split, its directory)."""
    tmp = tmp_path_factory.mktemp("explore")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT}/runtime/python"}
    r = subprocess.run([sys.executable, "-c", CHECK, str(tmp)], env=env, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return [line.split() for line in r.stdout.splitlines()], tmp


@pytest.fixture(scope="module")
def programs(checked):
    tmp = checked[1]
    names = {"plain": "small_cnn", "xnnpack": "small_cnn_xnnpack", "cond": "cond_gate", "while": "while_refine"}
    return {k: str(tmp / f"{v}.pte") for k, v in names.items()}


def _graph(path):
    return EmberPteAdapter().convert(path, {})["graphs"][0]


def test_plain_program_one_node_per_instruction(programs):
    g = _graph(programs["plain"])
    plan = deserialize_pte(open(programs["plain"], "rb").read()).program.execution_plan[0]
    instrs = [n for n in g.nodes if re.fullmatch(r"i\d+", n.id)]
    assert len(instrs) == len(plan.chains[0].instructions)
    conv = next(n for n in instrs if n.label.startswith("aten::convolution"))
    attrs = {a.key: a.value for a in conv.attrs}
    assert "source" in attrs and "module" in attrs  # from the etrecord sidecar
    assert any(a.key == "tensor_shape" and a.value.startswith("float[") for a in conv.outputsMetadata[0].attrs)
    assert any(n.label == "constant" for n in g.nodes)
    ids = {n.id for n in g.nodes}
    assert all(e.sourceNodeId in ids for n in g.nodes for e in n.incomingEdges)


def test_delegate_is_a_group_of_xnnpack_nodes(programs):
    g = _graph(programs["xnnpack"])
    inside = [n for n in g.nodes if n.namespace.startswith("delegate_")]
    call = next(n for n in inside if n.label == "XnnpackBackend call")
    assert call.config.pinToGroupTop
    kinds = {n.label for n in inside}
    assert "Conv2d" in kinds, kinds
    out = next(n for n in g.nodes if n.id == "out0")
    assert out.incomingEdges[0].sourceNodeId.startswith("d")  # the result leaves from an XNNPACK node


def test_control_flow_rebuilt_as_nested_groups(programs):
    cond = {n.namespace for n in _graph(programs["cond"]).nodes}
    assert {"cond_0/then", "cond_0/else"} <= cond
    loop = {n.namespace for n in _graph(programs["while"]).nodes}
    assert {"while_loop_0/condition", "while_loop_0/body"} <= loop


def test_overlays_key_on_the_adapters_node_ids(programs):
    plan = deserialize_pte(open(programs["plain"], "rb").read()).program.execution_plan[0]
    ids = {n.id for n in _graph(programs["plain"]).nodes}
    mem = overlays.memory_values(plan)
    assert mem and set(mem) <= ids and all(v > 0 for v in mem.values())
    runs = [
        etdump.Run(
            "forward",
            [etdump.ProfileEvent("Method::execute", 0, -1, 0, 1000)]
            + [etdump.ProfileEvent("op", 0, i, i * 10, i * 10 + 10) for i in range(3)],
        )
    ]
    t = overlays.time_values(runs)
    assert t["mean_us"] == {"i0": 0.01, "i1": 0.01, "i2": 0.01}
    assert t["share_pct"]["i1"] == pytest.approx(1.0)
    nd = overlays.memory(plan).graphsData["forward"]
    assert nd.gradient and len(nd.results) == len(mem)


def test_all_three_overlays_through_the_cli_path(checked):
    """Each program's three overlays non-empty on the graph's node ids (the check asserts it), and the numeric
    overlay's relative errors against eager within 1e-4 (fp32; devtools.explorer.check.NUMERIC_LIMIT)."""
    lines, _ = checked
    assert [n for n, _, _ in lines] == ["small_cnn", "small_cnn_xnnpack", "cond_gate", "while_refine", "llm"]
    assert all(int(k) > 0 and 0 <= float(e) <= 1e-4 for _, k, e in lines), lines


def test_cli_refuses_a_numeric_overlay_it_cannot_line_up(programs, tmp_path):
    import torch

    from ember.cli import explore
    from ember.cli.errors import CliError

    with pytest.raises(CliError, match="needs both --model"):
        explore.prepare([programs["plain"], "--model", "small_cnn"])
    x = tmp_path / "x.pt"
    torch.save((torch.randn(2, 8),), x)
    # cond_gate's program against another model: not the same instructions, and it says where they part.
    with pytest.raises(
        CliError, match=r"while_refine exports 13 instructions in 'forward', .* has 12, first different at 0"
    ):
        explore.prepare([programs["cond"], "--model", "while_refine", "--inputs", str(x)])
