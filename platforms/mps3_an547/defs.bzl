"""ember_firmware: a .pte made into MPS3 AN547 firmware (Cortex-M55), with only the kernels it uses
(platforms/bare_metal/defs.bzl does the work)."""

load("//platforms/bare_metal:defs.bzl", _ember_firmware = "ember_firmware")

M55 = [
    "@platforms//os:none",
    "//platforms:cortex_m55_core",
]

MPS3_AN547 = struct(
    package = "//platforms/mps3_an547",
    linker_script = "//platforms/mps3_an547:mps3_an547.ld",
    compatible = M55,
)

def ember_firmware(name, program, **kwargs):
    """`name`: an ELF for qemu-system-arm -M mps3-an547 (or the board) running `program` (a .pte, or a .bpte with
    verify = True). Arguments as platforms/bare_metal/defs.bzl's ember_firmware; the arena is what DTCM has left."""
    _ember_firmware(name, program, board = MPS3_AN547, **kwargs)
