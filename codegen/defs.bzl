"""Build-time code generation of kernel registration (codegen/gen_registration.py) and the runtime macro."""

load("//kernels/helium:copts.bzl", "HELIUM_COPTS")
load("//tools/bazel:ember.bzl", "EMBER_COPTS")

# Kernel libraries: manifest -> "C++ namespace@Bazel package", in priority order (the first that declares an
# operator provides it).
KERNEL_LIBRARIES = {
    "//kernels/portable:kernels.yaml": "ember::portable@kernels/portable",
    "//kernels/quantized:kernels.yaml": "ember::quantized@kernels/quantized",
    "//kernels/prim_ops:kernels.yaml": "ember::prim@kernels/prim_ops",
}

# Delegate backends a build can offer (runtime/backend/backend.h): id -> its library, the C++ name of its
# `const ember::Backend`, and the header declaring it. A generated table holds those its selection names under
# `backends:` (selective_build writes them from a program's delegates), or every offered one without a selection.
#
# "when": a config_setting the backend needs (optional): outside it the build does not offer the backend at all
# (no --backend line, no library), so the generated table, and the binary, are what they would be without it.
BACKEND_LIBRARIES = {
    "EmberPortable": {
        "lib": "//backends/ember_portable",
        "symbol": "ember::ember_portable::kBackend",
        "header": "backends/ember_portable/runtime/ember_portable.h",
    },
    # Debian's libXNNPACK (host only): --config=xnnpack (backends/xnnpack/BUILD.bazel).
    "XnnpackBackend": {
        "lib": "//backends/xnnpack",
        "symbol": "ember::xnnpack::kBackend",
        "header": "backends/xnnpack/runtime/xnnpack_backend.h",
        "when": "//backends/xnnpack:offered",
    },
}

def _backend_arg(b):
    return " --backend %s@%s@%s" % (b, BACKEND_LIBRARIES[b]["symbol"], BACKEND_LIBRARIES[b]["header"])

def _optional(b, value, otherwise):
    """`value` where backend `b` is offered, `otherwise` elsewhere (a select when it has a "when")."""
    when = BACKEND_LIBRARIES[b].get("when")
    if not when:
        return value
    return select({when: value, "//conditions:default": otherwise})

def ember_kernel_registry(name, manifests, selection = None, backends = []):
    """Generates `<name>/kernel_registry.cc` and a header library `<name>_dtypes` ("ember/selected_dtypes.h").

    The .cc is compiled into the kernel library itself (see ember_kernels), so the table and the kernels it
    references always link together.
    """
    srcs = list(manifests.keys()) + ([selection] if selection else [])
    manifest_args = " ".join([
        "--manifest $(location %s)@%s" % (label, target)
        for label, target in manifests.items()
    ])
    for b in backends:
        manifest_args = manifest_args + _optional(b, _backend_arg(b), "")
    native.genrule(
        name = name + "_gen",
        srcs = srcs,
        outs = [name + "/kernel_registry.cc", name + "/selected_dtypes.h"],
        tools = ["@local_python//:python3", "//codegen:generator"],
        cmd = ("PYTHONPATH=. $(location @local_python//:python3) -m codegen.gen_registration " +
               manifest_args +
               (" --selection $(location %s)" % selection if selection else "") +
               " --out-dir $(@D)/" + name),
    )
    native.cc_library(
        name = name + "_dtypes",
        hdrs = [name + "/selected_dtypes.h"],
        # Kernels include "ember/selected_dtypes.h" whichever selection generated it.
        strip_include_prefix = name,
        include_prefix = "ember",
    )

def ember_features(name, selection = None, visibility = None):
    """A header library "ember/selected_features.h": the runtime features `selection` keeps (None: all of them)."""
    native.genrule(
        name = name + "_gen",
        srcs = [selection] if selection else [],
        outs = [name + "/selected_features.h"],
        tools = ["@local_python//:python3", "//codegen:generator"],
        cmd = ("PYTHONPATH=. $(location @local_python//:python3) -m codegen.features" +
               (" --selection $(location %s)" % selection if selection else "") + " -o $@"),
    )
    native.cc_library(
        name = name,
        hdrs = [name + "/selected_features.h"],
        strip_include_prefix = name,
        include_prefix = "ember",
        visibility = visibility,
    )

# A selection that drops every dtype of a kernel leaves that kernel's helpers unreferenced; clang flags them
# (gcc does not), but it is the design: the linker drops them.
KERNEL_COPTS = [
    "-Wno-unused-function",
    "-Wno-unneeded-internal-declaration",
]

# Registered ahead of portable when --//kernels:optimized is true (kernels/optimized/kernels.yaml).
OPTIMIZED_LIBRARY = {"//kernels/optimized:kernels.yaml": "ember::optimized@kernels/optimized"}

# Registered ahead of portable and quantized when --//kernels:helium is true (kernels/helium/kernels.yaml): MVE
# vector kernels, built only for cores with Helium.
HELIUM_LIBRARY = {"//kernels/helium:kernels.yaml": "ember::helium@kernels/helium"}
HELIUM_CORES = ["//platforms:cortex_m55_core"]

def ember_kernels(name, selection = None, extra_libraries = [], visibility = None, backends = []):
    """The kernels (and registration table) for `selection` (a selected_operators.yaml; None = everything).

    backends: ids of BACKEND_LIBRARIES the build offers; the table holds those the selection names (all of them
    without a selection). Default none: delegate calls are then refused at load and no delegate code is linked.

    `<name>_features` is "ember/selected_features.h" for the selection (codegen/features.py), for code compiled
    per selection, such as the runners.

    Three variants are generated, `<name>_portable`, `<name>_optimized` (optimized kernels first, each handing
    the dtypes it lacks to portable) and `<name>_helium` (MVE kernels first, for Helium cores only); `<name>` is
    the one //kernels:use_helium, then --//kernels:optimized, picks.

    extra_libraries: your own kernel libraries (custom operators, or overrides of built-in kernels: they come
    first), each a dict with "manifest" (label of its kernels.yaml), "namespace" (its C++ namespace), "package"
    (its Bazel package), "srcs" (label of its kernel sources) and "headers" (label of a cc_library with its
    kernels.h).
    """
    ember_features(name + "_features", selection, visibility)
    _kernels_variant(name + "_portable", selection, extra_libraries, None, visibility, backends)
    _kernels_variant(name + "_optimized", selection, extra_libraries, "optimized", visibility, backends)
    _kernels_variant(name + "_helium", selection, extra_libraries, "helium", visibility, backends)
    native.alias(
        name = name + "_scalar_or_optimized",
        actual = select({
            "//kernels:use_optimized": name + "_optimized",
            "//conditions:default": name + "_portable",
        }),
        visibility = ["//visibility:private"],
    )
    native.alias(
        name = name,
        actual = select({
            "//kernels:use_helium": name + "_helium",
            "//conditions:default": name + "_scalar_or_optimized",
        }),
        visibility = visibility,
    )

def _backend_libs(backends):
    libs = []
    for b in backends:
        libs = libs + _optional(b, [BACKEND_LIBRARIES[b]["lib"]], [])
    return libs

def _kernels_variant(name, selection, extra_libraries, vector_library, visibility, backends):
    """vector_library: None (portable only), "optimized" or "helium": the library registered ahead of portable."""
    registry = name + "_registry"
    manifests = {lib["manifest"]: lib["namespace"] + "@" + lib["package"] for lib in extra_libraries}
    if vector_library == "optimized":
        manifests.update(OPTIMIZED_LIBRARY)
    if vector_library == "helium":
        manifests.update(HELIUM_LIBRARY)
    manifests.update(KERNEL_LIBRARIES)
    ember_kernel_registry(registry, manifests, selection, backends)
    deps = [lib["headers"] for lib in extra_libraries] + [
        registry + "_dtypes",
        "//kernels/portable:headers",
        "//kernels/quantized:headers",
        "//kernels/prim_ops:headers",
        "//runtime/core",
        "//runtime/kernel",
    ]
    compatible = []
    if vector_library == "optimized":
        # Compiled apart for their -O3; the registry below references them, so the link keeps them.
        native.cc_library(
            name = name + "_fast",
            srcs = ["//kernels/optimized:srcs"],
            copts = EMBER_COPTS + KERNEL_COPTS + ["-O3"],
            deps = deps + ["//kernels/optimized:headers"],
        )
        deps = deps + [name + "_fast", "//kernels/optimized:headers"]
    if vector_library == "helium":
        # Compiled apart with their own optimization level (kernels/helium/BUILD.bazel, HELIUM_COPTS), which comes
        # after the configuration's -Os on the command line.
        native.cc_library(
            name = name + "_mve",
            srcs = ["//kernels/helium:srcs"],
            copts = EMBER_COPTS + KERNEL_COPTS + HELIUM_COPTS,
            deps = deps + ["//kernels/helium:headers"],
            target_compatible_with = HELIUM_CORES,
        )
        deps = deps + [name + "_mve", "//kernels/helium:headers"]
        compatible = HELIUM_CORES
    native.cc_library(
        name = name,
        srcs = [lib["srcs"] for lib in extra_libraries] + [
            "//kernels/portable:srcs",
            "//kernels/quantized:srcs",
            "//kernels/prim_ops:srcs",
            registry + "/kernel_registry.cc",
        ],
        copts = EMBER_COPTS + KERNEL_COPTS,
        # The executor: a table with a prepare step points at the executor's support for it (PrepareSupport),
        # and listing the dependency puts the executor after this library on the link line. Backends: only what
        # the table references is linked.
        deps = deps + ["//runtime/executor", "//runtime/backend"] + _backend_libs(backends),
        # Nothing references the table by name until the executor looks kernels up, so keep it in the link;
        # -Wl,--gc-sections still drops whatever the table does not reference.
        alwayslink = True,
        target_compatible_with = compatible,
        visibility = visibility,
    )
