"""The public zoo on Ray (tools/heavy/zoo.py) gives a serial run's report: a few models at CI sizes, checked by
`python -m zoo.public.status` and by tools/heavy on the two Ray nodes test_heavy_ray.py starts on this host, one
model per chunk; then resumed with nothing to run. Skipped without .venv-ray (tools/setup_ray_venv.sh).

Two of the quickest models at CI sizes, one per node (both match eager on both builds at this commit: the whole
zoo does at CI sizes, so a failure's record is compared field by field like any other when one appears). Measured
at 89 s for three models with a 2-CPU fuzz campaign running beside it (load average 10); most of it is the nodes'
start and each process importing torch."""

import json
import os
import subprocess
import sys

from tools.heavy.commit import identity
from tests.opinfo.test_heavy_ray import RAY_PY, ROOT, two_nodes  # noqa: F401 - two_nodes is a fixture

MODELS = ["shufflenet_v2_x0_5", "squeezenet1_1"]  # the zoo's order


def _env():
    """This checkout's ember (and its extensions) in both runs, as pytest.ini's pythonpath gives the tests (the
    venv's ember.pth names the main checkout's); the rest of the environment as the fixture left it."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime", "python")]))


def _records(path):
    with open(path) as f:
        return [{k: v for k, v in d.items() if k != "seconds"} for d in json.load(f)]


def _body(path):
    """The report after its "Written by" line (the command, and how it ran)."""
    return open(path).read().split("\n\n", 2)[2]


def test_ray_zoo_equals_serial_zoo(runtime, two_nodes, tmp_path):  # noqa: F811
    serial = subprocess.run(
        [sys.executable, "-m", "zoo.public.status", "--size", "ci", *MODELS]
        + ["--json", str(tmp_path / "serial.json"), "--out", str(tmp_path / "serial.md")],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert serial.returncode == 0, serial.stderr[-3000:]
    cmd = [RAY_PY, "-m", "tools.heavy", "zoo", "--size", "ci", "--address", two_nodes, *MODELS]
    cmd += ["--results", str(tmp_path / "chunks"), "--json", str(tmp_path / "ray.json")]
    cmd += ["--out", str(tmp_path / "ray.md")]
    ray = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert ray.returncode == 0, ray.stdout[-3000:] + ray.stderr[-3000:]
    chunk_files = sorted(c for c in os.listdir(tmp_path / "chunks") if c.startswith("chunk-"))
    assert len(chunk_files) == len(MODELS), chunk_files
    serial_records = _records(tmp_path / "serial.json")
    assert [r["name"] for r in serial_records] == MODELS
    assert _records(tmp_path / "ray.json") == serial_records
    assert _body(tmp_path / "ray.md") == _body(tmp_path / "serial.md")
    assert "on Ray (tools/heavy): 2 chunks of 1 model(s)" in open(tmp_path / "ray.md").read()
    # Again with the same directory: every chunk is done, nothing runs, the same report (from a clean checkout:
    # one with uncommitted changes cannot show it is the code the chunks ran, so it is refused).
    os.remove(tmp_path / "ray.md")
    again = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    if identity()["dirty"]:
        assert again.returncode != 0 and "resume from a clean checkout" in again.stderr + again.stdout
        return
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"{len(MODELS)} of {len(MODELS)} chunks done; running 0" in again.stderr
    assert _body(tmp_path / "ray.md") == _body(tmp_path / "serial.md")
