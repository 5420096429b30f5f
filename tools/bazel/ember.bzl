"""Compile settings shared by Ember's C++ libraries and tests."""

# --config=size on Linux x86-64 (//tools/bazel:size_linux_x86_64), on top of .bazelrc's -Os:
SIZE_LINUX_X86_64_COPTS = [
    # Link-time optimization: gcc's linker plugin compiles the runtime, the kernels and the runner as one unit,
    # so a function called once is inlined and one that is never called is not emitted. Per-TU -Os cannot see
    # across files, and the runtime's layers call each other through small functions.
    "-flto",
    # gcc's -Os default, which Bazel's host toolchain turns off: frame pointers let sampling profilers (perf)
    # walk stacks, and size builds are measured, not profiled.
    "-fomit-frame-pointer",
    # The stack protector, kept under LTO: Bazel's host toolchain compiles with -fstack-protector, whose test for a
    # function to protect (a char array in its frame) no longer fires once gcc re-reads the code at link time, so
    # an LTO runner had no stack canary at all. -strong protects every function with a local array or a local
    # whose address is taken (what Debian's and Ubuntu's hardened builds use), and survives LTO.
    "-fstack-protector-strong",
    # Calls into libc go through the GOT instead of PLT stubs. The binary is linked -z now, so every GOT slot is
    # resolved at load and read-only afterwards (RELRO) either way; no stubs, no lazy binding.
    "-fno-plt",
]

# Library code must build freestanding: no exceptions, no RTTI, every warning an error.
EMBER_COPTS = [
    "-fno-exceptions",
    "-fno-rtti",
    "-Wall",
    "-Wextra",
    # A local that hides a parameter or member reads as one variable and is another.
    "-Wshadow",
    "-Werror",
    # Lets the linker drop every function a selective build does not reach.
    "-ffunction-sections",
    "-fdata-sections",
] + select({
    "//tools/bazel:size_linux_x86_64": SIZE_LINUX_X86_64_COPTS,
    "//conditions:default": [],
})

# gtest needs exceptions and RTTI in its own code; tests still fail on warnings.
EMBER_TEST_COPTS = ["-Wall", "-Wextra", "-Wshadow", "-Werror"]

def ember_cc_library(name, copts = [], **kwargs):
    native.cc_library(name = name, copts = EMBER_COPTS + copts, **kwargs)

def ember_cc_test(name, copts = [], deps = [], **kwargs):
    native.cc_test(
        name = name,
        copts = EMBER_TEST_COPTS + copts,
        deps = deps + ["@gtest//:gtest_main"],
        **kwargs
    )
