// _ember_chat: the C++ chat templates from Python (tests/llm/test_chat_template.py compares them with
// transformers' apply_chat_template).
//
//   _ember_chat.render(template, messages_json, add_generation_prompt, extra_json="{}") -> str
//   _ember_chat.render_tokenizer_config(config_json, messages_json, add_generation_prompt, extra_json="{}") -> str
//   _ember_chat.PLAIN_TEMPLATE: the default format's template text
//
// A malformed template or input raises ValueError("line L, column C: message"); the template's own
// raise_exception(message) raises TemplateRaised(message).
#include <pybind11/pybind11.h>

#include <string>

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
}
