"""One public model through Ember: export with exir, run on the C++ runtime (default and portable-only builds),
compare with eager. Returns what happened as a record instead of raising, so a report can list every model."""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Optional

import torch

import exir

# Float outputs must match eager within this fraction of the output's largest magnitude.
RELATIVE_TOLERANCE = 1e-4
KERNELS = ("default", "portable")


@dataclasses.dataclass
class Result:
    name: str
    source: str
    size: str
    export_ok: bool = False
    parity: dict = dataclasses.field(default_factory=dict)  # kernels -> True/False/None (not run)
    max_error: dict = dataclasses.field(default_factory=dict)  # kernels -> max relative error
    stage: str = ""  # where it failed: build, eager, export, load/run (default|portable), parity
    error: str = ""  # the first line of the exception, as raised
    seconds: float = 0.0

    @property
    def ok(self):
        return self.export_ok and all(self.parity.get(k) for k in KERNELS)

    # Operators (or operator dtypes) at fault, when the error is about operators: export's op-set check or the
    # runtime's OperatorMissing (named by checking the program against the kernel manifests).
    operators: list = dataclasses.field(default_factory=list)

    @property
    def cause(self) -> str:
        """The failure in one line: the operators at fault, else the error as raised."""
        if self.operators:
            return f"{self._kind()}: {', '.join(self.operators)}"
        return self.error

    def causes(self) -> list:
        """One line per reason, so models failing for the same one group together."""
        if self.ok:
            return []
        return [f"{self._kind()}: {op}" for op in self.operators] if self.operators else [self.error]

    def _kind(self):
        return "not core ATen" if self.error.startswith("OpSetError") else "no kernel"


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    if got.shape != want.shape:
        raise AssertionError(f"output shape {tuple(got.shape)} != eager's {tuple(want.shape)}")
    if got.dtype != want.dtype:
        raise AssertionError(f"output dtype {got.dtype} != eager's {want.dtype}")
    if not want.is_floating_point():
        return 0.0 if torch.equal(got, want) else float("inf")
    scale = want.abs().max().item()
    diff = (got.double() - want.double()).abs().max().item()
    return diff / scale if scale > 0 else diff


def _missing_kernels(buffer) -> list:
    """What the kernel manifests lack for this program: 'aten::op.out' or 'aten::op.out (Half)'."""
    from exir.serialize import deserialize_pte
    from selective_build.check import problems
    from selective_build.selection import operators_of

    found = []
    for line in problems(operators_of(deserialize_pte(buffer).program)):
        op, _, why = line.partition(": ")
        dtypes = re.match(r"called with (\[.*?\])", why)
        found.append(f"{op} {dtypes.group(1)}" if dtypes else op)
    return found


def _not_core_aten(message) -> list:
    return sorted(set(re.findall(r"^  ([\w:.]+): not in the core ATen op set", message, re.M)))


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def _flatten(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for o in out for t in _flatten(o)]


def check(model, size: str = "ci", runtime=None, kernels=KERNELS, source: Optional[str] = None) -> Result:
    """Runs one PublicModel; `runtime` is ember.runtime (imported here when None)."""
    from zoo.public.models import source_of

    if runtime is None:
        from ember import runtime
    r = Result(model.name, source or source_of(model), size)
    start = time.monotonic()
    buffer = None
    try:
        r.stage = "build"
        module, inputs = model.build(size)
        r.stage = "eager"
        with torch.no_grad():
            want = _flatten(module(*inputs))
        for i, w in enumerate(want):
            # A constant output (a zero-initialized head) matches anything that is also constant: no parity test.
            if w.is_floating_point() and w.numel() > 1 and bool((w == w.flatten()[0]).all()):
                raise AssertionError(
                    f"eager output {i} is constant ({w.flatten()[0].item()}); parity with it "
                    f"would test nothing: give the model's zero-initialized weights random values"
                )
        r.stage = "export"
        with torch.no_grad():
            ep = torch.export.export(module, inputs)
        program = exir.to_edge(ep).to_executorch()
        r.export_ok = True
        buffer = program.buffer
        del program, ep
        for k in kernels:
            r.stage = f"load/run ({k})"
            got = _flatten(runtime.load(buffer, kernels=k).run("forward", list(inputs)))
            if len(got) != len(want):
                raise AssertionError(f"{len(got)} outputs, eager has {len(want)}")
            err = max(relative_error(g, w) for g, w in zip(got, want))
            r.max_error[k] = err
            r.parity[k] = err <= RELATIVE_TOLERANCE
        r.stage = "parity" if not r.ok else ""
        if not r.ok:
            r.error = (
                "outputs differ from eager: "
                + ", ".join(f"{k} {r.max_error[k]:.2e}" for k in kernels if not r.parity[k])
                + f" > {RELATIVE_TOLERANCE:g}"
            )
    except Exception as e:  # noqa: BLE001 - the report lists every failure, whatever raised it
        r.error = _first_line(e)
        if type(e).__name__ == "OpSetError":
            r.operators = _not_core_aten(str(e))
        elif "OperatorMissing" in str(e):
            r.operators = _missing_kernels(buffer)
    r.seconds = time.monotonic() - start
    return r
