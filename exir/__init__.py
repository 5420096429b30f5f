"""exir: Ember's ahead-of-time pipeline, in the shape ExecuTorch users know.

ep = torch.export.export(model, example_inputs)
edge = exir.to_edge(ep)                  # or to_edge({"forward": ep, "encode": ep2})
prog = edge.to_executorch()              # out variants, memory planning, emission
prog.save("model.pte")                   # or prog.buffer
"""

from exir.edge import EdgeCompileConfig, EdgeProgramManager, to_edge, to_edge_transform_and_lower

_LAZY = {
    "ExecutorchBackendConfig",
    "ExecutorchProgramManager",
    "MemoryPlanningConfig",
    "MemoryBudgetError",
    "to_executorch",
    "KernelTarget",
    "KernelMissingError",
}


def __getattr__(name):
    # The back half (planner, schema, serializer) loads on first use, so `import exir` stays light.
    if name in _LAZY:
        from exir import program

        return getattr(program, name)
    if name == "targets":
        import exir.targets

        return exir.targets
    raise AttributeError(f"module 'exir' has no attribute '{name}'")


__all__ = ["EdgeCompileConfig", "EdgeProgramManager", "to_edge", "to_edge_transform_and_lower", *sorted(_LAZY)]
