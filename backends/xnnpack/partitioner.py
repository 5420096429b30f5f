"""XnnpackPartitioner: tags the calls XNNPACK runs (backends.xnnpack.ops), so to_executorch hands each
stretch of them to XnnpackBackend.preprocess and the rest stays on Ember's kernels.

It decides on Ember's lowered form of the method (the calls to_executorch will see, after constant folding), with
the same checks preprocess applies, so a tagged call is always one preprocess can write. A stretch made only of
reshapes and copies is left untagged: a delegate call costs more than the view it would replace.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import torch

from exir.backend.partitioner import CompileSpec, DelegationSpec, PartitionResult, Partitioner
from backends.xnnpack.graph import WEIGHTS_INLINE, WEIGHTS_NAMED
from backends.xnnpack.ops import TRIVIAL, Context, why_not
from backends.xnnpack.preprocess import BACKEND_ID, WEIGHTS_SPEC


class XnnpackPartitioner(Partitioner):
    """Tags, with `tag`, every call of the method that Debian's 2022 XNNPACK (and ExecuTorch 1.5.1's runtime) runs.

    weights: "named" (default, ExecuTorch's layout: weights in the program's named data, shared by key) or
    "inline" (in each delegate's blob). After partition(), `rejected` lists (node, operator, reason) for the calls
    left to Ember's kernels."""

    def __init__(
        self, weights: str = WEIGHTS_NAMED, compile_specs: Optional[List[CompileSpec]] = None, tag: str = "xnnpack"
    ):
        if weights not in (WEIGHTS_NAMED, WEIGHTS_INLINE):
            raise ValueError(f"weights must be '{WEIGHTS_NAMED}' or '{WEIGHTS_INLINE}', got {weights!r}")
        specs = [s for s in (compile_specs or []) if s.key != WEIGHTS_SPEC]
        if weights == WEIGHTS_INLINE:
            specs.append(CompileSpec(WEIGHTS_SPEC, weights.encode()))
        super().__init__(DelegationSpec(BACKEND_ID, specs))
        self.tag = tag
        self.rejected: List[Tuple[str, str, str]] = []

    def partition(self, exported_program: torch.export.ExportedProgram) -> PartitionResult:
        from exir.lowering import lower_method

        graph = lower_method("forward", exported_program)
        calls = graph.calls
        ctx = Context(calls, graph.outputs)
        # Control flow (cond, map, scan, while_loop) is lowered inline between labels; calls there stay with the
        # kernels (a partition must not span a jump).
        marks = [i for i, c in enumerate(calls) if c.op is None]
        first, last = (min(marks), max(marks)) if marks else (len(calls), -1)
        self.rejected = []
        ok = []
        for i, c in enumerate(calls):
            if c.op is None or not c.node_name:
                ok.append(False)
                continue
            if c.tag is not None:
                reason = f"already tagged '{c.tag}' by another partitioner"
            elif first <= i <= last:
                reason = "inside control flow"
            else:
                reason = why_not(c, ctx)
            ok.append(reason is None)
            if reason is not None:
                self.rejected.append((c.node_name, c.op_name, reason))
        tagged = set()
        i = 0
        while i < len(calls):
            if not ok[i]:
                i += 1
                continue
            j = i
            while j < len(calls) and ok[j]:
                j += 1
            run = calls[i:j]
            if any(c.op not in TRIVIAL for c in run):
                tagged.update(c.node_name for c in run)
            i = j
        for node in exported_program.graph_module.graph.nodes:
            if node.op == "call_function" and node.name in tagged:
                node.meta["delegation_tag"] = self.tag
        return PartitionResult(exported_program, {self.tag: self.delegation_spec} if tagged else {})
