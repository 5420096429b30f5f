#include "runtime/devtools/etdump_writer.h"

#include <stdio.h>

#include <string>

#include "schema/etdump_generated.h"

namespace ember {

namespace {

namespace et = ember_etdump;

std::string event_name(const TraceRecord& r, const OperatorNames& names) {
  switch (static_cast<TraceKind>(r.kind)) {
    case TraceKind::kKernel: {
      const char* overload = "";
      const char* name = names.name != nullptr ? names.name(names.context, r.op_index, &overload) : nullptr;
      if (name == nullptr) return "operator #" + std::to_string(r.op_index);
      return overload[0] != '\0' ? std::string(name) + "." + overload : std::string(name);
    }
    case TraceKind::kDelegate:
      return "DELEGATE_CALL";
    case TraceKind::kMove:
      return "MoveCall";
    case TraceKind::kJumpFalse:
      return "JumpFalseCall";
    case TraceKind::kFree:
      return "FreeCall";
    case TraceKind::kRun:
      return "Method::execute";  // ExecuTorch's name for a whole run
  }
  return "instruction";
}

int32_t as_id(uint32_t v) { return v == kNoInstruction ? -1 : static_cast<int32_t>(v); }

}  // namespace

std::vector<uint8_t> write_etdump(ArrayRef<TraceRecord> records, size_t dropped, const char* method,
                                  const OperatorNames& names) {
  flatbuffers::FlatBufferBuilder b(1024 + records.size() * 96);
  std::vector<flatbuffers::Offset<et::RunData>> runs;
  std::vector<flatbuffers::Offset<et::Event>> events;
  // Records arrive in order; a run ends with its kRun record (or with the buffer, if that filled first).
  auto close_run = [&](bool last) {
    if (events.empty()) return;
    std::string name = method != nullptr ? method : "forward";
    if (last && dropped != 0) name += " (truncated: " + std::to_string(dropped) + " events dropped)";
    runs.push_back(et::CreateRunData(b, b.CreateString(name), -1, 0, b.CreateVector(events)));
    events.clear();
  };
  for (size_t i = 0; i < records.size(); ++i) {
    const TraceRecord& r = records[i];
    const auto name = b.CreateString(event_name(r, names));
    const auto pe = et::CreateProfileEvent(b, name, static_cast<int32_t>(r.chain), as_id(r.instruction), -1, 0, 0,
                                           r.start, r.end);
    events.push_back(et::CreateEvent(b, pe));
    if (static_cast<TraceKind>(r.kind) == TraceKind::kRun) close_run(i + 1 == records.size());
  }
  close_run(true);
  b.FinishSizePrefixed(et::CreateETDump(b, 0, b.CreateVector(runs)), et::ETDumpIdentifier());
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

}  // namespace ember
