"""The contract's C++ headers and scalar_type.fbs, generated from its YAML (run by schema/BUILD.bazel).

    python -m schema.generate --out-dir DIR

Writes DIR/scalar_type.fbs (flatc's input with program.fbs), DIR/scalar_type_table.h (enum ScalarType, names and
element sizes, the computable C++ types), DIR/argument_codes.h (which EValue tags each arg_types letter accepts)
and DIR/extended_header_layout.h (offsets of the "eh00" header's fields).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List

from schema._yaml import ContractError

# The contract modules read their YAML when imported: main() imports them, so that a malformed file is reported
# as a message rather than a traceback.


def _banner(source: str) -> List[str]:
    return [f"// Generated from schema/{source} by schema/generate.py. Do not edit.", "#pragma once", ""]


def _macro(name: str, rows: List[str]) -> List[str]:
    width = max(len(r) for r in [f"#define {name}"] + rows) + 1
    lines = [f"#define {name}".ljust(width) + "\\"]
    lines += [f"  {r}".ljust(width) + "\\" for r in rows[:-1]]
    return lines + [f"  {rows[-1]}"]


def scalar_type_table_h() -> str:
    from schema.scalar_types import SCALAR_TYPES
    computable = [f"X({t.cpp}, {t.name})" for t in SCALAR_TYPES if t.cpp]
    return "\n".join([
        *_banner("scalar_types.yaml"),
        "#include <stdint.h>",
        "",
        "namespace ember {",
        "",
        "// Tensor element types, numbered as PyTorch's c10::ScalarType (so as ExecuTorch and the .pte schema number",
        "// them).",
        "enum class ScalarType : int8_t {",
        *(f"  {t.name} = {t.number}," for t in SCALAR_TYPES),
        "};",
        "",
        f"constexpr int kNumScalarTypes = {len(SCALAR_TYPES)};",
        "",
        "// The name is held in the entry, not pointed at: a table of pointers costs a relocation per entry in a",
        "// position-independent executable (24 bytes each on x86-64), three times the bytes of the names.",
        "struct ScalarTypeInfo {",
        f"  char name[{max(len(t.name) for t in SCALAR_TYPES) + 1}];",
        "  uint8_t element_size;  // 0: the runtime holds no tensor of this type",
        "};",
        "",
        "// Indexed by ScalarType number.",
        "inline constexpr ScalarTypeInfo kScalarTypeInfo[kNumScalarTypes] = {",
        *(f'    {{"{t.name}", {t.runtime_element_size}}},' for t in SCALAR_TYPES),
        "};",
        "",
        "}  // namespace ember",
        "",
        "// X(C++ type, ScalarType name) for each type kernels compute on; the C++ types are ember's (runtime/core).",
        *_macro("EMBER_FOR_EACH_CPP_SCALAR_TYPE(X)", computable),
        "",
    ])


def argument_codes_h() -> str:
    from schema import argument_codes
    accepts, meanings = [], []
    for c in argument_codes.ARGUMENT_CODES:
        test = "true" if c.accepts is None else " || ".join(f"tag == Tag::{t}" for t in c.accepts)
        accepts += [f"    case '{c.code}':  // {c.meaning}", f"      return {test};"]
        meanings += [f"    case '{c.code}':", f'      return "{c.meaning}";']
    return "\n".join([
        *_banner("argument_codes.yaml"),
        '#include "runtime/core/evalue.h"',
        "",
        "namespace ember {",
        "",
        "// Whether a value tagged `tag` may be passed where a kernel entry's arg_types has `code`: what Method checks",
        "// at load so that the unboxing wrappers need no checks at execute time. False for a letter that is no code.",
        "constexpr bool argument_code_accepts(char code, Tag tag) {",
        "  switch (code) {",
        *accepts,
        "    default:",
        "      return false;",
        "  }",
        "}",
        "",
        "// What `code` stands for (\"tensor or None\"), for messages; \"no argument code\" for another letter.",
        "constexpr const char* argument_code_meaning(char code) {",
        "  switch (code) {",
        *meanings,
        "    default:",
        '      return "no argument code";',
        "  }",
        "}",
        "",
        "}  // namespace ember",
        "",
    ])


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def extended_header_layout_h() -> str:
    from schema import extended_header as eh
    fields = []
    for f in eh.FIELDS:
        fields += [f"// {f.type}" + (f": {f.doc}" if f.doc else ""),
                   f"constexpr size_t k{_camel(f.name)}Offset = {f.offset};"]
    magic = ", ".join(f"'{chr(b)}'" for b in eh.MAGIC)
    return "\n".join([
        *_banner("extended_header.yaml"),
        "#include <stddef.h>",
        "",
        "namespace ember {",
        "namespace extended_header {",
        "",
        "// Where the header starts in a .pte, and its first four bytes.",
        f"constexpr size_t kOffset = {eh.OFFSET};",
        f"constexpr char kMagic[4] = {{{magic}}};",
        "// Bytes of the fields below, from kOffset: the smallest `length` a valid header has.",
        f"constexpr size_t kLength = {eh.LENGTH};",
        "// How many of a file's first bytes a reader hands the parser.",
        f"constexpr size_t kHeadBytes = {eh.HEAD_BYTES};",
        "",
        "// Each field's byte offset in the file; little endian.",
        *fields,
        "",
        "}  // namespace extended_header",
        "}  // namespace ember",
        "",
    ])


def scalar_type_fbs() -> str:
    from schema.fbs import scalar_type_fbs as text
    return text()


OUTPUTS: Dict[str, object] = {
    "scalar_type.fbs": scalar_type_fbs,
    "scalar_type_table.h": scalar_type_table_h,
    "argument_codes.h": argument_codes_h,
    "extended_header_layout.h": extended_header_layout_h,
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args(argv)
    try:
        texts = {name: fn() for name, fn in OUTPUTS.items()}
        os.makedirs(args.out_dir, exist_ok=True)
        for name, text in texts.items():
            with open(os.path.join(args.out_dir, name), "w") as f:
                f.write(text)
    except (ContractError, OSError) as e:
        print(f"schema.generate: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
