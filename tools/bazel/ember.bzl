"""Compile settings shared by Ember's C++ libraries and tests."""

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
]

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
