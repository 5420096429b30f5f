"""ember_firmware: a .pte made into MPS2 AN386 firmware (Cortex-M4), with only the kernels it uses
(platforms/bare_metal/defs.bzl does the work)."""

load("//platforms/bare_metal:defs.bzl", _ember_firmware = "ember_firmware")

M4 = [
    "@platforms//os:none",
    "//platforms:cortex_m4_core",
]

MPS2_AN386 = struct(
    package = "//platforms/mps2_an386",
    linker_script = "//platforms/mps2_an386:mps2_an386.ld",
    compatible = M4,
)

def ember_firmware(name, program, **kwargs):
    """`name`: an ELF for qemu-system-arm -M mps2-an386 (or the board) running `program` (a .pte, or a .bpte with
    verify = True). Arguments as platforms/bare_metal/defs.bzl's ember_firmware; the arena is what SSRAM23 has
    left."""
    _ember_firmware(name, program, board = MPS2_AN386, **kwargs)
