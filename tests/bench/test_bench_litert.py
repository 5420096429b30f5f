"""LiteRT's side of the benchmark on one small model: litert-torch converts it in .venv-litert, ai-edge-litert's
Interpreter runs it at 1 and 2 threads through the harness's own measurement, and its outputs match eager
PyTorch's on the same inputs; a model the converter cannot take is recorded as an error while the others convert.

Needs .venv-litert (tools/setup_litert_venv.sh: about 2 GB and a minute or more to install, so CI does not build
it); skipped, saying so, without it. Takes about half a minute.
"""

import json
import os
import subprocess

import pytest

from bench import harness as H
from tests.conftest import ROOT

LITERT_PYTHON = os.environ.get("EMBER_LITERT_PYTHON", os.path.join(ROOT, ".venv-litert", "bin", "python3"))

pytestmark = pytest.mark.skipif(
    not os.path.exists(LITERT_PYTHON),
    reason=f"no LiteRT venv at {LITERT_PYTHON} (run tools/setup_litert_venv.sh; CI does not build it)",
)

MODEL = "small_cnn"
# Not in bench/models.py: its conversion fails, and must fail alone.
MISSING = "no_such_model"


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    work = tmp_path_factory.mktemp("litert_work")
    env = H.Env(str(work), pin_cpu=None)
    env.litert_python = LITERT_PYTHON
    H.build_peak_rss(env)
    H.prepare_models(env, [MODEL])  # the inputs and eager's outputs every framework is checked against
    r = subprocess.run(
        [LITERT_PYTHON, "-m", "bench.litert_side", "convert", "--out", str(work / "_litert")]
        + ["--models", f"{MODEL},{MISSING}", "--work", str(work)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, f"bench.litert_side convert failed:\n{r.stderr[-3000:]}"
    return env, json.loads(r.stdout.strip().splitlines()[-1])


def test_converts_the_model_and_records_the_failure(converted):
    _, report = converted
    facts = report[MODEL]
    assert "error" not in facts, facts
    assert os.path.getsize(facts["path"]) == facts["tflite_bytes"] > 0
    # The small CNN's two convolutions and its classifier are in the .tflite as LiteRT operators.
    assert facts["operators"].get("CONV_2D") == 2 and facts["operators"].get("FULLY_CONNECTED") == 1, facts
    assert MISSING in report[MISSING]["error"], report[MISSING]
    assert report["_versions"]["litert-torch"] and report["_versions"]["ai-edge-litert"]


@pytest.mark.parametrize("fw", H.LITERT)
def test_runs_and_matches_eager(converted, fw):
    env, report = converted
    d = os.path.join(env.work, MODEL)
    # The harness's own rounds, as in a benchmark run (litert_side speaks the C++ runners' language).
    r = H.measure_cpp({fw: report[MODEL]["path"]}, env, d, 1, target_s=0.05, min_runs=5, max_runs=200)[fw]
    assert "error" not in r, r
    assert r["rounds"] == H.ROUNDS and 5 <= r["runs"] and 0 < r["min_us"] <= r["median_us"] <= r["p90_us"], r
    assert r["load_us"] > 0 and r["maxrss_kb"] > 0
    facts = H.litert_facts(r["outputs_path"])
    assert facts["threads"] == H.OPTIONAL[fw][2]
    x = facts["xnnpack"]
    assert x["partitions"] >= 1 and 0 < x["in_xnnpack"] <= x["operators"], x
    assert x["operators"] == sum(report[MODEL]["operators"].values()), (x, report[MODEL]["operators"])
    match = H.compare_outputs(d, r["outputs_path"])
    assert match["matches_eager"], f"{fw}: outputs differ from eager by {match['max_abs_err']}"
