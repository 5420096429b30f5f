// The server's pieces without a network: request parsing and its refusals, the response shapes (read back with
// the JSON reader), whole-character streaming, stop sequences and admission.
#include <atomic>
#include <chrono>
#include <thread>

#include "examples/llm/server/json_writer.h"
#include "examples/llm/server/request.h"
#include "examples/llm/server/responses.h"
#include "examples/llm/server/slot_pool.h"
#include "examples/llm/server/stop_strings.h"
#include "examples/llm/server/tool_calls.h"
#include "examples/llm/server/utf8_stream.h"
#include "examples/llm/tokenizer/json.h"
#include "gtest/gtest.h"

namespace ember {
namespace llm {
namespace server {
namespace {

TEST(Utf8Stream, HoldsACharacterSplitAcrossTokens) {
  Utf8Stream s;
  EXPECT_EQ(s.push("a\xE2\x82"), "a");  // the euro sign's first two bytes
  EXPECT_EQ(s.push("\xAC!"), "\xE2\x82\xAC!");
  EXPECT_EQ(s.push("\xF0\x9F"), "");
  EXPECT_EQ(s.push("\x98"), "");
  EXPECT_EQ(s.push("\x80"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(s.finish(), "");
}

TEST(Utf8Stream, ReplacesBytesThatAreNotUtf8) {
  Utf8Stream s;
  // A lone continuation byte, an overlong lead, a surrogate's encoding, a byte past U+10FFFF: one U+FFFD each.
  EXPECT_EQ(s.push("x\x80y\xC0z"), "x\xEF\xBF\xBDy\xEF\xBF\xBDz");
  EXPECT_EQ(s.push("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // ED A0: not a prefix
  EXPECT_EQ(s.push("\xF5"), "\xEF\xBF\xBD");
  // A character cut off by an invalid byte (one U+FFFD for its valid beginning, as Python's decoder), and one
  // left unfinished at the end.
  EXPECT_EQ(s.push(std::string("\xE2\x82") + "a"), std::string("\xEF\xBF\xBD") + "a");
  EXPECT_EQ(s.push("\xF0\x9F\x98"), "");
  EXPECT_EQ(s.finish(), "\xEF\xBF\xBD");
}

TEST(StopStrings, CutsWhereTheFirstStopBegins) {
  StopStrings s({"###", "END"});
  EXPECT_EQ(s.push("hello #"), "hello ");  // "#" may begin "###": held
  EXPECT_EQ(s.push("# no"), "## no");      // it did not
  EXPECT_EQ(s.push("##"), "");             // "##" may begin it again
  EXPECT_FALSE(s.stopped());
  StopStrings t({"###", "END"});
  EXPECT_EQ(t.push("ab#"), "ab");
  EXPECT_EQ(t.push("##xyz"), "");
  EXPECT_TRUE(t.stopped());
  EXPECT_EQ(t.push("more"), "");
  EXPECT_EQ(t.finish(), "");
}

TEST(StopStrings, ReleasesHeldTextThatNeverBecameAStop) {
  StopStrings s({"END"});
  EXPECT_EQ(s.push("the EN"), "the ");
  EXPECT_EQ(s.push("D"), "");
  EXPECT_TRUE(s.stopped());
  StopStrings t({"END"});
  EXPECT_EQ(t.push("the EN"), "the ");
  EXPECT_EQ(t.push("ds"), "ENds");
  EXPECT_EQ(t.push("E"), "");
  EXPECT_EQ(t.finish(), "E");
  StopStrings none({});
  EXPECT_EQ(none.push("anything"), "anything");
}

GenerationRequest parse_ok(const std::string& body, bool chat) {
  GenerationRequest r;
  RequestError e;
  EXPECT_TRUE(parse_request(body, chat, &r, &e)) << e.param << ": " << e.message;
  return r;
}

RequestError parse_refused(const std::string& body, bool chat) {
  GenerationRequest r;
  RequestError e;
  EXPECT_FALSE(parse_request(body, chat, &r, &e)) << body;
  return e;
}

TEST(Request, CompletionFields) {
  GenerationRequest r =
      parse_ok(R"({"model":"x","prompt":"Hi","max_tokens":5,"temperature":0,"top_p":0.9,"seed":7,"stop":["a","b"],)"
               R"("stream":true,"stream_options":{"include_usage":true},"user":"ignored","n":1})",
               false);
  EXPECT_EQ(r.prompt, "Hi");
  EXPECT_EQ(r.sampling.max_tokens, 5);
  EXPECT_EQ(r.sampling.temperature, 0.0);
  EXPECT_DOUBLE_EQ(r.sampling.top_p, 0.9);
  EXPECT_TRUE(r.sampling.has_seed);
  EXPECT_EQ(r.sampling.seed, 7u);
  EXPECT_EQ(r.sampling.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(parse_ok(R"({"prompt":"Hi"})", false).sampling.max_tokens, 16);  // OpenAI's default for completions
  EXPECT_EQ(parse_ok(R"({"prompt":[1,2,3]})", false).prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(parse_ok(R"({"prompt":["one"],"stop":"x"})", false).sampling.stop, (std::vector<std::string>{"x"}));
}

TEST(Request, ChatMessages) {
  GenerationRequest r =
      parse_ok(R"({"messages":[{"role":"developer","content":"Be brief."},)"
               R"({"role":"user","content":[{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]}],)"
               R"("max_completion_tokens":9})",
               true);
  const std::vector<JsonValue>& m = r.messages.items();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].find("role")->as_string(), "system");  // OpenAI's "developer"
  EXPECT_EQ(m[1].find("content")->as_string(), "Hello");  // text parts joined
  EXPECT_EQ(r.sampling.max_tokens, 9);
  EXPECT_EQ(parse_ok(R"({"messages":[{"role":"user","content":"x"}]})", true).sampling.max_tokens, -1);
}

TEST(Request, ResponseFormatAndTools) {
  EXPECT_TRUE(parse_ok(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"text"}})", true)
                  .json_schema.empty());
  EXPECT_EQ(parse_ok(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}})", true)
                .json_schema,
            R"({"type":"object","additionalProperties":true})");
  GenerationRequest schema =
      parse_ok(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",)"
               R"("json_schema":{"name":"n","schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}})",
               true);
  EXPECT_EQ(schema.json_schema, R"({"type":"object","properties":{"a":{"type":"integer"}}})");
  const std::string tools =
      R"("tools":[{"type":"function","function":{"name":"add","parameters":{"type":"object","properties":)"
      R"({"x":{"type":"integer"}},"required":["x"]}}},{"type":"function","function":{"name":"now"}}])";
  GenerationRequest automatic = parse_ok(R"({"messages":[{"role":"user","content":"x"}],)" + tools + "}", true);
  EXPECT_EQ(automatic.tool_choice, ToolChoice::kAuto);
  EXPECT_TRUE(automatic.json_schema.empty());
  GenerationRequest named = parse_ok(R"({"messages":[{"role":"user","content":"x"}],)" + tools +
                                         R"(,"tool_choice":{"type":"function","function":{"name":"add"}}})",
                                     true);
  EXPECT_EQ(named.tool_choice, ToolChoice::kRequired);
  EXPECT_EQ(named.json_schema,
            R"({"anyOf":[{"type":"object","properties":{"name":{"const":"add"},"arguments":{"type":"object",)"
            R"("properties":{"x":{"type":"integer"}},"required":["x"]}},"required":["name","arguments"]}]})");
  GenerationRequest required =
      parse_ok(R"({"messages":[{"role":"user","content":"x"}],)" + tools + R"(,"tool_choice":"required"})", true);
  EXPECT_NE(required.json_schema.find(R"({"const":"now"})"), std::string::npos);

  ToolCall call;
  EXPECT_TRUE(parse_tool_call(R"( {"name":"add","arguments":{"x":3}} )", automatic.tools, &call));
  EXPECT_EQ(call.name, "add");
  EXPECT_EQ(call.arguments, R"({"x":3})");
  EXPECT_TRUE(parse_tool_call(R"({"name":"now","parameters":{}})", automatic.tools, &call));
  EXPECT_FALSE(parse_tool_call(R"({"name":"sub","arguments":{}})", automatic.tools, &call));  // no such tool
  EXPECT_FALSE(parse_tool_call(R"({"name":"add","arguments":{},"x":1})", automatic.tools, &call));
  EXPECT_FALSE(parse_tool_call("The answer is 4.", automatic.tools, &call));
  Result<JsonValue> body = parse_json(tool_call_body(Answer{true, "c", 1, "m"}, call, GenerationOutcome{}));
  const JsonValue& message = *body->find("choices")->items()[0].find("message");
  EXPECT_TRUE(message.find("content")->is_null());
  EXPECT_EQ(message.find("tool_calls")->items()[0].find("function")->find("name")->as_string(), "now");
  EXPECT_EQ(body->find("choices")->items()[0].find("finish_reason")->as_string(), "tool_calls");
}

TEST(Request, RefusalsNameTheParameter) {
  struct Case {
    const char* body;
    bool chat;
    const char* param;
    const char* says;
  } cases[] = {
      {R"({"prompt":"x","temperature":3})", false, "temperature", "from 0 to 2"},
      {R"({"prompt":"x","top_p":0})", false, "top_p", "above 0"},
      {R"({"prompt":"x","max_tokens":0})", false, "max_tokens", ">= 1"},
      {R"({"prompt":"x","n":2})", false, "n", "n = 1"},
      {R"({"prompt":"x","logprobs":3})", false, "logprobs", "not supported"},
      {R"({"prompt":"x","stop":["a","b","c","d","e"]})", false, "stop", "up to 4"},
      {R"({"prompt":"x","seed":1.5})", false, "seed", "integer"},
      {R"({"prompt":{"a":1}})", false, "prompt", "must be a string"},
      {R"({"prompt":[1,-2]})", false, "prompt", ">= 0"},
      {R"({"max_tokens":4})", false, "prompt", "required"},
      {R"({"messages":[]})", true, "messages", "non-empty"},
      {R"({"messages":[{"content":"x"}]})", true, "messages", "messages[0] needs a string 'role'"},
      {R"({"messages":[{"role":"robot","content":"x"}]})", true, "messages", "'robot'"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", true, "messages", "only text parts"},
      {R"({"model":3,"prompt":"x"})", false, "model", "string"},
      {R"({"prompt":"x","stream":"yes"})", false, "stream", "true or false"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}})", true, "response_format",
       "text, json_object or json_schema"},
      {R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}})", true,
       "response_format", "schema must be an object"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"web"}]})", true, "tools", "tools[0]"},
      {R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required"})", true, "tool_choice", "needs tools"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],)"
       R"("tool_choice":{"type":"function","function":{"name":"g"}}})",
       true, "tool_choice", "no tool named 'g'"},
  };
  for (const Case& c : cases) {
    RequestError e = parse_refused(c.body, c.chat);
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(e.message.find(c.says), std::string::npos) << c.body << " -> " << e.message;
  }
  // Inside arrays, the refusal says which element and which field of it.
  const std::string user = R"("messages":[{"role":"user","content":"x"}])";
  const std::string add = R"({"type":"function","function":{"name":"add"}})";
  const struct {
    std::string body;
    const char* param;
    const char* says;
  } paths[] = {
      {R"({"messages":[{"role":"user","content":"x"},3]})", "messages", "messages[1] must be an object, not number"},
      {R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},"b"]}]})", "messages",
       "messages[0].content[1]: only text parts"},
      {"{" + user + R"(,"tools":[)" + add + R"(,{"type":"function","function":{"name":7}}]})", "tools",
       "tools[1].function.name must be a non-empty string"},
      {"{" + user + R"(,"tools":[)" + add + R"(,{"type":"function","function":{"name":"f","parameters":[]}}]})",
       "tools", "tools[1].function.parameters must be an object (a JSON Schema), not array"},
      {"{" + user + R"(,"tools":[{"type":"fn"}]})", "tools", "tools[0].type must be \"function\""},
      {"{" + user + R"(,"tools":[7]})", "tools", "tools[0] must be an object, not number"},
      {"{" + user + R"(,"stop":["a",null]})", "stop", "stop[1] must be a string, not null"},
      {"{" + user + R"(,"response_format":{"type":"yaml"}})", "response_format", "not 'yaml'"},
  };
  for (const auto& c : paths) {
    RequestError e = parse_refused(c.body, true);
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(e.message.find(c.says), std::string::npos) << c.body << " -> " << e.message;
  }
  RequestError bad = parse_refused("{\"prompt\": \"x\",\n \"stop\": }", false);
  EXPECT_EQ(bad.param, "");
  EXPECT_NE(bad.message.find("line 2, column 10"), std::string::npos) << bad.message;
  EXPECT_NE(parse_refused("[1]", false).message.find("JSON object"), std::string::npos);
}

// A schema the compiler refuses is reported against the request field it came from.
TEST(Request, SchemaRefusalsNameTheRequestField) {
  GenerationRequest r = parse_ok(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":)"
                                 R"("json_schema","json_schema":{"schema":{"type":"object"}}}})",
                                 true);
  RequestError e = schema_refusal(r, "/properties/a/pattern: keyword 'pattern' is not supported");
  EXPECT_EQ(e.param, "response_format");
  EXPECT_EQ(e.message, "response_format.json_schema.schema/properties/a/pattern: keyword 'pattern' is not supported");
  EXPECT_EQ(schema_refusal(r, "/: the schema false matches nothing").message,
            "response_format.json_schema.schema: the schema false matches nothing");
  const std::string tools =
      R"("tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b",)"
      R"("parameters":{"type":"object","properties":{"n":{"type":"array","maxItems":100000}}}}}])";
  GenerationRequest any =
      parse_ok(R"({"messages":[{"role":"user","content":"x"}],)" + tools + R"(,"tool_choice":"required"})", true);
  e = schema_refusal(any, "/anyOf/1/properties/arguments/properties/n/maxItems: 100000 is above the limit");
  EXPECT_EQ(e.param, "tools");
  EXPECT_EQ(e.message, "tools[1].function.parameters/properties/n/maxItems: 100000 is above the limit");
  // A named tool is the only alternative of the call's schema: anyOf/0 is that tool.
  GenerationRequest named = parse_ok(R"({"messages":[{"role":"user","content":"x"}],)" + tools +
                                         R"(,"tool_choice":{"type":"function","function":{"name":"b"}}})",
                                     true);
  EXPECT_EQ(schema_refusal(named, "/anyOf/0/properties/arguments/type: unknown type 'x'").message,
            "tools[1].function.parameters/type: unknown type 'x'");
}

TEST(Responses, ParseBackAsOpenAIShapes) {
  Answer chat{true, "chatcmpl-1", 1700000000, "m"};
  GenerationOutcome o{"length", 3, 2, 1};
  Result<JsonValue> body = parse_json(completion_body(chat, "a \"quoted\"\n\x01 text", o));
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->find("object")->as_string(), "chat.completion");
  const JsonValue& choice = body->find("choices")->items()[0];
  EXPECT_EQ(choice.find("message")->find("content")->as_string(), "a \"quoted\"\n\x01 text");
  EXPECT_EQ(choice.find("finish_reason")->as_string(), "length");
  EXPECT_EQ(body->find("usage")->find("total_tokens")->as_int(), 5);
  EXPECT_EQ(body->find("usage")->find("prompt_tokens_details")->find("cached_tokens")->as_int(), 1);

  Answer text{false, "cmpl-2", 1, "m"};
  const std::string event = sse_event(text_chunk(text, "hi"));
  ASSERT_EQ(event.substr(0, 6), "data: ");
  ASSERT_EQ(event.substr(event.size() - 2), "\n\n");
  Result<JsonValue> chunk = parse_json(event.substr(6, event.size() - 8));
  ASSERT_TRUE(chunk.ok());
  EXPECT_EQ(chunk->find("object")->as_string(), "text_completion");
  EXPECT_TRUE(chunk->find("choices")->items()[0].find("finish_reason")->is_null());
  Result<JsonValue> role = parse_json(role_chunk(chat));
  EXPECT_EQ(role->find("choices")->items()[0].find("delta")->find("role")->as_string(), "assistant");
  Result<JsonValue> usage = parse_json(usage_chunk(chat, o));
  EXPECT_TRUE(usage->find("choices")->items().empty());
  Result<JsonValue> error = parse_json(error_body(RequestError{400, "invalid_request_error", "n", "only n = 1"}));
  EXPECT_EQ(error->find("error")->find("param")->as_string(), "n");
  Result<JsonValue> models = parse_json(models_body("smol", 5));
  EXPECT_EQ(models->find("data")->items()[0].find("id")->as_string(), "smol");
  EXPECT_EQ(json_quote("\x1f"), "\"\\u001f\"");
}

TEST(SlotPool, QueuesThenRefuses) {
  SlotPool pool(1, 1);
  SlotPool::Lease first = pool.acquire();
  ASSERT_TRUE(first.ok());
  std::atomic<bool> second_ran{false};
  std::thread waiter([&] {
    SlotPool::Lease second = pool.acquire();  // waits for the first to end
    second_ran = second.ok();
  });
  while (pool.waiting() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(pool.acquire().ok());  // one generating, one waiting: the queue of 1 is full
  {
    SlotPool::Lease done = std::move(first);
  }
  waiter.join();
  EXPECT_TRUE(second_ran);
  EXPECT_TRUE(pool.acquire().ok());  // everything released
}

}  // namespace
}  // namespace server
}  // namespace llm
}  // namespace ember
