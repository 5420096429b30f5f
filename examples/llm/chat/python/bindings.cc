// _ember_chat: the C++ chat templates from Python (tests/llm/test_chat_template.py compares them with
// transformers' apply_chat_template).
//
//   _ember_chat.render(template, messages_json, add_generation_prompt, extra_json="{}") -> str
//   _ember_chat.render_tokenizer_config(config_json, messages_json, add_generation_prompt, extra_json="{}") -> str
//   _ember_chat.encode_chat(config_json, tokenizer_path, messages_json, add_generation_prompt, bos_id=-1) -> [int]
//       (role/content messages: the ids llm_runner would prefill)
//   _ember_chat.PLAIN_TEMPLATE: the default format's template text
//
// A malformed template or input raises ValueError("line L, column C: message"); the template's own
// raise_exception(message) raises TemplateRaised(message).
#include <pybind11/pybind11.h>

#include <string>

#include <pybind11/stl.h>

#include "examples/llm/chat/chat_prompt.h"
#include "examples/llm/chat/chat_template.h"
#include "runtime/python/pal_recording.h"

namespace py = pybind11;
using ember::llm::ChatTemplate;
using ember::llm::ChatTemplateError;

namespace {

PyObject* g_raised = nullptr;

[[noreturn]] void raise(const ChatTemplateError& e) {
  if (e.raised) {
    PyErr_SetString(g_raised, e.message.c_str());
    throw py::error_already_set();
  }
  throw py::value_error(e.describe());
}

ember::llm::JsonValue json(const std::string& text, const char* what) {
  auto v = ember::llm::parse_json(text);
  if (!v.ok()) throw py::value_error(std::string(what) + " is not valid JSON");
  return std::move(v.get());
}

std::string render_with(const ChatTemplate& t, const std::string& messages, bool add_generation_prompt,
                        const std::string& extra) {
  const auto m = json(messages, "messages");
  const auto x = json(extra, "extra");
  ChatTemplateError e;
  auto out = t.render_json(m, add_generation_prompt, &x, &e);
  if (!out.ok()) raise(e);
  return std::move(out.get());
}

}  // namespace

PYBIND11_MODULE(_ember_chat, m) {
  g_raised = PyErr_NewException("_ember_chat.TemplateRaised", PyExc_ValueError, nullptr);
  m.attr("TemplateRaised") = py::handle(g_raised);
  m.attr("PLAIN_TEMPLATE") = std::string(ember::llm::kPlainChatTemplate);
  m.def(
      "render",
      [](const std::string& source, const std::string& messages, bool add_generation_prompt, const std::string& extra) {
        ChatTemplateError e;
        auto t = ChatTemplate::parse(source, &e);
        if (!t.ok()) raise(e);
        return render_with(t.get(), messages, add_generation_prompt, extra);
      },
      py::arg("template"), py::arg("messages_json"), py::arg("add_generation_prompt") = false,
      py::arg("extra_json") = "{}");
  m.def(
      "render_tokenizer_config",
      [](const std::string& config, const std::string& messages, bool add_generation_prompt, const std::string& extra) {
        ChatTemplateError e;
        auto t = ChatTemplate::from_tokenizer_config(config, &e);
        if (!t.ok()) raise(e);
        return render_with(t.get(), messages, add_generation_prompt, extra);
      },
      py::arg("config_json"), py::arg("messages_json"), py::arg("add_generation_prompt") = false,
      py::arg("extra_json") = "{}");
  m.def(
      "encode_chat",
      [](const std::string& config, const std::string& tokenizer_path, const std::string& messages,
         bool add_generation_prompt, int32_t bos_id) {
        ChatTemplateError e;
        auto t = ChatTemplate::from_tokenizer_config(config, &e);
        if (!t.ok()) raise(e);
        std::string why;
        auto tok = ember::llm::load_tokenizer(tokenizer_path, &why);
        if (!tok.ok()) throw py::value_error(tokenizer_path + ": the tokenizer did not load: " + why);
        std::vector<ember::llm::ChatMessage> list;
        const auto parsed = json(messages, "messages");
        for (const auto& m : parsed.items()) {
          const auto* role = m.find("role");
          const auto* content = m.find("content");
          if (role == nullptr || content == nullptr || !role->is_string() || !content->is_string()) {
            throw py::value_error("encode_chat takes messages with string role and content");
          }
          list.push_back({role->as_string(), content->as_string()});
        }
        auto ids = ember::llm::encode_chat(t.get(), *tok.get(), list, add_generation_prompt, bos_id, &e);
        if (!ids.ok()) {
          if (!e.message.empty()) raise(e);
          throw py::value_error("the tokenizer refused the rendered text");
        }
        return ids.get();
      },
      py::arg("config_json"), py::arg("tokenizer_path"), py::arg("messages_json"),
      py::arg("add_generation_prompt") = false, py::arg("bos_id") = -1);
}
