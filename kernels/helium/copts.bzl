"""Compiler flags of the Helium kernel library (codegen/defs.bzl compiles its sources apart with them)."""

# After the configuration's -Os on the command line, so these win for kernels/helium's sources only: the vector
# loops are explicit, and -O2 schedules them and keeps their pointers in registers where -Os does not. What it
# costs in flash is in kernels/README.md's Helium section.
HELIUM_COPTS = ["-O2"]
