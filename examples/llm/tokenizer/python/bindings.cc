// _ember_tokenizer: the C++ tokenizers from Python, for the parity tests against the reference libraries.
//
//   tok = _ember_tokenizer.load("tokenizer.json")       # or a SentencePiece .model; RuntimeError names the error
//   tok.encode("text", bos=False, eos=False) -> list[int]
//   tok.decode([ids], skip_special=False) -> bytes;  tok.decode_token(prev, id) -> bytes
//   split("gpt2" | "llama3" | "qwen2", text) -> [bytes]: the pre-tokenizer's pieces
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "examples/llm/tokenizer/pre_tokenizer.h"
#include "examples/llm/tokenizer/tokenizer.h"
#include "runtime/core/error.h"
#include "runtime/python/pal_recording.h"

namespace py = pybind11;
using ember::llm::Tokenizer;

namespace {

[[noreturn]] void raise(ember::Error e) {
  throw std::runtime_error(std::string(ember::error_name(e)) + ": " + ember::python::g_last_error);
}

template <typename T>
T take(ember::Result<T>&& r) {
  if (!r.ok()) raise(r.error());
  return std::move(r.get());
}

}  // namespace

PYBIND11_MODULE(_ember_tokenizer, m) {
  py::class_<Tokenizer, std::shared_ptr<Tokenizer>>(m, "Tokenizer")
      .def(
          "encode",
          [](const Tokenizer& t, const std::string& text, bool bos, bool eos) {
            return take(t.encode(text, bos, eos));
          },
          py::arg("text"), py::arg("bos") = false, py::arg("eos") = false)
      .def("encode_batch",
           [](const Tokenizer& t, const std::vector<std::string>& texts) {
             std::vector<std::vector<int32_t>> out;
             for (const auto& s : texts) out.push_back(take(t.encode(s, false, false)));
             return out;
           })
      .def(
          "decode",
          [](const Tokenizer& t, const std::vector<int32_t>& ids, bool skip_special) {
            return py::bytes(take(t.decode(ids, skip_special)));
          },
          py::arg("ids"), py::arg("skip_special") = false)
      .def("decode_token",
           [](const Tokenizer& t, int32_t prev, int32_t id) { return py::bytes(take(t.decode(prev, id))); })
      .def("id_to_piece", [](const Tokenizer& t, int32_t id) { return py::bytes(take(t.id_to_piece(id))); })
      .def("piece_to_id", &Tokenizer::piece_to_id)
      .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
      .def_property_readonly("bos_id", &Tokenizer::bos_id)
      .def_property_readonly("eos_id", &Tokenizer::eos_id)
      .def_property_readonly("kind", &Tokenizer::kind);
  // The pieces a split pattern cuts `text` into ("gpt2", "llama3" or "qwen2").
  m.def("split", [](const std::string& pattern, const std::string& text) {
    ember::llm::SplitPattern p;
    if (pattern == "gpt2") {
      p = ember::llm::SplitPattern::kGpt2;
    } else if (pattern == "llama3") {
      p = ember::llm::SplitPattern::kLlama3;
    } else if (pattern == "qwen2") {
      p = ember::llm::SplitPattern::kQwen2;
    } else {
      throw std::invalid_argument("pattern: gpt2, llama3 or qwen2");
    }
    py::list out;
    for (const auto& r : ember::llm::split_text(text, p))
      out.append(py::bytes(text.substr(r.first, r.second - r.first)));
    return out;
  });
  m.def("split_regex", [](const std::string& pattern) {
    if (pattern == "gpt2") return std::string(ember::llm::split_pattern_regex(ember::llm::SplitPattern::kGpt2));
    if (pattern == "llama3") return std::string(ember::llm::split_pattern_regex(ember::llm::SplitPattern::kLlama3));
    return std::string(ember::llm::split_pattern_regex(ember::llm::SplitPattern::kQwen2));
  });
  // A refusal raises RuntimeError("<Error>: <what and where>"), the loader's own message.
  m.def("load", [](const std::string& path) {
    std::string why;
    auto tok = ember::llm::load_tokenizer(path, &why);
    if (!tok.ok()) throw std::runtime_error(std::string(ember::error_name(tok.error())) + ": " + why);
    return std::shared_ptr<Tokenizer>(std::move(tok.get()));
  });
  m.def("load_bytes", [](const py::bytes& data) {
    std::string why;
    auto tok = ember::llm::load_tokenizer_from_bytes(std::string(data), &why);
    if (!tok.ok()) throw std::runtime_error(std::string(ember::error_name(tok.error())) + ": " + why);
    return std::shared_ptr<Tokenizer>(std::move(tok.get()));
  });
}
