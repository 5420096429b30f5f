"""Fuzz campaigns on Ray (tools/heavy/fuzz.py): a target's executions in parts with their own seeds, merged into
one row of the table `tools/fuzz.sh long` writes (tools/fuzz_results.py), resumed without rerunning a part; and a
failing part fails its target's row and keeps the input libFuzzer wrote.

The Ray test runs 3,000 executions of each of two fast targets in three parts each on a local cluster of two CPUs
(skipped without .venv-ray, tools/setup_ray_venv.sh, or without the fuzz binaries: `tools/fuzz.sh bin`, or
`bazel build --config=fuzz //tests/fuzz:all`, builds them; the tool's own build is then a no-op)."""

import base64
import json
import os
import stat
import subprocess

import pytest

from tools import fuzz_results
from tools.heavy import chunks, fuzz
from tools.heavy.commit import identity

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RAY_PY = os.path.join(ROOT, ".venv-ray", "bin", "python3")
BIN = os.path.join(ROOT, "bazel-out", "k8-optfuzz", "bin", "tests", "fuzz")
TARGETS = ["ptd_fuzz", "runner_fill_fuzz"]

LOG = """INFO: Seed: 7
#2\tINITED cov: 101 ft: 240 corp: 12/3Kb exec/s: 0 rss: 40Mb
#1000\tNEW    cov: 107 ft: 251 corp: 13/3306b lim: 24 exec/s: 0 rss: 40Mb L: 5/12 MS: 1 ChangeBit-
#3000\tDONE   cov: 107 ft: 256 corp: 14/3310b lim: 24 exec/s: 1500 rss: 41Mb
stat::number_executed_units: 3000
stat::average_exec_per_sec:     1500
"""


def test_parse_log_and_merged_row():
    p = fuzz_results.parse_log(LOG.replace("number_executed", "number_of_executed"))
    assert p == {"executions": 3000, "rate": 1500, "cov": 107, "ft": 256, "corpus": "14/3310b"}
    parts = [
        dict(p, result="ok", seconds=2.0),
        dict(p, result="FAILED", seconds=1.0, executions=500, cov=109, ft=250, corpus="15/4Kb"),
    ]
    # Executions and seconds summed; coverage, features and corpus each the largest part's; one failure fails it.
    assert fuzz_results.merged_row("t", parts) == "| t | FAILED | 3500 | 3 | 1166 | 109 | 256 | 15/4Kb |"
    assert fuzz_results.row("t", "ok", None, 2.4, None, 1, 2, None) == "| t | ok | ? | 2 | ? | 1 | 2 | ? |"


def test_failing_part_keeps_its_input(tmp_path):
    # A stand-in for a fuzz binary that finds a crash: writes an input where libFuzzer's -artifact_prefix says,
    # and exits 1 as libFuzzer does on a finding.
    fake = tmp_path / "fake_fuzz"
    fake.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do case "$a" in -artifact_prefix=*) p="${a#-artifact_prefix=}";; esac; done\n'
        'printf "boom" > "${p}crash-0123"\n'
        'echo "#9\tNEW    cov: 5 ft: 6 corp: 3/10b"; echo "==1==ERROR: AddressSanitizer: heap-buffer-overflow"\n'
        "exit 1\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    args = {"bins": {"ptd_fuzz": {"path": str(fake), "sha256": fuzz.sha256(str(fake))}}, "flags": {"ptd_fuzz": []}}
    r = fuzz.run_chunk({"target": "ptd_fuzz", "part": 0, "runs": 10, "seed": 1}, args)
    assert (r["result"], r["status"], r["cov"], r["ft"], r["corpus"]) == ("FAILED", 1, 5, 6, "3/10b")
    assert base64.b64decode(r["artifacts"]["crash-0123"]) == b"boom"
    assert "heap-buffer-overflow" in r["log_tail"]
    # Merged with another target's part still to run: the failing target's row says FAILED, its input is kept
    # where the table says, the other target is named as not done, and the status says a finding.
    p = {
        "identity": r["identity"],
        "started": 0.0,
        "args": {"targets": ["ptd_fuzz", "sentencepiece_fuzz"], "runs": 10, "chunk_runs": 10, "seed": 1},
        "chunks": [{"target": "ptd_fuzz", "part": 0}, {"target": "sentencepiece_fuzz", "part": 0}],
    }
    chunks.write_json(chunks.chunk_path(str(tmp_path), 0), r)
    out = tmp_path / "table.md"
    assert fuzz.merge(str(tmp_path), p, str(out), "CMD") == 2  # not done, without partial
    assert fuzz.merge(str(tmp_path), p, str(out), "CMD", partial=True) == 1
    table = out.read_text()
    assert "| ptd_fuzz | FAILED | 0 | " in table and "| sentencepiece_fuzz |" not in table
    assert "Not done yet (resumable): sentencepiece_fuzz (0 of 1 parts)." in table
    kept = tmp_path / "findings" / "ptd_fuzz-part0-crash-0123"
    assert kept.read_bytes() == b"boom" and str(kept) in table
    # A binary other than the one planned is refused.
    args["bins"]["ptd_fuzz"]["sha256"] = "0" * 64
    with pytest.raises(RuntimeError, match="not the binary the run was planned with"):
        fuzz.run_chunk({"target": "ptd_fuzz", "part": 0, "runs": 10, "seed": 1}, args)


def _heavy(tmp_path):
    return subprocess.run(
        [RAY_PY, "-m", "tools.heavy", "fuzz", "--runs", "3000", "--chunk-runs", "1000", "--cpus", "2"]
        + ["--results", str(tmp_path / "parts"), "--out", str(tmp_path / "table.md"), *TARGETS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_ray_campaign_in_parts_resumes(tmp_path):
    if not os.path.exists(RAY_PY):
        pytest.skip("no .venv-ray (tools/setup_ray_venv.sh makes it)")
    if not all(os.path.exists(os.path.join(BIN, t)) for t in TARGETS):
        pytest.skip("fuzz binaries not built (tools/fuzz.sh bin)")
    first = _heavy(tmp_path)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    table = (tmp_path / "table.md").read_text()
    lines = table.splitlines()
    assert lines[0].startswith("# Fuzzing, 3000 executions per target, commit ")
    assert "\n" + fuzz_results.HEAD + "\n" in table
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in lines if line.startswith("| ") and "_fuzz" in line}
    assert sorted(rows) == sorted(TARGETS)
    for cells in rows.values():
        assert cells[1:3] == ["ok", "3000"], cells
        assert int(cells[5]) > 0 and int(cells[6]) > 0  # coverage edges, features
    parts = [json.loads((tmp_path / "parts" / f"chunk-{i:04d}.json").read_text()) for i in range(6)]
    assert [(p["target"], p["part"], p["executions"]) for p in parts] == [
        (t, k, 1000) for t in TARGETS for k in range(3)
    ]
    assert len({p["seed"] for p in parts}) == 6
    # Run again: every part is done, none reruns, and the table is the same. A checkout with uncommitted changes
    # cannot show it is the code the parts ran, so it is refused instead.
    again = _heavy(tmp_path)
    if identity()["dirty"]:
        assert again.returncode != 0 and "resume from a clean checkout" in again.stderr + again.stdout
        return
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "6 of 6 chunks done; running 0" in again.stderr
    assert (tmp_path / "table.md").read_text() == table
