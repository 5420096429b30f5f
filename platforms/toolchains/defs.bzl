"""One cross C++ toolchain: its config (Bazel's own unix_cc_toolchain_config, so nothing downloads), the
cc_toolchain and the toolchain() that binds it to a target platform."""

load("@bazel_tools//tools/cpp:unix_cc_toolchain_config.bzl", "cc_toolchain_config")

HOST = [
    "@platforms//os:linux",
    "@platforms//cpu:x86_64",
]

# Bazel 4's config asks for every tool; the ones a target cannot use point at /bin/false.
def tools(prefix, llvm_cov = "/bin/false", ar = None):
    return {
        "ar": ar or prefix + "ar",
        "cpp": prefix + "cpp",
        "gcc": prefix + "gcc",
        "gcov": "/bin/false",
        "ld": prefix + "ld",
        "llvm-cov": llvm_cov,
        "nm": prefix + "nm",
        "objcopy": prefix + "objcopy",
        "objdump": prefix + "objdump",
        "strip": prefix + "strip",
    }

def cross_toolchain(name, target_compatible_with, tool_paths, files = ":empty", **config):
    """`name`_config, `name`_cc and `name`_toolchain. `config`: unix_cc_toolchain_config's attributes."""
    defaults = dict(
        abi_libc_version = "unknown",
        abi_version = "unknown",
        dbg_compile_flags = ["-g"],
        host_system_name = "x86_64-unknown-linux-gnu",
        opt_compile_flags = [
            "-O2",
            "-DNDEBUG",
            "-ffunction-sections",
            "-fdata-sections",
        ],
        opt_link_flags = ["-Wl,--gc-sections"],
        toolchain_identifier = name,
        unfiltered_compile_flags = [
            "-Wno-builtin-macro-redefined",
            "-D__DATE__=\"redacted\"",
            "-D__TIMESTAMP__=\"redacted\"",
            "-D__TIME__=\"redacted\"",
        ],
        link_flags = [],
        link_libs = [],
        cxx_flags = ["-std=c++17"],
    )
    defaults.update(config)
    cc_toolchain_config(
        name = name + "_config",
        tool_paths = tool_paths,
        **defaults
    )
    native.cc_toolchain(
        name = name + "_cc",
        all_files = files,
        ar_files = files,
        compiler_files = files,
        dwp_files = ":empty",
        linker_files = files,
        objcopy_files = ":empty",
        strip_files = ":empty",
        supports_param_files = 0,
        toolchain_config = ":" + name + "_config",
    )
    native.toolchain(
        name = name + "_toolchain",
        exec_compatible_with = HOST,
        target_compatible_with = target_compatible_with,
        toolchain = ":" + name + "_cc",
        toolchain_type = "@bazel_tools//tools/cpp:toolchain_type",
    )
