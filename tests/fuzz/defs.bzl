"""Fuzz targets: one libFuzzer binary (clang, --config=fuzz) and one corpus replay test (every build) each."""

load("//tools/bazel:ember.bzl", "EMBER_TEST_COPTS")

def ember_fuzz_target(name, srcs, deps, corpus, regressions = [], target_compatible_with = [],
                      fuzzing = "//tests/fuzz:fuzzing"):
    """`name`: the libFuzzer binary; `name`_replay_test: runs every file of `corpus` (directories) and of
    `regressions` (labels of files kept elsewhere, e.g. another package's test data) once.

    The binary needs clang's libFuzzer and coverage instrumentation, so it exists only under --config=fuzz and
    is skipped elsewhere; the replay test builds with any compiler, so the corpus is a regression test in the
    default build and under --config=asan/ubsan too. `target_compatible_with` (e.g. a select on a backend being
    built) limits the replay test; `fuzzing` is the config_setting the binary builds under.
    """
    native.cc_library(
        name = name + "_lib",
        testonly = True,
        target_compatible_with = target_compatible_with,
        srcs = srcs,
        copts = EMBER_TEST_COPTS,
        deps = deps + [
            ":fuzz_input",
            ":fuzz_pal",
        ],
    )
    native.cc_binary(
        name = name,
        testonly = True,
        linkopts = ["-fsanitize=fuzzer"],
        target_compatible_with = select({
            fuzzing: [],
            "//conditions:default": ["@platforms//:incompatible"],
        }),
        deps = [":" + name + "_lib"],
    )
    native.cc_test(
        name = name + "_replay_test",
        srcs = ["replay_main.cc"],
        args = [native.package_name() + "/" + d for d in corpus] + ["$(rootpaths %s)" % r for r in regressions],
        copts = EMBER_TEST_COPTS,
        data = native.glob([d + "/**" for d in corpus]) + regressions,
        target_compatible_with = target_compatible_with,
        deps = [":" + name + "_lib"],
    )
