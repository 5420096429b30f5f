#include "runtime/devtools/etdump_writer.h"

#include <stdio.h>
#include <string.h>

#include <string>

#include "schema/etdump_generated.h"
#include "schema/format_versions.h"

namespace ember {

namespace {

namespace et = ember_etdump;

std::string event_name(const TraceRecord& r, const OperatorNames& names) {
  switch (static_cast<TraceKind>(r.kind)) {
    case TraceKind::kKernel:
    case TraceKind::kOutput: {
      const char* overload = "";
      const char* name = names.name != nullptr ? names.name(names.context, r.op_index, &overload) : nullptr;
      if (name == nullptr) return "operator #" + std::to_string(r.op_index);
      return overload[0] != '\0' ? std::string(name) + "." + overload : std::string(name);
    }
    case TraceKind::kDelegate: return "DELEGATE_CALL";
    case TraceKind::kMove: return "MoveCall";
    case TraceKind::kJumpFalse: return "JumpFalseCall";
    case TraceKind::kFree: return "FreeCall";
    case TraceKind::kRun: return "Method::execute";  // ExecuTorch's name for a whole run
    case TraceKind::kAllocation: break;
  }
  return "instruction";
}

int32_t as_id(uint32_t v) { return v == kNoInstruction ? -1 : static_cast<int32_t>(v); }

// An output record's tensor, its bytes at `offset` in the debug buffer; null when the record points outside the
// buffer (the writer then leaves the event out rather than describe bytes that are not there).
flatbuffers::Offset<et::Tensor> output_tensor(flatbuffers::FlatBufferBuilder& b, const TraceRecord& r,
                                              ArrayRef<uint8_t> debug) {
  OutputHeader h;
  if (r.start > debug.size() || debug.size() - r.start < sizeof(h)) return 0;
  memcpy(&h, debug.data() + r.start, sizeof(h));
  const size_t dims = h.dim;
  if (debug.size() - r.start - sizeof(h) < 2 * sizeof(int32_t) * dims) return 0;
  if (r.end > debug.size() || debug.size() - r.end < h.nbytes) return 0;
  std::vector<int64_t> sizes(dims), strides(dims);
  for (size_t d = 0; d < dims; ++d) {
    int32_t v[2];
    memcpy(&v[0], debug.data() + r.start + sizeof(h) + sizeof(int32_t) * d, sizeof(int32_t));
    memcpy(&v[1], debug.data() + r.start + sizeof(h) + sizeof(int32_t) * (dims + d), sizeof(int32_t));
    sizes[d] = v[0];
    strides[d] = v[1];
  }
  return et::CreateTensor(b, static_cast<ember_pte::ScalarType>(h.scalar_type), b.CreateVector(sizes),
                          b.CreateVector(strides), static_cast<int64_t>(r.end));
}

}  // namespace

std::string allocator_name(uint32_t id) {
  if (id == kMethodAllocator) return "method allocator";
  if (id == kTempAllocator) return "temp allocator";
  return "planned pool " + std::to_string(id - kPlannedPool0);
}

std::vector<uint8_t> write_etdump(ArrayRef<TraceRecord> records, size_t dropped, const char* method,
                                  const OperatorNames& names, EtdumpEvents which, ArrayRef<uint8_t> debug) {
  flatbuffers::FlatBufferBuilder b(1024 + records.size() * 96);
  std::vector<flatbuffers::Offset<et::RunData>> runs;
  std::vector<flatbuffers::Offset<et::Event>> events;
  uint32_t allocators = 0;  // ids below it are named in the run's allocator list
  // Records arrive in order; a run ends with its kRun record (or with the buffer, if that filled first).
  auto close_run = [&](bool last) {
    // A run whose kept records were all left out (allocations not asked for) still says the trace was cut short.
    if (events.empty() && !(last && dropped != 0 && !records.empty())) return;
    std::string name = method != nullptr ? method : "forward";
    if (last && dropped != 0) name += " (truncated: " + std::to_string(dropped) + " events dropped)";
    std::vector<flatbuffers::Offset<et::Allocator>> named;
    for (uint32_t id = 0; id < allocators; ++id) {
      named.push_back(et::CreateAllocator(b, b.CreateString(allocator_name(id))));
    }
    runs.push_back(et::CreateRunData(b, b.CreateString(name), -1, named.empty() ? 0 : b.CreateVector(named),
                                     b.CreateVector(events)));
    events.clear();
    allocators = 0;
  };
  for (size_t i = 0; i < records.size(); ++i) {
    const TraceRecord& r = records[i];
    if (static_cast<TraceKind>(r.kind) == TraceKind::kAllocation) {
      if (which != EtdumpEvents::kProfileAndAllocations) continue;
      // A corrupt record's huge id is written as it is but not named: the list would take gigabytes.
      if (r.op_index < 0xFFFFu && r.op_index + 1 > allocators) allocators = r.op_index + 1;
      events.push_back(et::CreateEvent(b, 0, et::CreateAllocationEvent(b, static_cast<int32_t>(r.op_index), r.start)));
      continue;
    }
    if (static_cast<TraceKind>(r.kind) == TraceKind::kOutput) {
      // A TensorList's items arrive as consecutive records numbered 1, 2, ...: one debug event holds them all.
      // (An item that did not fit the debug buffer breaks the numbering; what follows it is a list of its own.)
      std::vector<flatbuffers::Offset<et::Tensor>> items;
      if (r.pad[0] != 0) {
        size_t j = i;
        for (unsigned item = r.pad[0];
             j < records.size() && static_cast<TraceKind>(records[j].kind) == TraceKind::kOutput &&
             records[j].instruction == r.instruction && records[j].run == r.run && records[j].pad[0] == item;
             ++j, ++item) {
          const auto t = output_tensor(b, records[j], debug);
          if (!t.IsNull()) items.push_back(t);
        }
        i = j - 1;  // j > i: record i itself matched
      }
      flatbuffers::Offset<et::Value> value;
      if (r.pad[0] == 0) {
        const auto t = output_tensor(b, r, debug);
        if (t.IsNull()) continue;
        value = et::CreateValue(b, et::ValueType::Tensor, t);
      } else {
        if (items.empty()) continue;
        value = et::CreateValue(b, et::ValueType::TensorList, 0, et::CreateTensorList(b, b.CreateVector(items)));
      }
      const auto name = b.CreateString(event_name(r, names));
      events.push_back(
          et::CreateEvent(b, 0, 0, et::CreateDebugEvent(b, r.chain, as_id(r.instruction), value, -1, 0, name)));
      continue;
    }
    const auto name = b.CreateString(event_name(r, names));
    const auto pe =
        et::CreateProfileEvent(b, name, static_cast<int32_t>(r.chain), as_id(r.instruction), -1, 0, 0, r.start, r.end);
    events.push_back(et::CreateEvent(b, pe));
    if (static_cast<TraceKind>(r.kind) == TraceKind::kRun) close_run(i + 1 == records.size());
  }
  close_run(true);
  b.FinishSizePrefixed(et::CreateETDump(b, format_versions::kEtdump.writes, b.CreateVector(runs)),
                       et::ETDumpIdentifier());
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

}  // namespace ember
