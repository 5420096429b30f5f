// Fuzz target: the LLM server's request bodies (examples/llm/server/request.cc) are hostile input from the network.
// The first byte chooses the endpoint (odd: /v1/chat/completions, even: /v1/completions); the rest is the body. No
// HTTP server and no model: the body is parsed and validated, and when a chat request asks for a JSON shape
// (response_format json_schema or json_object, or a required tool call), its schema is compiled against the small
// fixed vocabulary of fuzz_vocab.h and one mask is computed, as the server would before generating. Every refusal
// must name a message (and, for a schema, the request field it came from); nothing may crash or hang.
#include <stdio.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "examples/llm/grammar/constraint.h"
#include "examples/llm/server/request.h"
#include "tests/fuzz/fuzz_vocab.h"

namespace ember {
namespace {

[[noreturn]] void fault(const char* what, const std::string& detail) {
  fprintf(stderr, "server_request_fuzz: %s: %s\n", what, detail.c_str());
  abort();
}

// What the server does with a request's schema before generating: compile it and take the first mask.
void constrain(const llm::server::GenerationRequest& r) {
  std::string why;
  auto c = llm::GrammarConstraint::load_json_schema(r.json_schema, fuzz::fuzz_vocabulary(), &why);
  if (c == nullptr) {
    const llm::server::RequestError e = llm::server::schema_refusal(r, why);
    if (e.param.empty() || e.message.empty()) fault("a schema refusal names no field", why);
    return;
  }
  std::vector<uint32_t> mask(c->words());
  c->mask(mask.data());
}

}  // namespace
}  // namespace ember

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::llm::server;
  if (size == 0) return 0;
  const bool chat = (data[0] & 1) != 0;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  GenerationRequest r;
  RequestError error;
  if (!parse_request(body, chat, &r, &error)) {
    if (error.message.empty()) ember::fault("a request refused without a message", body);
    if (error.status != 400) ember::fault("a request refused with a status other than 400", error.message);
    return 0;
  }
  if (r.chat != chat) ember::fault("the endpoint was not kept", body);
  if (chat && (!r.messages.is_array() || r.messages.items().empty())) ember::fault("a chat without messages", body);
  if (!r.json_schema.empty()) ember::constrain(r);
  return 0;
}
