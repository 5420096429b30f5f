"""Ember's format contract: what exir (which writes programs), codegen and the runtime (which read them) must agree on.

Each table is written once, here, and read by everything else:
  program.fbs             the .pte flatbuffer schema (ExecuTorch's ET12 tables); program.py mirrors it in Python
  scalar_types.yaml       ScalarType: numbers, names, element sizes, torch dtypes, .pte enum names, C++ types
  argument_codes.yaml     the letters of a registration table's arg_types and the values each accepts
  extended_header.yaml    the "eh00" header's layout
  operators.yaml          the schemas of Ember's own operators
Python reads the YAML at import (modules of the same names); the Bazel package generates the C++ headers and
scalar_type.fbs from it at build time (generate.py). See schema/README.md.
"""
