"""Zoo parity for a cross-built runner (aarch64 under qemu, Windows under wine): the same program on the target's
runner and the host's, against each other and eager PyTorch."""

import torch

import exir
from zoo.models import export_methods
from zoo.runner_io import read_outputs, run


def assert_matches_host_and_eager(name, target, target_runner, host_runner, tmp_path):
    """Zoo model `name`, exported to tmp_path, run by `target_runner` and `host_runner`: float outputs within 1e-5 of
    the output's scale of each other, and of eager PyTorch's within 1e-5 of the scale and 1e-4 relative."""
    programs, inputs, module = export_methods(name)
    pte = tmp_path / f"{name}.pte"
    exir.to_edge(programs).to_executorch().save(str(pte))
    want = module(*inputs["forward"])
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    results = {}
    for who, binary in ((target, target_runner), ("host", host_runner)):
        proc = run(binary, pte, inputs["forward"], str(tmp_path / who))
        assert proc.returncode == 0, f"{who}: {proc.stderr[-2000:]}"
        results[who] = read_outputs(str(tmp_path / who), want)
    for t, h, w in zip(results[target], results["host"], want):
        scale = max(1.0, w.abs().max().item())
        torch.testing.assert_close(t, h, atol=1e-5 * scale, rtol=1e-5)
        torch.testing.assert_close(t, w, atol=1e-5 * scale, rtol=1e-4)
