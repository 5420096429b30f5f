"""The OpInfo sweep's CI tier: PyTorch's own OpInfo samples, a few per kernel, on both builds against eager.

The samples are those `ci_samples.txt` lists: the sweep (`python -m tests.opinfo.sweep ... --ci-list`) picks,
greedily, samples that together reach every (manifest kernel, dtype class) pair its run reached, passing samples
first; dtype classes are float (f32, f64), half (f16, bf16), int and bool. They run batched, 24 to an exported
program, one test per dtype class, each compared at compare.py's tolerances:

- float32: 1e-5 relative to the output's scale, elementwise (1e-4 for reductions and products);
- float64: 1e-10 (1e-8 for reductions and products);
- float16 / bfloat16: one unit in the last place of the output (of its largest magnitude for reductions and
  products);
- integers and Bool: exact.

A sample expected.py records as failing must still fail (strict); any other failure, and any refusal of a sample
listed here (it passed or failed when the list was made), fails the test. The whole sweep, every sample of the
OpInfos in scope: `python -m tests.opinfo.sweep --full` (tests/opinfo/RESULTS.md has its latest results).

Cost, measured on this 2-core machine (shared with other jobs) with the extensions built: the four tests, 430
samples, took 88 s of CPU (85 s user, 3 s system) and 2 min 37 s of wall time, most of it exir's export; the
OpInfo database takes about 7 s to import.
"""

import collections
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _keys():
    with open(os.path.join(HERE, "ci_samples.txt")) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def _by_class():
    from tests.opinfo.sweep import dtype_class

    groups = collections.defaultdict(list)
    for key in _keys():
        groups[dtype_class(key.rsplit("/", 2)[1])].append(key)
    return groups


@pytest.fixture(scope="module")
def db():
    from tests.opinfo.samples import by_name

    return by_name()


@pytest.mark.parametrize("dtype_class", ["float", "half", "int", "bool"])
def test_opinfo_samples_match_eager(runtime, db, dtype_class):
    from tests.opinfo.check import run
    from tests.opinfo.expected import expected
    from tests.opinfo.samples import BY_NAME, samples

    keys = _by_class()[dtype_class]
    wanted = collections.defaultdict(set)
    for key in keys:
        name, dtype, index = key.rsplit("/", 2)
        wanted[(name, dtype)].add(int(index))
    chosen = []
    for (name, dtype), indices in sorted(wanted.items()):
        assert name in db, f"{name}: no such OpInfo in torch's op_db (regenerate ci_samples.txt)"
        ss = samples(db[name], BY_NAME[dtype])
        assert max(indices) < len(ss), f"{name}/{dtype}: {len(ss)} samples, ci_samples.txt names {sorted(indices)}"
        chosen += [ss[i] for i in sorted(indices)]
    problems = []
    for o in run(runtime, chosen, 24):
        cause = expected(o.key)
        if o.stage == "pass" and cause:
            problems.append(f"XPASS {o.key}: passes now; remove its entry from tests/opinfo/expected.py ({cause})")
        elif o.stage == "fail" and not cause:
            problems.append(f"FAILED {o.key} ({o.text}; kernels {', '.join(o.kernels)}): {o.reason}")
        elif o.stage in ("export", "exir"):
            problems.append(f"REFUSED {o.key} by {o.stage} (it ran when ci_samples.txt was made): {o.reason}")
    assert not problems, f"{len(problems)} of {len(chosen)} samples:\n" + "\n".join(problems)
