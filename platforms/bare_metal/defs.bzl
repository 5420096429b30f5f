"""What every bare-metal board shares: bare_metal_board() makes a board package's libraries (the shared startup
code, semihosting, PAL and runner, compiled against the board's board.h), and ember_firmware() makes a .pte into
firmware for a board, with only the kernels it uses. Each board's defs.bzl binds them to its package
(platforms/mps3_an547/defs.bzl, platforms/mps2_an386/defs.bzl)."""

load("//codegen:defs.bzl", "ember_kernels")
load("//tools/bazel:ember.bzl", "EMBER_COPTS")

_PYTHON = "PYTHONPATH=. $(location @local_python//:python3) -m "

_SHARED = "//platforms/bare_metal:"

_SOURCES = [_SHARED + f for f in [
    "pal.cc",
    "semihosting.cc",
    "startup.cc",
]]

_HEADERS = [_SHARED + f for f in [
    "embedded_program.h",
    "semihosting.h",
    "startup.h",
    "verify.h",
]]

_RUNTIME = [
    "//runtime/core",
    "//runtime/executor",
    "//runtime/platform",
]

def bare_metal_board(compatible):
    """In platforms/<board>/BUILD.bazel, beside its board.h: the libraries firmware for that board links.

    `board_h`: the board's board.h, which the shared code includes as "board.h" (its clock and the name of the
    memory its arena is in). `board_support`: reset and fault handling, semihosting and the PAL: everything but the
    program and the runner, which ember_firmware() compiles per firmware for its selection's runtime features.
    compatible: the platform constraints the board's core has.
    """
    native.cc_library(
        name = "board_h",
        hdrs = ["board.h"],
        # Reached as "board.h" from the shared sources: each board's firmware compiles them against its own.
        strip_include_prefix = "/" + native.package_name(),
        target_compatible_with = compatible,
    )
    native.cc_library(
        name = "board_support",
        srcs = _SOURCES,
        hdrs = _HEADERS,
        copts = EMBER_COPTS,
        # The vector table and reset handler are reached by nothing but the hardware.
        alwayslink = True,
        target_compatible_with = compatible,
        deps = [":board_h"] + _RUNTIME,
    )

def ember_firmware(name, program, board, method = "forward", selection = None, visibility = None, verify = False):
    """`name`: an ELF for `board` (its qemu-system-arm -M machine, or the board), running `program` (a .pte label).

    board: a struct from a board's defs.bzl: package (its Bazel package, with board.yaml, :board_h and
    :board_support), linker_script (label) and compatible (its core's platform constraints).
    selection: a selected_operators.yaml; by default, exactly what `program` uses (selective_build.select).
    The method allocator and the kernels' scratch come from what the arena's memory has left, each sized by
    MethodMeta at boot. The build fails, naming the memory and the bytes over, when the program's pools do not fit
    the board.
    verify: `program` is a bundled program (.bpte); the firmware embeds it and runs its test cases with --verify.
    """
    compatible = board.compatible
    board_yaml = board.package + ":board.yaml"
    selection_source = program
    if verify:
        selection_source = name + "_program.pte"
        native.genrule(
            name = name + "_extract",
            srcs = [program],
            outs = [selection_source],
            cmd = _PYTHON + "exir.serialize.bpte extract $(location %s) -o $@" % program,
            tools = [
                "@local_python//:python3",
                "//exir:sources",
            ],
            target_compatible_with = compatible,
        )
    if selection == None:
        selection = name + "_selected_operators.yaml"
        native.genrule(
            name = name + "_selection",
            srcs = [selection_source],
            outs = [selection],
            cmd = _PYTHON + "selective_build.select $(location %s) -o $@" % selection_source,
            tools = [
                "@local_python//:python3",
                "//codegen:generator",
                "//exir:sources",
                "//selective_build:sources",
            ],
            target_compatible_with = compatible,
        )
    ember_kernels(
        name = name + "_kernels",
        selection = selection,
    )
    native.genrule(
        name = name + "_embed",
        srcs = [
            program,
            board_yaml,
        ],
        outs = [name + "_program.cc"],
        cmd = (_PYTHON + "platforms.embed_program $(location %s) --board $(location %s) --method %s -o $@") % (
            program,
            board_yaml,
            method,
        ),
        tools = [
            "@local_python//:python3",
            "//exir:sources",
            "//platforms:sources",
        ],
        target_compatible_with = compatible,
    )
    # The board runner for this selection's runtime features ("ember/selected_features.h"); with `verify`, the
    # bundled program's test cases too (verify.cc).
    native.cc_library(
        name = name + "_board_runner",
        srcs = [_SHARED + "runner.cc"] + ([_SHARED + "verify.cc"] if verify else []),
        copts = EMBER_COPTS,
        local_defines = ["EMBER_RUNNER_VERIFY=1"] if verify else [],
        # main is reached only from the reset handler (board_support), which links after it.
        alwayslink = True,
        target_compatible_with = compatible,
        deps = [
            ":" + name + "_kernels_features",
            board.package + ":board_h",
            board.package + ":board_support",
            "//runtime/runner:fill",
        ] + _RUNTIME + (["//runtime/bundled:bundled_program"] if verify else []) + select({
            # --config=profiling: the runner's --profile (a raw trace through semihosting).
            "//runtime/devtools:event_tracer_enabled": ["//runtime/devtools:buffer_event_tracer"],
            "//conditions:default": [],
        }),
    )
    native.cc_binary(
        name = name,
        srcs = [name + "_program.cc"],
        additional_linker_inputs = [board.linker_script],
        linkopts = [
            "-T $(location %s)" % board.linker_script,
            "-Wl,--gc-sections",
            # The linker's own report of where every byte went, for the size reports.
            "-Wl,--print-memory-usage",
        ],
        target_compatible_with = compatible,
        deps = [
            ":" + name + "_board_runner",
            ":" + name + "_kernels",
        ],
        visibility = visibility,
    )
