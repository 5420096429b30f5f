"""ember_firmware: a .pte made into MPS3 AN547 firmware, with only the kernels it uses."""

load("//codegen:defs.bzl", "ember_kernels")
load("//tools/bazel:ember.bzl", "EMBER_COPTS")

M55 = [
    "@platforms//os:none",
    "//platforms:cortex_m55_core",
]

_PYTHON = "PYTHONPATH=. $(location @local_python//:python3) -m "

def ember_firmware(name, program, method = "forward", selection = None, visibility = None, verify = False):
    """`name`: an ELF for qemu-system-arm -M mps3-an547 (or the board), running `program` (a .pte label).

    selection: a selected_operators.yaml; by default, exactly what `program` uses (selective_build.select).
    The method allocator and the kernels' scratch come from what DTCM has left, each sized by MethodMeta at boot.
    The build fails, naming the memory and the bytes over, when the program's pools do not fit the board.
    verify: `program` is a bundled program (.bpte); the firmware embeds it and runs its test cases with --verify.
    """
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
            target_compatible_with = M55,
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
            target_compatible_with = M55,
        )
    ember_kernels(
        name = name + "_kernels",
        selection = selection,
    )
    native.genrule(
        name = name + "_embed",
        srcs = [
            program,
            "//platforms/mps3_an547:board.yaml",
        ],
        outs = [name + "_program.cc"],
        cmd = (_PYTHON + "platforms.embed_program $(location %s) --board $(location //platforms/mps3_an547:board.yaml)" +
               " --method %s -o $@") % (program, method),
        tools = [
            "@local_python//:python3",
            "//exir:sources",
            "//platforms:sources",
        ],
        target_compatible_with = M55,
    )
    # The board runner for this selection's runtime features ("ember/selected_features.h"); with `verify`, the
    # bundled program's test cases too (verify.cc).
    native.cc_library(
        name = name + "_board_runner",
        srcs = ["//platforms/mps3_an547:runner.cc"] + (["//platforms/mps3_an547:verify.cc"] if verify else []),
        copts = EMBER_COPTS,
        local_defines = ["EMBER_RUNNER_VERIFY=1"] if verify else [],
        # main is reached only from the reset handler (board_support), which links after it.
        alwayslink = True,
        target_compatible_with = M55,
        deps = [
            ":" + name + "_kernels_features",
            "//platforms/mps3_an547:board_support",
            "//runtime/core",
            "//runtime/executor",
            "//runtime/platform",
            "//runtime/runner:fill",
        ] + (["//runtime/bundled:bundled_program"] if verify else []) + select({
            # --config=profiling: the runner's --profile (a raw trace through semihosting).
            "//runtime/devtools:event_tracer_enabled": ["//runtime/devtools:buffer_event_tracer"],
            "//conditions:default": [],
        }),
    )
    native.cc_binary(
        name = name,
        srcs = [name + "_program.cc"],
        additional_linker_inputs = ["//platforms/mps3_an547:mps3_an547.ld"],
        linkopts = [
            "-T $(location //platforms/mps3_an547:mps3_an547.ld)",
            "-Wl,--gc-sections",
            # The linker's own report of where every byte went, for the size reports.
            "-Wl,--print-memory-usage",
        ],
        target_compatible_with = M55,
        deps = [
            ":" + name + "_board_runner",
            ":" + name + "_kernels",
        ],
        visibility = visibility,
    )
