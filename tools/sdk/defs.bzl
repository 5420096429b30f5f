"""ember_sdk: an SDK bundle (a .tar.gz) for CMake, pkg-config and Makefile users, from Bazel's own libraries.

Each component is a cc_library (with what it depends on) that becomes one static library, lib/libember_<name>.a.
An archive Bazel built for an earlier component is not repeated in a later one; the later component links the
earlier one instead (EmberConfig.cmake and ember.pc get that graph from here), so every object is in exactly one
library and a user links the libraries in the usual static order.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

def _archives_of(target, pic):
    """(static archives in link order, user link flags) of a cc target and everything it depends on."""
    archives = []
    flags = []
    for linker_input in target[CcInfo].linking_context.linker_inputs.to_list():
        for flag in linker_input.user_link_flags:
            if flag not in flags:
                flags.append(flag)
        for library in linker_input.libraries:
            # Hosted users link position-independent executables (Debian's gcc default, Android's), so PIC there;
            # bare-metal startup code copies .data only and would leave a GOT unrelocated, so not there.
            if pic:
                archive = library.pic_static_library or library.static_library
            else:
                archive = library.static_library or library.pic_static_library
            if archive != None and archive not in archives:
                archives.append(archive)
    return archives, flags

def _workspace_relative(path):
    """A header's or include directory's path as the workspace (or an external repository's root) sees it."""
    if path.startswith("bazel-out/"):
        path = path.split("/", 3)[3] if path.count("/") >= 3 else ""  # bazel-out/<config>/bin/...
    if path.startswith("external/"):
        parts = path.split("/", 2)
        path = parts[2] if len(parts) > 2 else ""
    elif path.startswith("../"):
        parts = path.split("/", 2)
        path = parts[2] if len(parts) > 2 else ""
    return path

def _include_paths(header, include_dirs):
    """Where `header` goes under include/: the paths its includers name it by.

    Its path in the workspace ("runtime/core/tensor.h"), and its path below an `includes` directory of the library
    that declares it when it has one (<ember/version.h> from //tools/version, <flatbuffers/base.h> from
    @flatbuffers, <ember/ember.h> from a library with includes = ["include"]).
    """
    path = header.short_path
    marker = "_virtual_includes/"
    if marker in path:
        # strip_include_prefix/include_prefix libraries: <package>/_virtual_includes/<name>/<include path>
        return [path.split(marker, 1)[1].split("/", 1)[1]]
    path = _workspace_relative(path)
    paths = [path]
    best = None
    for d in include_dirs:
        if (d == "" or path.startswith(d + "/")) and (best == None or len(d) > len(best)):
            best = d
    if best != None:
        stripped = path[len(best) + 1:] if best else path
        if stripped not in paths:
            paths.append(stripped)
    return paths

def _merge_archive(ctx, cc_toolchain, name, archives):
    """One static library from several, with ar's MRI script (GNU ar, binutils' cross ar and llvm-ar read it)."""
    out = ctx.actions.declare_file("%s_sdk/lib/libember_%s.a" % (ctx.label.name, name))
    script = ctx.actions.declare_file("%s_sdk/mri/%s.mri" % (ctx.label.name, name))
    lines = ["create " + out.path] + ["addlib " + a.path for a in archives] + ["save", "end", ""]
    ctx.actions.write(script, "\n".join(lines))
    ctx.actions.run_shell(
        command = '"$1" -M < "$2"',
        arguments = [cc_toolchain.ar_executable, script.path],
        inputs = depset(archives + [script], transitive = [cc_toolchain.all_files]),
        outputs = [out],
        mnemonic = "EmberSdkArchive",
        progress_message = "Merging libember_%s.a" % name,
    )
    return out

def _ember_sdk_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    owner = {}  # Bazel archive -> the component that ships it
    components = []
    libraries = []
    headers = {}  # include path -> File
    for target, name in zip(ctx.attr.components, ctx.attr.component_names):
        archives, flags = _archives_of(target, ctx.attr.pic)
        own = [a for a in archives if a not in owner]
        deps = []
        for a in archives:
            if a in owner and owner[a] not in deps:
                deps.append(owner[a])
        for a in own:
            owner[a] = name
        context = target[CcInfo].compilation_context
        include_dirs = {}
        for d in context.includes.to_list() + context.system_includes.to_list():
            if not d.startswith("/"):  # system directories are the user's own
                include_dirs[_workspace_relative(d) if d not in (".", "") else ""] = True
        for h in context.headers.to_list():
            if h.extension in ("h", "hpp", "inc"):
                for include in _include_paths(h, include_dirs.keys()):
                    headers.setdefault(include, h)
        library = _merge_archive(ctx, cc_toolchain, name, own) if own else None
        if library:
            libraries.append(library)
        components.append(struct(
            name = name,
            library = library.path if library else "",
            deps = deps,
            defines = target[CcInfo].compilation_context.defines.to_list(),
            link_flags = flags,
            whole_archive = name in ctx.attr.whole_archive,
        ))

    # Other files: a directory (ending in "/") takes files by their path in the workspace (sources keep their
    # layout, so Python packages still import); any other destination is the one file's path.
    files = {}
    for target, dest in ctx.attr.files.items():
        for f in target.files.to_list():
            files[dest + f.short_path if dest.endswith("/") else dest] = f
    spec = struct(
        name = ctx.attr.bundle_name,
        target = ctx.attr.target_name,
        components = components,
        headers = {k: v.path for k, v in headers.items()},
        files = {k: v.path for k, v in files.items()},
        version_file = ctx.file.version.path,
        kernel_chain = ctx.attr.kernel_chain,
    )
    spec_file = ctx.actions.declare_file(ctx.label.name + "_sdk/spec.json")
    ctx.actions.write(spec_file, spec.to_json())
    out = ctx.actions.declare_file(ctx.attr.bundle_name + ".tar.gz")
    ctx.actions.run(
        executable = ctx.executable._python,
        arguments = [ctx.file._packer.path, spec_file.path, out.path],
        inputs = [spec_file, ctx.file.version, ctx.file._packer] + ctx.files._cmake + libraries + headers.values() + files.values(),
        outputs = [out],
        mnemonic = "EmberSdk",
        progress_message = "Packing %s" % out.short_path,
    )
    return [DefaultInfo(files = depset([out]))]

ember_sdk = rule(
    implementation = _ember_sdk_impl,
    doc = "An SDK bundle <bundle_name>.tar.gz: headers, static libraries, CMake package, pkg-config file.",
    attrs = {
        "bundle_name": attr.string(mandatory = True),
        "target_name": attr.string(mandatory = True, doc = "What the bundle runs on, for its README and ember.pc."),
        "components": attr.label_list(providers = [CcInfo], doc = "In order: a later one links earlier ones."),
        "component_names": attr.string_list(doc = "Ember::<name> and lib/libember_<name>.a, one per component."),
        "whole_archive": attr.string_list(doc = "Components linked whole (a PAL: the core calls into it)."),
        "files": attr.label_keyed_string_dict(allow_files = True, doc = "Files -> install directory (ends in /)."),
        "kernel_chain": attr.string_list(
            doc = "Kernel libraries in registration priority: <component>@<C++ namespace>@<include dir>.",
        ),
        "pic": attr.bool(default = True, doc = "Ship position-independent objects (hosted targets)."),
        "version": attr.label(allow_single_file = True, default = "//:VERSION"),
        "_packer": attr.label(allow_single_file = True, default = ":pack_sdk.py"),
        "_cmake": attr.label_list(allow_files = True, default = [":cmake/EmberConfig.cmake", ":cmake/EmberConfigVersion.cmake.in"]),
        "_python": attr.label(default = "@local_python//:python3", executable = True, cfg = "host", allow_files = True),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
)

# Kernel libraries a bundle can carry: component -> (manifest, C++ namespace, include directory of its kernels.h).
_KERNEL_LIBRARIES = {
    "kernels_helium": ("//kernels/helium:kernels.yaml", "ember::helium", "kernels/helium"),
    "kernels_optimized": ("//kernels/optimized:kernels.yaml", "ember::optimized", "kernels/optimized"),
    "kernels_portable": ("//kernels/portable:kernels.yaml", "ember::portable", "kernels/portable"),
    "kernels_quantized": ("//kernels/quantized:kernels.yaml", "ember::quantized", "kernels/quantized"),
    "kernels_prim": ("//kernels/prim_ops:kernels.yaml", "ember::prim", "kernels/prim_ops"),
}

_VECTOR_KERNELS = ["kernels_helium", "kernels_optimized"]

# Third-party files a bundle ships and the notices that go with them (share/doc/ember/third_party/).
_NOTICES = {
    "@debian_copyright//:libflatbuffers-dev": "share/doc/ember/third_party/flatbuffers/copyright",
}

def ember_sdk_bundle(name, target_name, pal, kernels, extra_components = {}, extra_files = {}, **kwargs):
    """An ember_sdk for one target: the runtime (:runtime), a PAL, kernel libraries and extras.

    kernels: kernel components in registration priority (keys of _KERNEL_LIBRARIES; a :<component> cc_library
    each). pal: (component name, label), linked whole. extra_components: name -> label, after the kernels (e.g. a
    C API or a backend: one line each). extra_files: label -> install path.
    """
    # A component ships the archives no earlier one has: the vector kernels, which fall through to the scalar ones,
    # come after them here, whatever their registration priority.
    claim_order = [k for k in kernels if k not in _VECTOR_KERNELS] + [k for k in kernels if k in _VECTOR_KERNELS]
    components = [":runtime"] + [":" + k for k in claim_order] + [pal[1]] + extra_components.values()
    names = ["runtime"] + claim_order + [pal[0]] + extra_components.keys()
    files = {
        ":register_kernels.py": "share/ember/register_kernels.py",
        ":README.bundle.md": "share/doc/ember/README.md",
        "//codegen:generator": "share/ember/python/",
        # What the kernels were compiled for (register_kernels.py checks a model's selection against it).
        "//:manifest": "share/ember/bundle_selection.yaml",
        "//selective_build:all_operators.yaml": "share/ember/all_operators.yaml",
    }
    for k in kernels:
        files[_KERNEL_LIBRARIES[k][0]] = "share/ember/kernels/%s.yaml" % k
    files.update(_NOTICES)
    files.update(extra_files)
    ember_sdk(
        name = name,
        bundle_name = name,
        # Built on request only (//:sdk, tests/sdk), never by a `//...` wildcard: a full bundle compiles every
        # kernel for every dtype again.
        tags = ["manual"],
        target_name = target_name,
        components = components,
        component_names = names,
        whole_archive = [pal[0]],
        kernel_chain = ["%s@%s@%s" % (k, _KERNEL_LIBRARIES[k][1], _KERNEL_LIBRARIES[k][2]) for k in kernels],
        files = files,
        **kwargs
    )
