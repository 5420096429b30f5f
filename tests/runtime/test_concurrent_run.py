"""Program.run from several Python threads at once (issue #37): each call executes on a loaded copy of the method of
its own, with the GIL released, so every output equals the serial one exactly (torch.equal). Before, the threads
shared one method's planned memory and most outputs were another call's. A method with mutable buffers keeps one
copy and its calls take turns; a copy is given back however a call ends, so a failing call never leaves the others
waiting. How much faster threads finish is the benchmark's business (bench/concurrent_run.py), not a timed test's."""

import threading

import pytest
import torch
from torch import nn

import exir
from ember import runtime
from zoo.models import ZOO

THREADS, RUNS = 4, 120


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        x = torch.relu(self.c1(x))
        x = torch.relu(self.c2(x))
        return self.fc(x.flatten(1))


@pytest.fixture(scope="module")
def cnn():
    torch.manual_seed(37)
    model = SmallCNN().eval()
    g = torch.Generator().manual_seed(3737)
    inputs = [torch.randn(1, 3, 16, 16, generator=g) for _ in range(RUNS)]
    pte = exir.to_edge(torch.export.export(model, (inputs[0],))).to_executorch().buffer
    return pte, model, inputs


def _on_threads(fn, n: int, timeout_s: float = 60.0):
    """fn(k) on n threads at once, started together; fails the test if any raised or did not finish."""
    start, errors = threading.Barrier(n), []

    def body(k):
        try:
            start.wait()
            fn(k)
        except BaseException as e:  # noqa: B036 - reported below, on the test's thread
            errors.append(e)

    threads = [threading.Thread(target=body, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s)
    assert not any(t.is_alive() for t in threads), f"a thread was still running after {timeout_s} s"
    assert not errors, errors


def _run_on_threads(program, inputs, n=THREADS):
    out = [None] * len(inputs)

    def work(k):
        for i in range(k, len(inputs), n):
            out[i] = program.run("forward", [inputs[i]])[0]

    _on_threads(work, n)
    return out


@pytest.mark.parametrize("threads", [1, 2], ids=["no_kernel_pool", "kernel_pool_2"])
def test_threads_get_the_serial_outputs(cnn, threads):
    pte, model, inputs = cnn
    program = runtime.load(pte, threads=threads)
    serial = [program.run("forward", [x])[0] for x in inputs]
    with torch.no_grad():
        torch.testing.assert_close(serial[0], model(inputs[0]), rtol=1e-4, atol=1e-5)
    assert not torch.equal(serial[0], serial[1])  # each input gives its own output
    for _ in range(2):  # twice: the second round reuses the copies the first one loaded
        concurrent = _run_on_threads(program, inputs)
        mismatches = sum(not torch.equal(a, b) for a, b in zip(serial, concurrent))
        assert mismatches == 0, f"{mismatches} of {RUNS} outputs from {THREADS} threads differ from serial"
    loaded, most = program.copies("forward")
    assert 1 <= loaded <= min(THREADS, most)


def test_copies_are_bounded_and_callers_wait(cnn):
    pte, _, inputs = cnn
    program = runtime.load(pte, copies=2)
    serial = [program.run("forward", [x])[0] for x in inputs]
    concurrent = _run_on_threads(program, inputs, n=6)  # more callers than copies: four wait their turn each time
    assert all(torch.equal(a, b) for a, b in zip(serial, concurrent))
    assert program.copies("forward") in ((1, 2), (2, 2))


def test_outputs_own_their_bytes(cnn):
    """An output must not be a view of memory the next run (on any thread) overwrites."""
    pte, _, inputs = cnn
    program = runtime.load(pte, copies=1)
    first = program.run("forward", [inputs[0]])[0]
    kept = first.clone()
    _run_on_threads(program, inputs[1:40])
    assert torch.equal(first, kept)


def test_a_failing_call_gives_its_copy_back(cnn):
    """With one copy, a call refused after taking it (a wrong shape) must give it back, or the next caller waits for
    ever."""
    pte, _, inputs = cnn
    program = runtime.load(pte, copies=1)
    expected = program.run("forward", [inputs[0]])[0]

    def work(k):
        for _ in range(20):
            if k % 2:
                with pytest.raises(RuntimeError, match="input 0"):
                    program.run("forward", [torch.zeros(1, 3, 8, 8)])
            else:
                assert torch.equal(program.run("forward", [inputs[0]])[0], expected)

    _on_threads(work, 4, timeout_s=30)
    assert program.copies("forward") == (1, 1)


def test_a_method_with_state_runs_one_call_at_a_time():
    """running_mean folds each input into buffers every call: one state, so one copy, and with the same input every
    time, the outputs of N calls from threads are exactly the N serial outputs (in some order). Two calls on the
    state at once would repeat or lose a step."""
    model, (x,) = ZOO["running_mean"].build()
    pte = exir.to_edge(torch.export.export(model, (x,))).to_executorch().buffer
    n = 48
    serial_program = runtime.load(pte)
    serial = [serial_program.run("forward", [x])[0] for _ in range(n)]
    assert len({tuple(s.tolist()) for s in serial}) == n  # every step's state differs

    program = runtime.load(pte, copies=8)
    outs, lock = [], threading.Lock()

    def work(k):
        for _ in range(n // 4):
            y = program.run("forward", [x])[0]
            with lock:
                outs.append(tuple(y.tolist()))

    _on_threads(work, 4)
    assert program.copies("forward") == (1, 1)
    assert sorted(outs) == sorted(tuple(s.tolist()) for s in serial)


def test_one_loaded_method_shared_by_threads_runs_one_call_at_a_time(cnn):
    """The extension's own Method object (what run() lends out, and what profiling uses) takes one call at a time:
    threads sharing one get the serial outputs, never another call's bytes."""
    pte, _, inputs = cnn
    program = runtime.load(pte)
    method = program._program.load_method("forward")
    packed = [[(x.reshape(-1).view(torch.uint8).numpy(), 6, list(x.shape))] for x in inputs[:40]]
    serial = [method.run(p)[0][0] for p in packed]
    out = [None] * len(packed)

    def work(k):
        for i in range(k, len(packed), THREADS):
            out[i] = method.run(packed[i])[0][0]

    _on_threads(work, THREADS)
    assert out == serial
