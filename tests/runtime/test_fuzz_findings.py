"""The programs that crashed the runtime before its structural verifier (runtime/executor/test/testdata/
fuzz_findings; the release Python bindings died with a segmentation fault on them): through ember.runtime each
is now refused with a named error, or loads and runs. One subprocess runs them all, so a regression fails this
test with the signal instead of killing pytest."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FINDINGS = os.path.join(ROOT, "runtime", "executor", "test", "testdata", "fuzz_findings")

PROBE = r"""
import json, sys, torch
from ember import runtime
results = {}
for path in sys.argv[1:]:
    name = path.rsplit("/", 1)[-1]
    try:
        program = runtime.load(path)
        for method in program.methods:
            meta = program.method_meta(method)
            inputs = [torch.zeros(i["shape"], dtype=runtime._DTYPES[i["dtype"]]) for i in meta["inputs"]]
            program.run(method, inputs)
            program.run(method, inputs)
        results[name] = "runs"
    except RuntimeError as e:
        results[name] = "refused: " + str(e)
print(json.dumps(results))
"""

EXPECTED = {
    "program-crash-1.pte": "value 2 needs bytes [16, +1073741888) of a 80-byte constant segment",
    "program-crash-2.pte": "value 2 is tagged Tensor but holds no Tensor table",
    "program-crash-3.pte": "value 12 is tagged Tensor but holds no Tensor table",
    "program-crash-4.pte": "int list 7 item 1 refers to value 432345564227567622, which is not an Int",
    "program-crash-5.pte": "int list 11 item 1 refers to value 42, which is not an Int",
    "program-crash-6.pte": "runs",
    "program-crash-7.pte": "runs",
    "program-crash-8.pte": "output 0 is value 25, which is not a tensor",
    "program-crash-9.pte": "(aten::addmm.out): argument 1 is a None, the kernel expects 'T'",
    "program-crash-10.pte": "value 2 is tagged Tensor but holds no Tensor table",
    "misaligned-int64-constant_offsets.pte": "program: constant offsets 0: 8-byte values not 8-byte aligned",
    "misaligned-int64-int_list.pte": "8-byte values not 8-byte aligned",  # its pool sizes too: checked first
    "misaligned-planned-float.pte": "value 4 is planned at offset 53 of memory id 1, not a multiple of its 4-byte",
    "unplanned-kernel-argument.pte": "tensor with no storage",
    "misaligned-int64-pools.pte": "planned pool sizes 0: 8-byte values not 8-byte aligned",
    "move-changes-kind.pte": "move 3 -> 4 between values of different kinds",
    # Found by tools/fuzz.sh long at 7749dd9 (fuzz-results/2026-11-24-7749dd9.md).
    "misaligned-double-list.pte": "list (value) 15: 8-byte values not 8-byte aligned",
    "overlapping-slice-copy.pte": "instruction 43 (aten::where.self_out) failed: InvalidArgument",
}


def test_findings_are_named_errors_in_python(runtime):
    files = sorted(os.path.join(FINDINGS, f) for f in os.listdir(FINDINGS))
    assert sorted(os.path.basename(f) for f in files) == sorted(EXPECTED)
    proc = subprocess.run([sys.executable, "-c", PROBE, *files], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"the probe died (signal {-proc.returncode})" if proc.returncode < 0 else proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, want in EXPECTED.items():
        got = results[name]
        if want == "runs":
            assert got == "runs", (name, got)
        else:
            assert got.startswith("refused: ") and want in got, (name, got)
