"""ember_runtime: a runner (and kernel library) holding only what a selection needs."""

load("//codegen:defs.bzl", "BACKEND_LIBRARIES", "ember_kernels")
load("//runtime/runner:defs.bzl", "ember_runner_library")

def ember_runtime(name, selection, extra_libraries = [], visibility = None):
    """`<name>_kernels` (library) and `<name>_runner` (binary) for `selection` (a selected_operators.yaml).

    extra_libraries: your own kernel libraries, as for codegen's ember_kernels.
    Delegate backends: those the selection names under `backends:` (none for a program without delegates).
    Runtime features: those it names under `features:` (all without the key), in the runtime and the runner.
    """
    ember_kernels(
        name = name + "_kernels",
        selection = selection,
        extra_libraries = extra_libraries,
        backends = BACKEND_LIBRARIES.keys(),
        visibility = visibility,
    )
    ember_runner_library(
        name = name + "_runner_lib",
        features = ":" + name + "_kernels_features",
    )
    native.cc_binary(
        name = name + "_runner",
        linkopts = ["-Wl,--gc-sections"],
        deps = [
            ":" + name + "_kernels",
            ":" + name + "_runner_lib",
            "//runtime/platform:posix",
        ],
        visibility = visibility,
    )
