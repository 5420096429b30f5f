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


def _export(tmp, model, *flags):
    path = str(tmp / f"{model}{'_'.join(flags).replace('-', '')}.pte")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT}/runtime/python"}
    cmd = [sys.executable, "-m", "ember.cli", "export", model, "-o", path, "--etrecord", "-q", "--no-kernel-check"]
    subprocess.run(cmd + list(flags), check=True, env=env, cwd=ROOT)
    return path


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("explore")
    return {
        "plain": _export(tmp, "small_cnn"),
        "xnnpack": _export(tmp, "small_cnn", "--delegate", "xnnpack"),
        "cond": _export(tmp, "cond_gate"),
        "while": _export(tmp, "while_refine"),
    }


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


def test_all_three_overlays_through_the_cli_path(programs, tmp_path):
    """`ember explore P --etdump T --model M --inputs X` (and `--llm 'FLAGS'`) without serving: the check of
    devtools.explorer.check at its smallest sizes, small_cnn lowered to XNNPACK standing in for MobileNetV2 (the
    plain programs' kernels are the control-flow models' and the LLM's; `python -m devtools.explorer.check` runs the issue's programs at full size).
    Each overlay non-empty on the graph's node ids; the numeric one within NUMERIC_LIMIT of eager (fp32)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT}/runtime/python"}
    script = (
        "import sys\n"
        "from devtools.explorer import check\n"
        "check.use_xnnpack_runtime()\n"
        "llm = next(p for p in check.programs(small=True) if p.name == 'llm')\n"
        "llm.tokens = 3\n"
        "for p in [check.Program('small_cnn xnnpack', 'small_cnn', ('--delegate', 'xnnpack')),\n"
        "          check.Program('cond_gate', 'cond_gate'), check.Program('while_refine', 'while_refine'), llm]:\n"
        "    r = check.check(p, sys.argv[1])\n"
        "    print(r['name'], r['numeric_nodes'], r['worst_relative_error'], flush=True)\n"
    )
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [line.rsplit(" ", 2) for line in r.stdout.splitlines()]
    assert [line[0] for line in lines] == ["small_cnn xnnpack", "cond_gate", "while_refine", "llm"]
    assert all(int(n) > 0 and float(e) <= 1e-4 for _, n, e in lines), r.stdout
