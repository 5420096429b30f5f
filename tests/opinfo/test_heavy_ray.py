"""The OpInfo sweep on Ray (tools/heavy) gives a serial run's results: a few OpInfos, one sample per dtype, run by
tests/opinfo/sweep.py and by tools/heavy on a cluster of two Ray nodes started on this host (`ray start --head`,
then `ray start --address`), the driver connecting by address. Skipped without .venv-ray
(tools/setup_ray_venv.sh). The nodes are stopped by their process group, not `ray stop`, which would also stop
every other Ray cluster on the machine (a long sweep running in the background, say).

Cost: 38 samples, 2 chunks of 10 units (one per node, each importing the OpInfo database once), measured at
5 min 33 s of wall time on this 2-core machine under a load average of 18 from other jobs (most of it waiting
for a core); the serial run and each chunk are about 7 s of database import and a few exports each."""

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RAY_PY = os.path.join(ROOT, ".venv-ray", "bin", "python3")
OPS = "abs,roll"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(sessions):
    """Every process in the sessions the `ray start` commands made (ray start leaves its nodes in them)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _session_pids(sessions):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(1)


def _session_pids(sessions):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) in sessions:
                    out.append(int(entry))
            except ProcessLookupError:
                continue
    return out


@pytest.fixture
def two_nodes(tmp_path, monkeypatch):
    if not os.path.exists(RAY_PY):
        pytest.skip("no .venv-ray (tools/setup_ray_venv.sh makes it)")
    port = _free_port()
    sessions = set()
    # Ray's socket paths must fit in 107 bytes: pytest's tmp_path is too deep.
    short = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    # Token authentication, with a token of this cluster's own, set for the nodes and every driver the test starts:
    # left unset, `ray start --head` turns it on when ~/.ray/auth_token exists (any local ray.init writes one) but
    # `ray start --address` does not, and the second node is refused.
    token = os.path.join(short, "auth_token")
    with open(token, "w") as f:
        f.write(secrets.token_hex(32))
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", token)
    try:
        for args in (
            [
                "start",
                "--head",
                "--num-cpus=1",
                f"--port={port}",
                "--include-dashboard=false",
                "--disable-usage-stats",
                f"--temp-dir={short}",
            ],
            ["start", f"--address=127.0.0.1:{port}", "--num-cpus=1", "--disable-usage-stats"],
        ):
            p = subprocess.Popen(
                [RAY_PY, "-c", "import sys; from ray.scripts.scripts import main; sys.exit(main())", *args],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
            sessions.add(p.pid)  # a new session's id is its leader's pid
            out, _ = p.communicate(timeout=120)
            assert p.returncode == 0, f"ray {' '.join(args)}:\n{out}"
        yield f"127.0.0.1:{port}"
    finally:
        _stop(sessions)
        shutil.rmtree(short, ignore_errors=True)


def test_ray_run_equals_serial_run(runtime, two_nodes, tmp_path):
    serial = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.opinfo.sweep",
            "--ops",
            OPS,
            "--max-samples",
            "1",
            "--json",
            str(tmp_path / "serial.json"),
            "--out",
            str(tmp_path / "serial.md"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert serial.returncode in (0, 1), serial.stderr[-3000:]
    ray = subprocess.run(
        [
            RAY_PY,
            "-m",
            "tools.heavy",
            "opinfo",
            "--address",
            two_nodes,
            "--ops",
            OPS,
            "--max-samples",
            "1",
            "--per-chunk",
            "3",
            "--results",
            str(tmp_path / "chunks"),
            "--json",
            str(tmp_path / "ray.json"),
            "--out",
            str(tmp_path / "ray.md"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ray.returncode == serial.returncode, ray.stdout[-3000:] + ray.stderr[-3000:]
    with open(tmp_path / "serial.json") as f:
        s = json.load(f)
    with open(tmp_path / "ray.json") as f:
        r = json.load(f)
    hosts = {
        json.load(open(tmp_path / "chunks" / c))["host"]
        for c in os.listdir(tmp_path / "chunks")
        if c.startswith("chunk-")
    }
    assert len(os.listdir(tmp_path / "chunks")) > 2 and hosts, "the run was not chunked"
    assert sorted(r["outcomes"], key=lambda o: o["key"]) == sorted(s["outcomes"], key=lambda o: o["key"])
    assert r["info"] == s["info"]
    # The reports differ in their first paragraph only (the command, how it ran).
    body = [open(tmp_path / n).read().split("\n## Summary", 1)[1] for n in ("serial.md", "ray.md")]
    assert body[0] == body[1]
