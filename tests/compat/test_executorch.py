"""Compatibility with ExecuTorch 1.5.1, both ways, and Ember's planner against ExecuTorch's on the zoo.

These run in ExecuTorch's own venv (tools/setup_executorch_venv.sh makes .venv-executorch; EMBER_ET_PYTHON
points elsewhere) through tools/et_reference.py, and are skipped, saying why, where it does not exist.
"""

import json
import os
import subprocess

import pytest
import torch


import exir
from zoo.models import ZOO, export_methods
from devtools.inspect import summarize
from exir.serialize import deserialize_pte

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ET_PYTHON = os.environ.get("EMBER_ET_PYTHON", os.path.join(ROOT, ".venv-executorch", "bin", "python3"))
DRIVER = os.path.join(ROOT, "tools", "et_reference.py")

pytestmark = pytest.mark.skipif(
    not os.path.exists(ET_PYTHON),
    reason=f"ExecuTorch venv not found at {ET_PYTHON}: run tools/setup_executorch_venv.sh to enable these tests",
)


def _driver(*args, timeout=900):
    r = subprocess.run([ET_PYTHON, DRIVER, *args], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"et_reference.py {args[0]} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def executorch_zoo(tmp_path_factory):
    """ExecuTorch's own export of every zoo model: its .pte files and planned pool sizes."""
    out = tmp_path_factory.mktemp("et_zoo")
    return out, _driver("export", "--out", str(out))


@pytest.fixture(scope="module")
def ember_zoo(tmp_path_factory):
    """Ember's export of every zoo model, run by ExecuTorch's runtime."""
    out = tmp_path_factory.mktemp("ember_zoo")
    programs, eager = {}, {}
    for name in ZOO:
        progs, inputs, module = export_methods(name)
        prog = exir.to_edge(progs).to_executorch()
        prog.save(str(out / f"{name}.pte"))
        torch.save(inputs, out / f"{name}.inputs.pt")
        eager[name] = {}
        for method, args in inputs.items():
            o = getattr(module, method)(*args)
            eager[name][method] = list(o) if isinstance(o, (tuple, list)) else [o]
        programs[name] = prog
    status = _driver("run-batch", str(out))
    return out, programs, eager, status


@pytest.mark.parametrize("name", sorted(ZOO))
def test_ember_programs_run_on_executorch(ember_zoo, name):
    out, _, eager, status = ember_zoo
    assert status[name] == "ok", f"ExecuTorch could not run Ember's {name}.pte: {status[name]}"
    got = torch.load(out / f"{name}.et_outputs.pt")
    for method, want in eager[name].items():
        for g, w in zip(got[method], want):
            # fp32; ExecuTorch's kernels sum in another order than eager's, and BN is folded into conv weights.
            torch.testing.assert_close(g, w, atol=1e-5 * max(1.0, w.abs().max().item()), rtol=1e-4)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_executorch_programs_parse_in_ember(executorch_zoo, name):
    out, _ = executorch_zoo
    with open(out / f"{name}.pte", "rb") as f:
        pte = deserialize_pte(f.read())
    summary = summarize(pte)
    assert summary["methods"] and all(m["instructions"] for m in summary["methods"])


def test_planner_never_worse_than_executorch(executorch_zoo, ember_zoo):
    _, et_plans = executorch_zoo
    _, programs, _, _ = ember_zoo
    rows = []
    for name in sorted(ZOO):
        for method, rep in programs[name].reports.items():
            ember = sum(p.planned_bytes for p in rep.pools)
            et = sum(et_plans[name][method]["planned"])
            rows.append((name, method, ember, et))
            assert ember <= et, f"{name}.{method}: Ember plans {ember} bytes, ExecuTorch {et}"
    print("\nplanned arena bytes, Ember vs ExecuTorch 1.5.1 (portable):")
    for name, method, ember, et in rows:
        print(f"  {name + '.' + method:32s} {ember:>10,d} {et:>10,d}  ({et / max(ember, 1):.1f}x)")


@pytest.fixture(scope="module")
def executorch_outputs(executorch_zoo):
    """ExecuTorch's runtime running its own exports (the reference for Ember running the same files)."""
    out, _ = executorch_zoo
    status = _driver("run-batch", str(out))
    return out, status


@pytest.mark.parametrize("name", sorted(ZOO))
def test_executorch_programs_run_on_ember(executorch_outputs, runner, tmp_path, name):
    from zoo.runner_io import read_outputs, run

    out, status = executorch_outputs
    assert status[name] == "ok", status[name]
    inputs = torch.load(out / f"{name}.inputs.pt")
    reference = torch.load(out / f"{name}.et_outputs.pt")
    for method, args in inputs.items():
        work = tmp_path / method
        proc = run(runner, out / f"{name}.pte", args, str(work), method=method)
        assert proc.returncode == 0, proc.stderr[-2000:]
        # Same program, same inputs, two runtimes: equal up to float summation order.
        for got, want in zip(read_outputs(str(work), reference[method]), reference[method]):
            torch.testing.assert_close(got, want, atol=1e-5 * max(1.0, want.abs().max().item()), rtol=1e-4)
