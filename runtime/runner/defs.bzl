"""The host runner's library, compiled per selection: runner.cc reads "ember/selected_features.h"."""

load("//tools/bazel:ember.bzl", "EMBER_COPTS")

def ember_runner_library(name, features, visibility = None):
    """runner.cc (main) for the runtime features `features` keeps (a header library from codegen's ember_features,
    e.g. ember_kernels' `<name>_features`).

    --threads N comes with the optimized kernels (the ones that split work); without them (--config=size, the
    bare-metal configs) the runner has no thread pool, so size reports measure the single-threaded runtime.
    """
    native.cc_library(
        name = name,
        srcs = ["//runtime/runner:runner.cc"],
        copts = EMBER_COPTS,
        local_defines = select({
            "//kernels:use_optimized": ["EMBER_RUNNER_THREADS=1"],
            "//conditions:default": [],
        }),
        deps = [
            features,
            "//runtime/runner:fill",
            "//runtime/runner:memory_claims",
            "//runtime/core",
            "//runtime/core:loaders",
            "//runtime/executor",
        ] + select({
            "//kernels:use_optimized": ["//runtime/threads:posix_thread_pool"],
            "//conditions:default": [],
        }) + select({
            # --config=profiling: --profile OUT.etdp
            "//runtime/devtools:event_tracer_enabled": [
                "//runtime/devtools:buffer_event_tracer",
                "//runtime/devtools:etdump_writer",
            ],
            "//conditions:default": [],
        }),
        visibility = visibility,
    )
