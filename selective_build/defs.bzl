"""ember_runtime: a runner (and kernel library) holding only what a selection needs."""

load("//codegen:defs.bzl", "ember_kernels")

def ember_runtime(name, selection, visibility = None):
    """`<name>_kernels` (library) and `<name>_runner` (binary) for `selection` (a selected_operators.yaml)."""
    ember_kernels(name = name + "_kernels", selection = selection, visibility = visibility)
    native.cc_binary(
        name = name + "_runner",
        linkopts = ["-Wl,--gc-sections"],
        deps = [
            ":" + name + "_kernels",
            "//runtime/platform:posix",
            "//runtime/runner:runner_lib",
        ],
        visibility = visibility,
    )
