"""ember_runtime: a runner (and kernel library) holding only what a selection needs."""

load("//codegen:defs.bzl", "BACKEND_LIBRARIES", "ember_kernels")

def ember_runtime(name, selection, extra_libraries = [], visibility = None):
    """`<name>_kernels` (library) and `<name>_runner` (binary) for `selection` (a selected_operators.yaml).

    extra_libraries: your own kernel libraries, as for codegen's ember_kernels.
    Delegate backends: those the selection names under `backends:` (none for a program without delegates).
    """
    ember_kernels(
        name = name + "_kernels",
        selection = selection,
        extra_libraries = extra_libraries,
        backends = BACKEND_LIBRARIES.keys(),
        visibility = visibility,
    )
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
