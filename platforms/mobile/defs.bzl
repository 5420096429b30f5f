"""ember_static_archive: one static library holding a set of cc_libraries and everything they depend on, as a
mobile app links it (Android's NDK build or an Xcode target takes a single .a)."""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

def _static_archive_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    archives = []
    for dep in ctx.attr.deps:
        for linker_input in dep[CcInfo].linking_context.linker_inputs.to_list():
            for library in linker_input.libraries:
                archive = library.static_library or library.pic_static_library
                if archive != None and archive not in archives:
                    archives.append(archive)
    out = ctx.actions.declare_file("lib%s.a" % ctx.label.name)

    # q: append, c: create quietly, s: index, L: take an archive's members rather than the archive itself.
    ctx.actions.run(
        executable = cc_toolchain.ar_executable,
        arguments = ["qcsL", out.path] + [a.path for a in archives],
        inputs = depset(archives, transitive = [cc_toolchain.all_files]),
        outputs = [out],
        mnemonic = "EmberStaticArchive",
        progress_message = "Archiving %s" % out.short_path,
    )
    return [DefaultInfo(files = depset([out]))]

ember_static_archive = rule(
    implementation = _static_archive_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
)
