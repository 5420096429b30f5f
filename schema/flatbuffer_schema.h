// A flatbuffer schema held as data, and the verifier that walks it.
//
// flatc's generated Verify() methods are code per table and per field: for the .pte schema they were the largest
// single part of a core-only runner. Here a schema is a byte per vtable slot (generated from the .fbs by
// schema/generate.py, e.g. program_schema.h), and verify_flatbuffer() walks a buffer through those bytes, making
// the same flatbuffers::Verifier checks flatc's code makes, slot by slot in the same order, with the same depth and
// table-count limits. It accepts exactly the buffers flatc's code accepts; schema/tests/flatbuffer_schema_test.cc
// holds the two side by side on mutated programs.
//
// The walk keeps its own stack of tables (no recursion), sized by the schema's deepest nesting of tables, which
// the generator computes: a buffer cannot nest tables deeper than its schema does.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace flatbuffers {
class Verifier;
}

namespace ember {

// What a vtable slot holds. The top two bits are the kind; a table, a vector of tables and a union value carry
// the id of their table or union in the low six bits. A union's type byte is the slot before its value.
namespace slot {
constexpr uint8_t kDeprecated = 0;  // flatc does not verify a deprecated field
constexpr uint8_t kScalar1 = 1;     // kScalar1 + n: a scalar of 2^n bytes, aligned to its size
constexpr uint8_t kString = 5;
constexpr uint8_t kVector1 = 6;     // kVector1 + n: a vector of 2^n-byte scalars
constexpr uint8_t kTable = 0x40;
constexpr uint8_t kTables = 0x80;   // a vector of tables
constexpr uint8_t kUnion = 0xC0;
constexpr uint8_t kKindMask = 0xC0;
constexpr uint8_t kIdMask = 0x3F;
}  // namespace slot

// The deepest nesting of tables a schema may have (program.fbs: Program > ExecutionPlan > EValue > Tensor >
// AllocationDetails); a generated schema that nests deeper fails to compile.
constexpr int kMaxTableNesting = 8;

struct FlatbufferSchema {
  const uint8_t* slots;          // every table's slots, table after table (slot i is vtable entry 4 + 2i)
  const uint16_t* table_slots;   // table t's slots: [table_slots[t], table_slots[t + 1])
  const uint8_t* union_members;  // the table of union u's type i (1-based): union_members[union_start[u] + i - 1]
  const uint8_t* union_start;    // union u's members: [union_start[u], union_start[u + 1])
  uint8_t root;                  // the root table's id
};

// flatc's VerifyBuffer<Root>(identifier) over `buffer` (`size` bytes, those `verifier` was made with): true when
// every table, vector, string and scalar the schema describes lies inside the buffer as flatbuffers requires.
bool verify_flatbuffer(const FlatbufferSchema& schema, flatbuffers::Verifier& verifier, const uint8_t* buffer,
                       size_t size, const char* identifier);

}  // namespace ember
