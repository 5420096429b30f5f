"""Runs batches of OpInfo samples on both builds and says, per sample, what happened.

Outcome per sample (Outcome.stage):
- "pass": both builds match eager at compare.py's tolerances ("random" samples, whose eager result changes with
  the seed (bernoulli, dropout, rand_like, ...), are compared by dtype and shape only, and counted apart). A Half
  or BFloat16 output that misses eager's also passes when it matches eager run in float32 and rounded once: some
  of eager's reduced-precision CPU paths round partial sums (f16 conv_transpose2d: -202.0 where the exact value
  is -202.19 and Ember's correctly rounded result is -202.25);
- "export": torch.export refused it (not Ember's concern; counted);
- "exir": exir refused it with one of its named errors (KernelMissingError, OpSetError, ...): a documented
  refusal, its reason listed in the results;
- "fail": anything else: exir raised another exception, the runtime refused or failed the program, or an output
  differs. Each is a bug to fix or an entry of expectations.EXPECTED_FAILURES.
"""

from __future__ import annotations

import dataclasses
from typing import List, Optional, Sequence

import torch

from tests.opinfo import compare
from tests.opinfo.programs import StageError, eager, flat_outputs, lower
from tests.opinfo.samples import DTYPE_NAMES, Sample

BUILDS = ("default", "portable")


@dataclasses.dataclass
class Outcome:
    key: str
    opinfo: str
    dtype: str
    index: int
    stage: str  # pass | export | exir | fail
    reason: str = ""
    kernels: Sequence[str] = ()
    random: bool = False
    text: str = ""

    def to_json(self):
        return dataclasses.asdict(self)


def _same(a: List[torch.Tensor], b: List[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(
        x.shape == y.shape
        and x.dtype == y.dtype
        and torch.equal(
            torch.nan_to_num(x.double() if x.is_floating_point() else x, nan=7.25),
            torch.nan_to_num(y.double() if y.is_floating_point() else y, nan=7.25),
        )
        for x, y in zip(a, b)
    )


def _reference(s: Sample):
    """(outputs, random) from eager, or raises StageError('export') when eager itself cannot run the sample."""
    try:
        want = eager(s, 0)
    except Exception as e:
        raise StageError("export", f"eager raised {type(e).__name__}: {str(e)[:200]}") from None
    if want is None:
        raise StageError("export", "the op returns no tensors (a Python number or None)")
    again = eager(s, 1)
    return want, not _same(want, again)


def _rounded_float32(s: Sample) -> Optional[List[torch.Tensor]]:
    """Eager on the sample's Half/BFloat16 inputs upcast to float32, each output rounded back to its dtype."""
    low = (torch.float16, torch.bfloat16)
    try:
        torch.manual_seed(0)
        outs = flat_outputs(s.fn(*[t.float() if t.dtype in low else t.clone() for t in s.inputs]))
    except Exception:
        return None
    return [o.to(s.dtype) if o.dtype == torch.float32 else o for o in outs]


def _run_batch(runtime, batch: Sequence[Sample], wants, randoms) -> List[Outcome]:
    prog, kernels, in_pte = lower(batch)
    got = {}
    for build in BUILDS:
        try:
            program = runtime.load(prog.buffer, kernels=build)
            got[build] = program.run("forward", [t.clone() for s in batch for t in s.inputs])
        except Exception as e:
            raise StageError("fail", f"{build} build: {type(e).__name__}: {' '.join(str(e).split())[:300]}", in_pte)
    outcomes, at = [], 0
    for s, want, rnd, ks in zip(batch, wants, randoms, kernels):
        # empty/new_empty: eager's values are whatever the allocator held; only dtype and shape are defined.
        rnd = rnd or any(k.split("::")[-1].startswith(("empty.", "_empty_dim_order.")) for k in ks)
        n = len(want)
        reason = ""
        for build in BUILDS:
            outs = got[build][at : at + n]
            if len(outs) != n:
                reason = f"{build} build: {len(outs)} outputs, eager {n}"
                break
            for j, (g, w) in enumerate(zip(outs, want)):
                if rnd:
                    bad = (
                        None
                        if (g.dtype, g.shape) == (w.dtype, w.shape)
                        else f"got {g.dtype}{list(g.shape)}, eager {w.dtype}{list(w.shape)}"
                    )
                else:
                    bad = compare.mismatch(g, w, compare.reducing(ks))
                    if bad and w.dtype in (torch.float16, torch.bfloat16) and w.dtype == s.dtype:
                        alt = _rounded_float32(s)
                        if (
                            alt is not None
                            and len(alt) == n
                            and compare.mismatch(g, alt[j], compare.reducing(ks)) is None
                        ):
                            bad = None
                if bad:
                    reason = f"{build} build, output {j}: {bad}"
                    break
            if reason:
                break
        at += n
        outcomes.append(
            Outcome(
                s.key,
                s.opinfo,
                DTYPE_NAMES[s.dtype],
                s.index,
                "fail" if reason else "pass",
                reason,
                sorted(ks),
                rnd,
                s.text,
            )
        )
    if len(got["default"]) != at:
        raise StageError("fail", f"the program returned {len(got['default'])} outputs for {at}")
    return outcomes


def run(runtime, samples: Sequence[Sample], batch_size: int = 16) -> List[Outcome]:
    """Every sample's outcome, batched; a batch that fails as a whole is retried sample by sample."""
    ready, outcomes = [], []
    for s in samples:
        try:
            want, rnd = _reference(s)
            ready.append((s, want, rnd))
        except StageError as e:
            outcomes.append(Outcome(s.key, s.opinfo, DTYPE_NAMES[s.dtype], s.index, e.stage, e.reason, text=s.text))
    for at in range(0, len(ready), batch_size):
        chunk = ready[at : at + batch_size]
        outcomes.extend(_run_chunk(runtime, chunk))
    return outcomes


def _run_chunk(runtime, chunk) -> List[Outcome]:
    batch = [c[0] for c in chunk]
    try:
        return _run_batch(runtime, batch, [c[1] for c in chunk], [c[2] for c in chunk])
    except StageError as e:
        if len(chunk) == 1:
            s = batch[0]
            kernels = sorted(e.kernels)
            return [
                Outcome(s.key, s.opinfo, DTYPE_NAMES[s.dtype], s.index, e.stage, e.reason, kernels, chunk[0][2], s.text)
            ]
    # Bisect: halves first, so one bad sample costs log2(batch) extra exports, not batch.
    mid = len(chunk) // 2
    return _run_chunk(runtime, chunk[:mid]) + _run_chunk(runtime, chunk[mid:])
