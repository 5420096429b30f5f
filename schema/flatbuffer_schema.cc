#include "schema/flatbuffer_schema.h"

#include "flatbuffers/flatbuffers.h"

namespace ember {
namespace {

using flatbuffers::soffset_t;  // FLATBUFFERS_MIN_BUFFER_SIZE names it unqualified
using flatbuffers::Table;
using flatbuffers::uoffset_t;
using flatbuffers::Verifier;
using flatbuffers::voffset_t;
using TableVector = flatbuffers::Vector<flatbuffers::Offset<Table>>;

// A table being verified: the slot it is at, and while that slot's vector of tables is walked, the vector and
// the element to verify next.
struct Frame {
  const Table* table;
  uint16_t slot;  // index into FlatbufferSchema::slots
  uint16_t end;
  voffset_t field;  // the slot's vtable entry
  const TableVector* tables;
  uoffset_t next;
};

class Walk {
 public:
  Walk(const FlatbufferSchema& schema, Verifier& verifier) : schema_(schema), v_(verifier) {}

  bool run(const Table* root) {
    if (!enter(root, schema_.root)) return false;
    while (depth_ > 0) {
      if (!step(stack_[depth_ - 1])) return false;
    }
    return true;
  }

 private:
  // flatc's VerifyTableStart, then this table's slots come next.
  bool enter(const Table* table, unsigned id) {
    if (!table->VerifyTableStart(v_)) return false;
    // A buffer nests tables only as deep as its schema does (the generator checked kMaxTableNesting).
    if (depth_ == kMaxTableNesting) return false;
    stack_[depth_++] = {table, schema_.table_slots[id], schema_.table_slots[id + 1], static_cast<voffset_t>(4), nullptr,
                        0};
    return true;
  }

  // Moves `f` to its next slot; the table or union value it points to (if any) is verified next.
  bool advance(Frame& f, const Table* child = nullptr, unsigned id = 0) {
    ++f.slot;
    f.field = static_cast<voffset_t>(f.field + sizeof(voffset_t));
    return child == nullptr || enter(child, id);
  }

  // One check of the table on top of the stack: an element of a vector of tables, a slot, or its end.
  bool step(Frame& f) {
    if (f.tables != nullptr) {
      if (f.next < f.tables->size()) return enter(f.tables->Get(f.next++), schema_.slots[f.slot] & slot::kIdMask);
      f.tables = nullptr;
      return advance(f);
    }
    if (f.slot == f.end) {
      --depth_;
      return v_.EndTable();
    }
    const uint8_t kind = schema_.slots[f.slot];
    const Table* t = f.table;
    const voffset_t field = f.field;
    if (kind == slot::kDeprecated) return advance(f);
    if (kind < slot::kString) {
      const size_t bytes = size_t{1} << (kind - slot::kScalar1);
      const voffset_t at = t->GetOptionalFieldOffset(field);
      return (at == 0 || v_.VerifyFieldStruct(reinterpret_cast<const uint8_t*>(t), at, bytes, bytes)) && advance(f);
    }
    // Every other slot holds an offset: flatc checks it before following it.
    if (!t->VerifyOffset(v_, field)) return false;
    const uint8_t* target = t->GetPointer<const uint8_t*>(field);
    const unsigned id = kind & slot::kIdMask;
    switch (kind & slot::kKindMask) {
      case slot::kTable: return advance(f, reinterpret_cast<const Table*>(target), id);
      case slot::kTables:
        if (target == nullptr) return advance(f);
        if (!v_.VerifyVectorOrString(target, sizeof(uoffset_t))) return false;
        f.tables = reinterpret_cast<const TableVector*>(target);
        f.next = 0;
        return true;
      case slot::kUnion: {
        // The type byte is the slot before; NONE, and a type this schema does not know, verify as true (flatc's
        // generated switch does the same).
        const uint8_t type = t->GetField<uint8_t>(static_cast<voffset_t>(field - sizeof(voffset_t)), 0);
        const unsigned first = schema_.union_start[id];
        const bool known = type != 0 && type <= schema_.union_start[id + 1] - first;
        return advance(f, known ? reinterpret_cast<const Table*>(target) : nullptr,
                       known ? schema_.union_members[first + type - 1] : 0);
      }
      default: break;
    }
    if (kind == slot::kString) {
      return v_.VerifyString(reinterpret_cast<const flatbuffers::String*>(target)) && advance(f);
    }
    return (target == nullptr || v_.VerifyVectorOrString(target, size_t{1} << (kind - slot::kVector1))) && advance(f);
  }

  const FlatbufferSchema& schema_;
  Verifier& v_;
  Frame stack_[kMaxTableNesting];
  int depth_ = 0;
};

}  // namespace

bool verify_flatbuffer(const FlatbufferSchema& schema, Verifier& verifier, const uint8_t* buffer, size_t size,
                       const char* identifier) {
  // Verifier::VerifyBufferFromStart<Root>(identifier, 0), with the walk in place of Root::Verify.
  if (!verifier.Check(size >= FLATBUFFERS_MIN_BUFFER_SIZE)) return false;
  if (identifier != nullptr &&
      !verifier.Check(size >= 2 * sizeof(uoffset_t) && flatbuffers::BufferHasIdentifier(buffer, identifier))) {
    return false;
  }
  const uoffset_t root = verifier.VerifyOffset(0);
  return verifier.Check(root != 0) && Walk(schema, verifier).run(reinterpret_cast<const Table*>(buffer + root));
}

}  // namespace ember
