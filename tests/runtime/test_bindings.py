"""ember.runtime (pybind11) against eager PyTorch over the zoo, and its errors as Python exceptions."""

import pytest
import torch

import exir
from zoo.models import ZOO, export_methods


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_parity(runtime, name):
    programs, inputs, module = export_methods(name)
    program = runtime.load(exir.to_edge(programs).to_executorch().buffer)
    assert sorted(program.methods) == sorted(inputs)
    for method in program.methods:
        for _ in range(2):  # twice: mutable buffers carry over as in eager
            want = getattr(module, method)(*inputs[method])
            want = list(want) if isinstance(want, (tuple, list)) else [want]
            got = program.run(method, inputs[method])
            for g, w in zip(got, want):
                torch.testing.assert_close(g, w, atol=1e-5 * max(1.0, w.abs().max().item()), rtol=1e-4)


def test_a_path_is_mapped_and_runs_as_the_bytes_do(runtime, tmp_path):
    """runtime.load(path) maps the file (the runner's loader) instead of reading and copying it: same program,
    same outputs, and a file that is not a program or not there is refused by name."""
    programs, inputs, _ = export_methods("small_cnn")
    prog = exir.to_edge(programs).to_executorch()
    path = tmp_path / "small_cnn.pte"
    prog.save(str(path))
    from_path, from_bytes = runtime.load(path), runtime.load(prog.buffer)
    assert from_path.method_meta("forward") == from_bytes.method_meta("forward")
    for got, want in zip(from_path.run("forward", inputs["forward"]), from_bytes.run("forward", inputs["forward"])):
        assert torch.equal(got, want)
    with pytest.raises(FileNotFoundError, match="no program file at"):
        runtime.load(tmp_path / "missing.pte")
    junk = tmp_path / "junk.pte"
    junk.write_bytes(b"\0" * 64)
    with pytest.raises(RuntimeError, match="expected 'ET12'"):
        runtime.load(junk)


def test_meta_and_errors(runtime):
    programs, inputs, _ = export_methods("mlp")
    program = runtime.load(exir.to_edge(programs).to_executorch().buffer)
    meta = program.method_meta("forward")
    assert meta["planned_pools"] == [4160]
    assert meta["inputs"][0]["shape"] == [1, 784] and meta["inputs"][0]["dim_order"] == [0, 1]
    with pytest.raises(RuntimeError, match=r"input 0 has shape \[1, 784\]; got \[1, 783\]"):
        program.run("forward", [torch.zeros(1, 783)])
    with pytest.raises(RuntimeError, match="takes 1 inputs, got 2"):
        program.run("forward", [torch.zeros(1, 784), torch.zeros(1)])
    with pytest.raises(RuntimeError, match="no method 'decode'"):
        program.run("decode", [])
    with pytest.raises(RuntimeError, match="expected 'ET12'"):
        runtime.load(b"\0" * 64)
