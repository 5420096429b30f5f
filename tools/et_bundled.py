"""Runs inside the ExecuTorch venv (tools/setup_executorch_venv.sh): ExecuTorch's side of the bundled-program
(.bpte, "BP08") compatibility tests. It never imports Ember; it reads and writes files only.

  make   --out FILE.bpte             ExecuTorch exports a small MLP, bundles it with two test cases
                                     (MethodTestSuite/MethodTestCase, expected outputs from eager) and writes the
                                     .bpte; prints JSON {"cases": n, "program_bytes": n}
  check  FILE.bpte [--atol A --rtol R]
                                     ExecuTorch parses the file (deserialize_from_flatbuffer_to_bundled_program),
                                     then loads it in its runtime (BundledModule) and, for every suite and case, runs
                                     the method on the bundled inputs and verifies the bundled expected outputs; prints JSON
                                     {"suites": {method: {"cases": n, "verified": n, "errors": [...]}}, "version": v}
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch


def _make(out: str) -> None:
    from executorch.devtools import BundledProgram
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.serialize import serialize_from_bundled_program_to_flatbuffer
    from executorch.exir import to_edge

    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)).eval()
    x = torch.randn(2, 8)
    prog = to_edge(torch.export.export(model, (x,))).to_executorch()
    cases = []
    for _ in range(2):
        xi = torch.randn(2, 8)
        cases.append(MethodTestCase(inputs=[xi], expected_outputs=[model(xi).detach()]))
    bundled = BundledProgram(prog, [MethodTestSuite(method_name="forward", test_cases=cases)])
    data = serialize_from_bundled_program_to_flatbuffer(bundled)
    with open(out, "wb") as f:
        f.write(data)
    print(json.dumps({"cases": len(cases), "program_bytes": len(prog.buffer)}))


def _check(path: str, atol: float, rtol: float) -> None:
    from executorch.devtools.bundled_program.serialize import deserialize_from_flatbuffer_to_bundled_program
    from executorch.extension.pybindings.portable_lib import _load_bundled_program_from_buffer

    with open(path, "rb") as f:
        data = f.read()
    parsed = deserialize_from_flatbuffer_to_bundled_program(data)
    bundle = _load_bundled_program_from_buffer(data)
    report = {}
    for suite in parsed.method_test_suites:
        errors, verified = [], 0
        for i in range(len(suite.test_cases)):
            try:
                # Loads case i's bundled inputs, runs the method and compares with the bundled outputs.
                bundle.verify_result_with_bundled_expected_output(suite.method_name, i, rtol, atol)
                verified += 1
            except Exception as e:  # a failed verification raises; report it per case
                errors.append(f"case {i}: {e}")
        report[suite.method_name] = {
            "cases": len(suite.test_cases),
            "verified": verified,
            "errors": errors,
            "inputs": [len(c.inputs) for c in suite.test_cases],
        }
    print(json.dumps({"suites": report, "version": parsed.version, "program_bytes": len(parsed.program)}))


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", required=True)
    c = sub.add_parser("check")
    c.add_argument("path")
    c.add_argument("--atol", type=float, default=1e-8)
    c.add_argument("--rtol", type=float, default=1e-5)
    a = p.parse_args()
    if a.cmd == "make":
        _make(a.out)
    else:
        _check(a.path, a.atol, a.rtol)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
