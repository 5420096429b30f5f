"""to_executorch over the zoo: plans are valid and tight, bytes are deterministic and round-trip, the planned
arena computes what eager computes, and the inspector agrees with the planner."""

import functools

import pytest
import torch

import exir
from zoo.models import ZOO, export_methods
from devtools.inspect import plan_lower_bounds, summarize
from exir.lowering.interpreter import Interpreter
from exir.lowering.ir import Role
from exir.serialize import deserialize_pte


@functools.lru_cache(maxsize=None)
def _exported(name):
    programs, inputs, module = export_methods(name)
    return exir.to_edge(programs), inputs, module


def _program(name, config=None):
    edge, inputs, module = _exported(name)
    return edge.to_executorch(config), inputs, module


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_program(name):
    prog, inputs, module = _program(name)
    pte = deserialize_pte(prog.buffer)
    assert pte.program.execution_plan == prog.program.execution_plan  # round trip
    summary = summarize(pte)
    for method in prog.methods:
        report = prog.reports[method]
        plan = next(p for p in pte.program.execution_plan if p.name == method)
        from_file = plan_lower_bounds(plan)
        for pool in report.pools:
            assert pool.lower_bound_bytes <= pool.planned_bytes
            # The bound recomputed from the file alone equals the planner's own.
            assert from_file.get(pool.mem_id, 0) == pool.lower_bound_bytes
            assert plan.non_const_buffer_sizes[pool.mem_id] == pool.planned_bytes
            assert pool.planned_bytes <= min(pool.by_algorithm.values())
        # The method run over its planned arena (twice: buffers carry over) computes what eager does.
        pools = {p.mem_id: p.planned_bytes for p in report.pools}
        interp = Interpreter(prog.method_graphs[method], prog.plan_offsets[method], pools)
        for _ in range(2):
            want = getattr(module, method)(*inputs[method])
            want = list(want) if isinstance(want, (tuple, list)) else [want]
            for got, w in zip(interp.run(inputs[method]), want):
                torch.testing.assert_close(got, w, atol=1e-5 * max(1.0, w.abs().max().item()), rtol=1e-5)
    assert [m["name"] for m in summary["methods"]] == prog.methods


def test_bytes_are_deterministic():
    a, _, _ = _program("small_cnn")
    b, _, _ = _program("small_cnn")
    assert a.buffer == b.buffer


def test_mlp_arena_holds_activations_only():
    prog, _, _ = _program("mlp")
    pool = prog.reports["forward"].pools[0]
    # input 784 floats + the widest hidden layer (256 floats) live at once; nothing of the weights.
    assert pool.planned_bytes == 784 * 4 + 256 * 4 == 4160
    print(f"\nMLP 784-256-256-10: {pool.planned_bytes} arena bytes (ExecuTorch's portable path plans 806,976)")


def test_segments_are_aligned_and_constants_deduplicated():
    prog, _, _ = _program("two_methods")
    pte = deserialize_pte(prog.buffer)
    assert pte.segment_base % 4096 == 0
    # forward and encode share the encoder weights: stored once.
    weights = prog.method_graphs["encode"].calls[0].args[2]
    assert weights.role is Role.CONSTANT
    assert len(pte.program.constant_segment.offsets) - 1 == 4  # enc.w^T, enc.b, dec.w^T, dec.b


def test_multiple_methods():
    prog, _, _ = _program("two_methods")
    assert prog.methods == ["forward", "encode"]


def test_pools_by_memory_id_and_budget():
    cfg = exir.ExecutorchBackendConfig(
        memory_planning=exir.MemoryPlanningConfig(mem_id=lambda t: 2 if t.role is Role.BUFFER else 1)
    )
    prog, inputs, module = _program("running_mean", cfg)
    pools = {p.mem_id: p.planned_bytes for p in prog.reports["forward"].pools}
    assert pools[2] == 32  # mean (16 B) and count (4 B), each 16-aligned
    assert set(pools) == {1, 2}
    plan = prog.program.execution_plan[0]
    assert plan.non_const_buffer_sizes[0] == 0 and plan.non_const_buffer_sizes[2] == 32

    tight = exir.ExecutorchBackendConfig(
        memory_planning=exir.MemoryPlanningConfig(pool_limits={1: 1000}, pool_names={1: "SRAM"})
    )
    with pytest.raises(
        exir.MemoryBudgetError,
        match=r"needs 4160 bytes in SRAM \(memory id 1\) but the target has "
        r"1000: 3160 bytes over",
    ):
        _program("mlp", tight)


def test_buffer_initial_values_are_kept():
    # A fresh export: an ExportedProgram's state shares storage with its module, which other tests run.
    programs, _, _ = export_methods("running_mean")
    prog = exir.to_edge(programs).to_executorch()
    pte = deserialize_pte(prog.buffer)
    plan = pte.program.execution_plan[0]
    buffers = [
        v.val
        for v in plan.values
        if hasattr(v.val, "allocation_info") and v.val.allocation_info and v.val.data_buffer_idx
    ]
    assert len(buffers) == 2
    seg = pte.program.mutable_data_segments[0]
    mean = next(b for b in buffers if b.sizes == [4])
    raw = pte.segment(seg.segment_index)[seg.offsets[mean.data_buffer_idx] :][:16]
    assert torch.frombuffer(bytearray(raw), dtype=torch.float32).tolist() == [0.5] * 4


def test_non_core_op_is_named_with_its_source_line():
    # histc is not core ATen and PyTorch registers no decomposition for it (bucketize, the op ExecuTorch users found
    # missing only on the device, issue #20270, now decomposes: tests/exir/test_decompositions.py).
    class UsesHistc(torch.nn.Module):
        def forward(self, x):
            return torch.histc(x, bins=4, min=-1, max=1)

    ep = torch.export.export(UsesHistc(), (torch.randn(4),))
    from exir.edge import OpSetError

    with pytest.raises(
        OpSetError,
        match=r"aten::histc: not in the core ATen op set, at .*test_program.py:.*"
        r"no decomposition",
    ):
        exir.to_edge(ep)


def test_malformed_files_raise_clear_errors():
    from exir.serialize import PteFormatError

    prog, _, _ = _program("linear")
    data = prog.buffer
    with pytest.raises(
        PteFormatError, match=r"not a .pte: identifier at byte 4 is 'XY12' \(58593132\), expected 'ET12'"
    ):
        deserialize_pte(b"\x00" * 4 + b"XY12" + data[8:])
    with pytest.raises(PteFormatError, match="truncated"):
        deserialize_pte(data[: len(data) // 2])
    with pytest.raises(PteFormatError, match="at least 8"):
        deserialize_pte(data[:5])
    corrupt = bytearray(data)
    corrupt[0:4] = (10**6).to_bytes(4, "little")
    with pytest.raises(PteFormatError, match="root offset"):
        deserialize_pte(bytes(corrupt))


def test_non_finite_doubles_round_trip():
    """flatc writes inf/-inf/nan as bare words, which JSON lacks; they read back as the same doubles, and words
    inside strings stay as they are."""
    from exir.serialize.json_codec import _read_nonfinite

    class Clamps(torch.nn.Module):
        def forward(self, x):
            return torch.clamp(x, min=float("-inf"), max=float("inf")) + torch.clamp(x, min=float("nan"))

    prog = exir.to_edge(torch.export.export(Clamps(), (torch.ones(2),))).to_executorch()
    doubles = [
        v.val.double_val
        for v in deserialize_pte(prog.buffer).program.execution_plan[0].values
        if type(v.val).__name__ == "Double"
    ]
    assert float("inf") in doubles and float("-inf") in doubles and any(d != d for d in doubles)
    assert (
        _read_nonfinite('{"s": "x: inf, -nan", "d": [inf, -inf, nan, -nan], "info": 1}')
        == '{"s": "x: inf, -nan", "d": [Infinity, -Infinity, NaN, NaN], "info": 1}'
    )


CONSTANT_METHODS = {"get_max_seq_len": 128, "get_eos_ids": [2, 7], "use_kv_cache": True, "get_scale": 0.5}


def _with_constant_methods():
    ep = torch.export.export(torch.nn.Linear(4, 2).eval(), (torch.randn(1, 4),))
    return exir.to_edge(ep, constant_methods=CONSTANT_METHODS).to_executorch()


def test_constant_methods_run_on_the_runtime(runtime):
    """ExecuTorch's constant methods (an LLM's metadata): no inputs, no instructions, scalar outputs (one per list
    item), read back as Python numbers; MethodMeta names their kind."""
    prog = _with_constant_methods()
    assert prog.methods == ["forward", *CONSTANT_METHODS]
    program = runtime.load(prog.buffer)
    for name, value in CONSTANT_METHODS.items():
        want = value if isinstance(value, list) else [value]
        got = program.run(name, [])
        assert got == want and [type(g) for g in got] == [type(w) for w in want], name
        kinds = [o["kind"] for o in program.method_meta(name)["outputs"]]
        assert kinds == [{bool: "Bool", int: "Int", float: "Double"}[type(w)] for w in want]
    assert program.run("forward", [torch.ones(1, 4)])[0].shape == (1, 2)
    with pytest.raises(TypeError, match="a constant method returns ints, floats or bools"):
        exir.to_edge(torch.export.export(torch.nn.ReLU(), (torch.randn(2),)), constant_methods={"bad": "text"})


def test_constant_methods_run_on_executorch(tmp_path):
    """ExecuTorch 1.5.1's runtime reads Ember's constant methods as its LLM runner does."""
    import json
    import os
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    et_python = os.path.join(root, ".venv-executorch", "bin", "python3")
    if not os.path.exists(et_python):
        pytest.skip("ExecuTorch venv not found: run tools/setup_executorch_venv.sh")
    path = tmp_path / "constants.pte"
    _with_constant_methods().save(str(path))
    torch.save([], tmp_path / "none.pt")
    for name, value in CONSTANT_METHODS.items():
        r = subprocess.run(
            [
                et_python,
                os.path.join(root, "tools", "et_reference.py"),
                "run",
                str(path),
                str(tmp_path / "none.pt"),
                "--method",
                name,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        got = json.loads(r.stdout.strip().splitlines()[-1])["outputs"]
        assert got == (value if isinstance(value, list) else [value]), name
