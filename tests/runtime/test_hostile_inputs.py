"""Hostile inputs to the C++ runner and the Python bindings: wrong dtypes, shapes and byte counts, huge or negative
dimensions, the wrong number of inputs, raw files of the wrong length, non-tensor and non-contiguous objects, and
programs claiming more memory than any machine has. Each is refused with a message naming the input or pool, what
was expected and what came; nothing crashes and nothing huge is allocated.

Runner exit codes: 2 usage, 3 program refused, 4 input refused, 5 execution failed."""

import subprocess

import numpy as np
import pytest
import torch

import exir
from zoo.models import export_methods
from tests.runtime.hostile import input_tensor, rewrite, set_pool_size

# Far beyond any machine this runs on: 64 TiB.
HUGE = 1 << 46


@pytest.fixture(scope="module")
def linear_pte(tmp_path_factory):
    programs, _, _ = export_methods("linear")
    path = tmp_path_factory.mktemp("hostile") / "linear.pte"
    path.write_bytes(exir.to_edge(programs).to_executorch().buffer)
    return path


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def run_runner(runner, *args):
    return subprocess.run([runner, *map(str, args)], capture_output=True, text=True, timeout=120)


# --- the runner ------------------------------------------------------------------------------------------------


def test_runner_input_file_of_wrong_length(runner, linear_pte, tmp_path):
    for n in (0, 15, 17, 4096):
        proc = run_runner(runner, linear_pte, "--input", write(tmp_path, f"in{n}.bin", b"\1" * n))
        assert proc.returncode == 4, proc.stderr
        assert "input 0 needs exactly 16 bytes (Float [4 elements]); " in proc.stderr
        assert f"in{n}.bin has {n}\n" in proc.stderr


def test_runner_input_file_missing_or_unreadable(runner, linear_pte, tmp_path):
    proc = run_runner(runner, linear_pte, "--input", tmp_path / "missing.bin")
    assert proc.returncode == 4 and "cannot open input file" in proc.stderr and "for input 0" in proc.stderr
    proc = run_runner(runner, linear_pte, "--input", tmp_path)  # a directory opens, but does not read
    assert proc.returncode == 4 and "cannot read input file" in proc.stderr, proc.stderr


def test_runner_wrong_number_of_inputs(runner, linear_pte):
    proc = run_runner(runner, linear_pte, "--input", "zeros", "--input", "ones")
    assert proc.returncode == 4
    assert "method 'forward' takes 1 inputs; 2 --input flags given" in proc.stderr
    proc = run_runner(runner, linear_pte, *["--input", "zeros"] * 17)
    assert proc.returncode == 2 and "at most 16 --input flags" in proc.stderr


@pytest.mark.parametrize(
    "flag,value",
    [("--runs", "0"), ("--runs", "12x"), ("--runs", "99999999999"), ("--warmup", "-1"), ("--print", "many")],
)
def test_runner_bad_numbers_are_usage_errors(runner, linear_pte, flag, value):
    proc = run_runner(runner, linear_pte, flag, value)
    assert proc.returncode == 2, proc.stderr
    assert f"{flag} takes a whole number in range, got '{value}'" in proc.stderr and "usage:" in proc.stderr


def test_runner_refuses_terabyte_pool_before_allocating(runner, linear_pte, tmp_path):
    bad = write(tmp_path, "huge.pte", set_pool_size(linear_pte.read_bytes(), 1, HUGE))
    proc = run_runner(runner, bad)
    assert proc.returncode == 3, proc.stderr
    assert f"pool 1: {HUGE} bytes" in proc.stderr and "refused before allocating" in proc.stderr


def test_runner_refuses_pools_whose_sum_overflows(runner, linear_pte, tmp_path):
    def edit(p):
        p.execution_plan[0].non_const_buffer_sizes = [0, 32, 2**63 - 1, 2**63 - 1]

    proc = run_runner(runner, write(tmp_path, "wrap.pte", rewrite(linear_pte.read_bytes(), edit)))
    assert proc.returncode == 3, proc.stderr
    # The sum saturates instead of wrapping into a small number.
    assert f"claims {2**64 - 1} bytes" in proc.stderr and f"pool 2: {2**63 - 1} bytes" in proc.stderr


def test_runner_refuses_negative_pool_and_too_many_pools(runner, linear_pte, tmp_path):
    proc = run_runner(runner, write(tmp_path, "neg.pte", set_pool_size(linear_pte.read_bytes(), 1, -5)))
    assert proc.returncode == 3 and "planned pool 1 has size -5" in proc.stderr, proc.stderr

    def many(p):
        p.execution_plan[0].non_const_buffer_sizes = [0] + [32] * 17

    proc = run_runner(runner, write(tmp_path, "many.pte", rewrite(linear_pte.read_bytes(), many)))
    assert proc.returncode == 3 and "plans 17 memory pools; this runner handles 16" in proc.stderr


@pytest.mark.parametrize(
    "sizes,message",
    [
        ([2**31 - 1, 2**31 - 1, 2**31 - 1], "element count overflows 2^31-1 at dimension 1 (size 2147483647)"),
        # Empty, but claiming 2^32 slices along its other dims for kernels to walk.
        ([0, 65536, 65536], "element count overflows 2^31-1 at dimension 2 (size 65536)"),
        ([-4], "size -4 of dimension 0 is negative"),
        ([1, 2**27, 8], "value 0 (4294967296 bytes at offset 16) does not fit memory id 1"),
    ],
)
def test_runner_refuses_huge_or_negative_input_dims(runner, linear_pte, tmp_path, sizes, message):
    def edit(p):
        input_tensor(p, 0).sizes = sizes
        input_tensor(p, 0).dim_order = list(range(len(sizes)))

    proc = run_runner(runner, write(tmp_path, "dims.pte", rewrite(linear_pte.read_bytes(), edit)))
    assert proc.returncode == 3, proc.stderr
    assert message in proc.stderr and "is not a loadable program" in proc.stderr, proc.stderr


# --- the Python bindings ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def linear(runtime, linear_pte):
    return runtime.load(linear_pte.read_bytes())


def test_bindings_refuse_wrong_dtype_shape_and_count(linear):
    with pytest.raises(RuntimeError, match=r"input 0 of 'forward'.*input 0 is Float; got Long"):
        linear.run("forward", [torch.zeros(1, 4, dtype=torch.int64)])
    with pytest.raises(RuntimeError, match=r"input 0 has shape \[1, 4\]; got \[4\]"):
        linear.run("forward", [torch.zeros(4)])
    with pytest.raises(RuntimeError, match=r"input 0 has shape \[1, 4\]; got \[1, 1048576\]"):
        linear.run("forward", [torch.zeros(1, 1 << 20)])
    with pytest.raises(RuntimeError, match="method 'forward' takes 1 inputs, got 0"):
        linear.run("forward", [])
    with pytest.raises(RuntimeError, match="takes 1 inputs, got 2"):
        linear.run("forward", [torch.zeros(1, 4), torch.zeros(1, 4)])


def test_bindings_refuse_non_tensors(linear):
    with pytest.raises(TypeError, match="must be a list or tuple of tensors, got a Tensor"):
        linear.run("forward", torch.zeros(1, 4))
    with pytest.raises(TypeError, match="input 0 of 'forward' is a ndarray; pass torch tensors"):
        linear.run("forward", [np.zeros((1, 4), np.float32)])
    with pytest.raises(TypeError, match="input 0 of 'forward' is a int"):
        linear.run("forward", [3])
    with pytest.raises(TypeError, match="dtype torch.complex64, which .pte programs cannot carry"):
        linear.run("forward", [torch.zeros(1, 4, dtype=torch.complex64)])
    with pytest.raises(TypeError, match="sparse_coo tensor"):
        linear.run("forward", [torch.zeros(1, 4).to_sparse()])
    with pytest.raises(TypeError, match="on meta"):
        linear.run("forward", [torch.zeros(1, 4, device="meta")])


def test_bindings_take_non_contiguous_tensors_as_their_values(linear):
    x = torch.arange(8, dtype=torch.float32).reshape(4, 2).t()[:1]  # a strided view, shape [1, 4]
    assert not x.is_contiguous()
    torch.testing.assert_close(linear.run("forward", [x])[0], linear.run("forward", [x.contiguous()])[0])


def test_extension_refuses_malformed_raw_inputs(linear):
    m = linear._program.load_method("forward")
    x = np.zeros((1, 4), np.float32)
    cases = [
        ([(np.zeros((4, 2), np.float32)[:, 0], 6, [1, 4])], ValueError, "not C-contiguous"),
        ([(np.zeros(4, np.float32)[::-1], 6, [1, 4])], ValueError, "not C-contiguous"),
        ([(x, 99, [1, 4])], ValueError, "99 is not a ScalarType code"),
        ([(x, 2**70, [1, 4])], ValueError, "does not fit in 64 bits"),
        ([(x, 6, [2**40, 4])], ValueError, r"dimension 0 is 1099511627776; a .pte dimension is in \[0, 2\^31\)"),
        ([(x, 6, [1, -4])], ValueError, "dimension 1 is -4"),
        ([(x, 6, None)], TypeError, "the shape must be a sequence of ints"),
        ([(x, 6, [1, 4.0])], TypeError, "dimension 1 must be an int"),
        ([("abc", 6, [1, 4])], TypeError, "buffer protocol"),
        ([5], TypeError, r"expected a \(buffer, dtype code, shape\) tuple, got int"),
        ([(b"\0" * 10, 6, [1, 4])], RuntimeError, "input 0 takes 16 bytes; got 10"),
    ]
    for inputs, error, message in cases:
        with pytest.raises(error, match=message):
            m.run(inputs)
    assert len(m.run([(x, 6, [1, 4])])) == 1  # and it still runs


def test_bindings_refuse_terabyte_pool_before_allocating(runtime, linear_pte):
    bad = runtime.load(set_pool_size(linear_pte.read_bytes(), 1, HUGE))
    assert bad.method_meta("forward")["planned_pools"] == [HUGE]  # describing it is fine
    with pytest.raises(
        RuntimeError,
        match=rf"pool 1: {HUGE} bytes\) but this machine has \d+ bytes of memory; "
        r"refused before allocating",
    ):
        bad.run("forward", [torch.zeros(1, 4)])


def test_bindings_refuse_negative_pool_and_bad_dims(runtime, linear_pte):
    with pytest.raises(RuntimeError, match="loading the program: InvalidProgram .*planned pool 1 has size -5"):
        runtime.load(set_pool_size(linear_pte.read_bytes(), 1, -5))

    def edit(p):
        input_tensor(p, 0).sizes = [-1, 4]

    with pytest.raises(RuntimeError, match="value 0 has a negative size or more bytes than this target can address"):
        runtime.load(rewrite(linear_pte.read_bytes(), edit))
