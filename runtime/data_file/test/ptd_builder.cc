#include "runtime/data_file/test/ptd_builder.h"

#include <string.h>

#include "schema/flat_tensor_generated.h"

namespace ember {
namespace testing {
namespace {

void put64(std::vector<uint8_t>* out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) (*out)[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

std::vector<uint8_t> make_ptd(const std::vector<Entry>& entries) {
  constexpr size_t kAlign = 128, kHeader = 48;
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<ember_ptd::DataSegment>> segments;
  std::vector<flatbuffers::Offset<ember_ptd::NamedData>> named;
  std::vector<uint8_t> data;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    data.resize((data.size() + kAlign - 1) / kAlign * kAlign);
    segments.push_back(ember_ptd::CreateDataSegment(b, data.size(), e.values.size() * sizeof(float)));
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(e.values.data());
    data.insert(data.end(), bytes, bytes + e.values.size() * sizeof(float));
    std::vector<uint8_t> order(e.sizes.size());
    for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<uint8_t>(d);
    auto layout =
        ember_ptd::CreateTensorLayout(b, ember_pte::ScalarType::FLOAT, b.CreateVector(e.sizes), b.CreateVector(order));
    named.push_back(ember_ptd::CreateNamedData(b, b.CreateString(e.key), static_cast<uint32_t>(i), layout));
  }
  b.Finish(ember_ptd::CreateFlatTensor(b, 0, b.CreateVector(segments), b.CreateVector(named)), "FT01");
  std::vector<uint8_t> fb(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  // The header goes after the identifier; only the root offset, stored before it, moves.
  std::vector<uint8_t> out(fb.begin(), fb.begin() + 8);
  uint32_t root;
  memcpy(&root, fb.data(), 4);
  root += kHeader;
  memcpy(out.data(), &root, 4);
  out.resize(8 + kHeader, 0);
  memcpy(out.data() + 8, "FH01", 4);
  out[12] = 40;
  const size_t base = (fb.size() + kHeader + kAlign - 1) / kAlign * kAlign;
  put64(&out, 16, kHeader);
  put64(&out, 24, fb.size());
  put64(&out, 32, base);
  put64(&out, 40, data.size());
  out.insert(out.end(), fb.begin() + 8, fb.end());
  out.resize(base, 0);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

}  // namespace testing
}  // namespace ember
