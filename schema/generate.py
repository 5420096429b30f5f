"""The contract's C++ headers and scalar_type.fbs, generated from its YAML (run by schema/BUILD.bazel).

    python -m schema.generate --out-dir DIR

Writes DIR/scalar_type.fbs (flatc's input with program.fbs), DIR/scalar_type_table.h (enum ScalarType, names and
element sizes, the computable C++ types), DIR/argument_codes.h (which EValue tags each arg_types letter accepts),
DIR/extended_header_layout.h (offsets of the "eh00" header's fields), DIR/format_versions.h (each format's identifier
and version window) and DIR/program_schema.h (program.fbs's tables as the runtime's flatbuffer verifier walks them,
schema/flatbuffer_schema.h).
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
    return "\n".join(
        [
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
        ]
    )


def argument_codes_h() -> str:
    from schema import argument_codes

    accepts, meanings = [], []
    for c in argument_codes.ARGUMENT_CODES:
        test = "true" if c.accepts is None else " || ".join(f"tag == Tag::{t}" for t in c.accepts)
        accepts += [f"    case '{c.code}':  // {c.meaning}", f"      return {test};"]
        meanings += [f"    case '{c.code}':", f'      return "{c.meaning}";']
    return "\n".join(
        [
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
        ]
    )


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def extended_header_layout_h() -> str:
    from schema import extended_header as eh

    fields = []
    for f in eh.FIELDS:
        fields += [
            f"// {f.type}" + (f": {f.doc}" if f.doc else ""),
            f"constexpr size_t k{_camel(f.name)}Offset = {f.offset};",
        ]
    magic = ", ".join(f"'{chr(b)}'" for b in eh.MAGIC)
    return "\n".join(
        [
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
        ]
    )


def format_versions_h() -> str:
    from schema import format_versions as fv

    rows = []
    for w in fv.FORMATS.values():
        ident = ", ".join(f"'{chr(b)}'" for b in w.identifier)
        rows += [
            f"// {w.name}: {w.window}; writers stamp {w.writes}.",
            f"inline constexpr FormatWindow k{_camel(w.key)} = {{\"{w.name}\", {{{ident}}}, \"{w.version_field}\", "
            f"{w.min_version}, {w.max_version}, {w.writes}}};",
        ]
    return "\n".join(
        [
            *_banner("format_versions.yaml"),
            "#include <stdint.h>",
            "",
            "namespace ember {",
            "",
            "// Which files of a format a reader accepts: its identifier (bytes 4..8) and a version field in",
            "// [min_version, max_version]. schema/format_window.h checks a file against it.",
            "struct FormatWindow {",
            "  const char* name;  // how messages name a file of the format",
            "  char identifier[4];",
            "  const char* version_field;",
            "  uint32_t min_version;",
            "  uint32_t max_version;",
            "  uint32_t writes;  // the version Ember's writers stamp",
            "};",
            "",
            "namespace format_versions {",
            "",
            *rows,
            "",
            "}  // namespace format_versions",
            "}  // namespace ember",
            "",
        ]
    )


def _nesting(schema, table: str, seen=()) -> int:
    """How many tables deep a buffer can nest from `table` (1: no table below it)."""
    if table in seen:
        raise ContractError(
            f"program.fbs: table {table} contains itself ({' > '.join(seen + (table,))}); the "
            f"runtime's verifier walks a fixed depth of tables"
        )
    below = [s.ref for s in schema.tables[table] if s.kind in ("table", "tables")]
    below += [m for s in schema.tables[table] if s.kind == "union" for m in schema.unions[s.ref]]
    return 1 + max((_nesting(schema, t, seen + (table,)) for t in below), default=0)


def _slot_code(slot, table_ids, union_ids) -> str:
    if slot.kind == "deprecated":
        return "kDeprecated"
    if slot.kind in ("scalar", "vector"):
        return f"k{'Scalar' if slot.kind == 'scalar' else 'Vector'}1 + {slot.size.bit_length() - 1}"
    if slot.kind == "string":
        return "kString"
    if slot.kind == "union":
        return f"kUnion | {union_ids[slot.ref]}"
    return f"{'kTable' if slot.kind == 'table' else 'kTables'} | {table_ids[slot.ref]}"


def program_schema_h() -> str:
    """program.fbs as schema/flatbuffer_schema.h's verifier walks it: a byte per vtable slot."""
    from schema.fbs import program_schema

    schema = program_schema()
    table_ids = {t: i for i, t in enumerate(schema.tables)}
    union_ids = {u: i for i, u in enumerate(schema.unions)}
    if len(table_ids) > 64 or len(union_ids) > 64:
        raise ContractError("program.fbs: more than 64 tables or unions; a slot byte holds a 6-bit id")
    slots, starts = [], [0]
    for t, table_slots in schema.tables.items():
        slots.append(f"    // {t}")
        slots += [f"    {_slot_code(s, table_ids, union_ids)},  // {s.field}: {s.type}" for s in table_slots]
        starts.append(starts[-1] + len(table_slots))
    members, union_start = [], [0]
    for u, names in schema.unions.items():
        members.append(f"    // {u}: types 1..{len(names)}")
        members += [f"    {table_ids[m]},  // {m}" for m in names]
        union_start.append(union_start[-1] + len(names))
    return "\n".join(
        [
            *_banner("program.fbs"),
            '#include "schema/flatbuffer_schema.h"',
            "",
            "namespace ember_pte {",
            "namespace schema_table {",
            "",
            "using namespace ::ember::slot;",
            "",
            "// Each table's vtable slots in order (table ids are declaration order in program.fbs).",
            "inline constexpr uint8_t kSlots[] = {",
            *slots,
            "};",
            "",
            f"inline constexpr uint16_t kTableSlots[] = {{{', '.join(map(str, starts))}}};",
            "",
            "// Each union's member tables, by type.",
            "inline constexpr uint8_t kUnionMembers[] = {",
            *members,
            "};",
            "",
            f"inline constexpr uint8_t kUnionStart[] = {{{', '.join(map(str, union_start))}}};",
            "",
            f"// Tables nest at most this deep, {schema.root} included.",
            f"constexpr int kNesting = {_nesting(schema, schema.root)};",
            "static_assert(kNesting <= ::ember::kMaxTableNesting, \"program.fbs nests tables deeper than the verifier walks\");",
            "",
            "}  // namespace schema_table",
            "",
            "// The .pte schema, for ::ember::verify_flatbuffer (built where it is used: a constant holding these pointers",
            "// would cost a relocation each in a position-independent executable).",
            "inline ::ember::FlatbufferSchema program_schema() {",
            "  return {schema_table::kSlots, schema_table::kTableSlots, schema_table::kUnionMembers,",
            f"          schema_table::kUnionStart, {table_ids[schema.root]}}};",
            "}",
            "",
            "}  // namespace ember_pte",
            "",
        ]
    )


def scalar_type_fbs() -> str:
    from schema.fbs import scalar_type_fbs as text

    return text()


OUTPUTS: Dict[str, object] = {
    "scalar_type.fbs": scalar_type_fbs,
    "scalar_type_table.h": scalar_type_table_h,
    "argument_codes.h": argument_codes_h,
    "extended_header_layout.h": extended_header_layout_h,
    "format_versions.h": format_versions_h,
    "program_schema.h": program_schema_h,
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
