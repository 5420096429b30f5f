"""The `ember` CLI end to end on the zoo's small_cnn: export -> inspect -> run (outputs equal eager PyTorch's) ->
profile -> bundle + verify -> select (the selection the committed, CI-built small_cnn runner is built from) -> size;
user errors (a missing file, a truncated .pte, a model file that does not exist) exit 1 with one line and no
traceback. The binaries are the ones other tests build (//:runner, its profiling build, runner_verify)."""

import json
import os

import pytest
import torch

from ember.cli import main
from ember.cli.binaries import find_binary
from tests.cli.cli_support import ember, one_line_error
from tests.conftest import ROOT
from zoo.models import ZOO

MODEL = "small_cnn"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    pte = d / f"{MODEL}.pte"
    assert main(["export", MODEL, "-o", str(pte), "--etrecord", "-q"]) == 0
    return d, pte


def test_export_writes_a_program_and_its_source_map(exported, capsys):
    d, pte = exported
    assert (d / f"{MODEL}.etrecord.json").exists()
    assert main(["inspect", str(pte), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["file_bytes"] == pte.stat().st_size


def test_run_matches_eager(exported, capfd):
    d, pte = exported
    module, (x,) = ZOO[MODEL].build()
    x = torch.randn(x.shape, generator=torch.Generator().manual_seed(3))
    torch.save((x,), d / "x.pt")
    assert main(["run", str(pte), "--inputs", str(d / "x.pt"), "--save-outputs", str(d / "y.pt"), "-q"]) == 0
    assert "time:" in capfd.readouterr().out
    (got,) = torch.load(d / "y.pt")
    want = module(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_profile_tabulates_every_operator_and_module(exported, capfd):
    d, pte = exported
    assert main(["profile", str(pte), "--runs", "2", "--top", "0", "--no-svg", "-q"]) == 0
    out = capfd.readouterr().out
    assert (d / f"{MODEL}.etdp").exists()
    assert "2 run(s)" in out
    # small_cnn: two convolutions per run, and the source map names their modules.
    assert "| aten::convolution.out | 2 |" in out
    assert "| features.0 (Conv2d) | 1 |" in out


def test_profile_on_the_python_runtime(exported, capfd):
    # The engine an installed wheel uses by default: ember.runtime's traced extension, one timed run.
    d, pte = exported
    trace = d / "python.etdp"
    argv = ["profile", str(pte), "--engine", "python", "--warmup", "1", "--trace", str(trace), "--no-svg", "--top", "0"]
    assert main(argv) == 0
    out = capfd.readouterr().out
    assert trace.exists() and "1 run(s)" in out
    assert "| aten::convolution.out | 2 |" in out
    assert "| features.0 (Conv2d) | 1 |" in out


def test_bundle_verifies_on_the_runtime(exported, capfd):
    d, _ = exported
    bpte = d / f"{MODEL}.bpte"
    assert main(["bundle", MODEL, "-o", str(bpte), "--cases", "2", "--verify", "-q"]) == 0
    assert "verify: 2 of 2 cases passed" in capfd.readouterr().out
    assert main(["run", str(bpte)]) == 0
    # ember.runtime's verifier (an installed wheel's engine) agrees, case by case, and both fail the same way when
    # the tolerances are zero (convolutions on float32 differ from eager's in their last bits).
    assert main(["run", str(bpte), "--engine", "python"]) == 0
    assert "verify: 2 of 2 cases passed" in capfd.readouterr().out
    codes = [main(["run", str(bpte), "--engine", e, "--atol", "0", "--rtol", "0"]) for e in ("runner", "python")]
    out = capfd.readouterr().out
    assert codes == [1, 1], out  # runner_verify's code for outputs out of tolerance
    assert out.count("verify: 0 of 2 cases passed") == 2


def test_select_writes_the_selection_the_model_runner_builds_from(exported, capfd):
    from selective_build.selection import load, load_features

    d, pte = exported
    written = d / f"{MODEL}.yaml"
    assert main(["select", str(pte), "-o", str(written), "--check"]) == 0
    assert "check: ok" in capfd.readouterr().out
    # examples/selections/small_cnn.yaml builds //examples/selections:small_cnn_runner (tests/runtime).
    committed = os.path.join(ROOT, "examples", "selections", f"{MODEL}.yaml")
    assert load(str(written)) == load(committed)
    assert load_features(str(written)) == load_features(committed)


def test_size_of_the_runner(exported, capfd):
    d, _ = exported
    assert main(["size", "runner", "--json", str(d / "size.json"), "-q"]) == 0
    assert "| runner |" in capfd.readouterr().out
    report = json.loads((d / "size.json").read_text())["runner"]
    # Measured on the runner `ember run` uses: its buckets add up to its code and data, within its file.
    assert report["binary"] == find_binary("runner", quiet=True)
    assert sum(report["buckets"].values()) == report["code_data_bytes"]
    assert 0 < report["code_data_bytes"] <= report["stripped_bytes"] <= os.path.getsize(report["binary"])
    assert "aten::convolution.out" in report["kernels"]


def test_user_errors_exit_1_with_one_line(exported, tmp_path, capsys):
    _, pte = exported
    truncated = tmp_path / "truncated.pte"
    truncated.write_bytes(pte.read_bytes()[:1000])
    for argv, names in (
        (["inspect", tmp_path / "missing.pte"], ["missing.pte"]),
        (["inspect", truncated], ["truncated.pte", "1000"]),
        (["export", f"{tmp_path / 'nope.py'}:Model"], ["nope.py"]),
        (["profile", pte, "--from-trace", tmp_path / "none.etdp"], ["none.etdp"]),
        (["select", truncated], ["truncated", "1000"]),
    ):
        assert main([str(a) for a in argv]) == 1, argv
        one_line_error(capsys.readouterr(), *names)
    # The same through the real entry point, in a process of its own: one line, no traceback.
    r = ember("run", tmp_path / "missing.pte")
    assert r.returncode == 1
    one_line_error(r, "missing.pte")


def test_runner_refusal_keeps_the_runner_code(exported, tmp_path):
    _, pte = exported
    truncated = tmp_path / "truncated.pte"
    truncated.write_bytes(pte.read_bytes()[:1000])
    r = ember("run", truncated, "-q")
    assert r.returncode == 3  # the runner's "program refused"
    assert "not a loadable program" in r.stderr and "Traceback" not in r.stderr
