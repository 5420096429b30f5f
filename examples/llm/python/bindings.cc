// _ember_llm: a decoder program, its sessions and a prefix cache from Python (runtime/python/ember/llm.py wraps
// it). Logits come back as the float32 bytes the runtime wrote, so a test can compare them bit for bit.
//
//   p = _ember_llm.Program("model.pte", threads=1, slots=1)   # slots: sessions that run at once
//   s = p.new_session(context_full="error" | "sliding_window", sink_tokens=4)
//   logits = s.append([1, 15, 27])            # bytes: vocab_size float32
//   s.rewind(2); s.fork(); s.save("x.session"); p.restore_session("x.session")
//   _ember_llm.plan("model.pte") -> dict      # memory from MethodMeta, before load
//
// Errors raise RuntimeError "<ErrorName>: <the runtime's message>"; a full context raises ContextFullError.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/llm/decoder_program.h"
#include "examples/llm/prefix_cache.h"
#include "examples/llm/session.h"
#include "runtime/core/error.h"
#include "runtime/python/pal_recording.h"

namespace py = pybind11;
using ember::Error;
using ember::Result;
using ember::llm::DecoderProgram;
using ember::llm::PrefixCache;
using ember::llm::Session;
using ember::llm::SessionOptions;

namespace {

struct ContextFullError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void raise(Error e) {
  std::string msg = std::string(ember::error_name(e)) + ": " + ember::python::g_last_error;
  ember::python::g_last_error[0] = '\0';
  if (e == Error::OutOfResources) throw ContextFullError(msg);
  throw std::runtime_error(msg);
}

void check(Error e) {
  if (e != Error::Ok) raise(e);
}

template <typename T>
T take(Result<T>&& r) {
  if (!r.ok()) raise(r.error());
  return std::move(r.get());
}

SessionOptions options(const std::string& context_full, size_t sink_tokens) {
  SessionOptions o;
  if (context_full == "sliding_window") {
    o.context_full = SessionOptions::ContextFull::kSlidingWindow;
  } else if (context_full != "error") {
    throw std::invalid_argument("context_full is '" + context_full + "'; give 'error' or 'sliding_window'");
  }
  o.sink_tokens = sink_tokens;
  return o;
}

py::bytes logits_bytes(const DecoderProgram& p, const float* logits) {
  return py::bytes(reinterpret_cast<const char*>(logits), sizeof(float) * p.metadata().vocab_size);
}

py::dict memory_dict(const ember::llm::DecoderMemory& m) {
  py::dict d;
  d["pools"] = m.pool_bytes;
  d["method_allocator"] = m.method_allocator_bytes;
  d["scratch"] = m.scratch_bytes;
  d["session_bytes"] = m.session_bytes;
  d["slot_bytes"] = m.slot_bytes();
  d["total"] = m.total();
  return d;
}

// The cache with what its last start() gave besides the session (a tuple cannot keep the cache alive for it).
struct PyPrefixCache {
  PyPrefixCache(DecoderProgram* p, size_t max_entries) : cache(p, max_entries) {}
  PrefixCache cache;
  py::bytes last_logits;
  size_t last_reused = 0;
};

}  // namespace

PYBIND11_MODULE(_ember_llm, m) {
  py::register_exception<ContextFullError>(m, "ContextFullError", PyExc_RuntimeError);

  m.def(
      "plan",
      [](const std::string& path, int threads) {
        return memory_dict(take(DecoderProgram::plan(path.c_str(), threads)));
      },
      py::arg("path"), py::arg("threads") = 1);

  // A session keeps a pointer to its program: keep_alive holds the Python program (or the session or cache it
  // came from, which hold it) for as long as the session lives.
  py::class_<Session>(m, "Session")
      .def(
          "append",
          [](Session& s, const std::vector<int64_t>& ids) {
            // Without the GIL: sessions of a program loaded with several slots run at once from Python threads.
            const float* logits = nullptr;
            Error e = Error::Ok;
            {
              py::gil_scoped_release released;
              Result<const float*> r = s.append(ids.data(), ids.size());
              if (r.ok()) logits = r.get();
              else e = r.error();
            }
            check(e);
            return logits_bytes(s.program(), logits);
          },
          py::arg("ids"))
      .def(
          "rewind", [](Session& s, size_t position) { check(s.rewind(position)); }, py::arg("position"))
      .def_property_readonly("position", &Session::position)
      .def_property_readonly("tokens", &Session::tokens)
      .def_property_readonly("slides", &Session::slides)
      .def_property_readonly("state_bytes", &Session::state_bytes)
      .def("state",
           [](const Session& s) {
             const std::vector<uint8_t> live = s.live_state();
             return py::bytes(reinterpret_cast<const char*>(live.data()), live.size());
           })
      .def(
          "fork", [](const Session& s) { return take(s.fork()); }, py::keep_alive<0, 1>())
      .def("save", [](const Session& s, const std::string& path) { check(s.save(path.c_str())); }, py::arg("path"));

  py::class_<DecoderProgram>(m, "Program")
      .def(py::init([](const std::string& path, int threads, int slots, const std::vector<std::string>& data_files) {
             return take(DecoderProgram::load(path.c_str(), threads, slots, data_files));
           }),
           py::arg("path"), py::arg("threads") = 1, py::arg("slots") = 1,
           py::arg("data_files") = std::vector<std::string>())
      .def_property_readonly("slots", &DecoderProgram::slots)
      .def_property_readonly("metadata",
                             [](const DecoderProgram& p) {
                               const ember::llm::DecoderMetadata& md = p.metadata();
                               py::dict d;
                               d["max_seq_len"] = md.max_seq_len;
                               d["vocab_size"] = md.vocab_size;
                               d["bos_id"] = md.bos_id;
                               d["eos_ids"] = md.eos_ids;
                               d["n_layers"] = md.n_layers;
                               d["logits_rows"] = md.logits_rows;
                               d["session_memory_id"] = md.session_memory_id;
                               return d;
                             })
      .def_property_readonly("memory", [](const DecoderProgram& p) { return memory_dict(p.memory()); })
      .def(
          "new_session",
          [](DecoderProgram& p, const std::string& context_full, size_t sink_tokens) {
            return take(p.new_session(options(context_full, sink_tokens)));
          },
          py::arg("context_full") = "error", py::arg("sink_tokens") = 4, py::keep_alive<0, 1>())
      .def(
          "restore_session",
          [](DecoderProgram& p, const std::string& path, const std::string& context_full, size_t sink_tokens) {
            return take(p.restore_session(path.c_str(), options(context_full, sink_tokens)));
          },
          py::arg("path"), py::arg("context_full") = "error", py::arg("sink_tokens") = 4, py::keep_alive<0, 1>())
      .def(
          "forward",
          [](DecoderProgram& p, const std::vector<int64_t>& ids, int64_t start_pos) {
            bool failed = false;
            return logits_bytes(p, take(p.forward(ids.data(), ids.size(), start_pos, &failed)));
          },
          py::arg("ids"), py::arg("start_pos"));

  py::class_<PyPrefixCache>(m, "PrefixCache")
      .def(py::init<DecoderProgram*, size_t>(), py::arg("program"), py::arg("max_entries"), py::keep_alive<1, 2>())
      .def(
          "add", [](PyPrefixCache& c, const std::vector<int64_t>& ids) { check(c.cache.add(ids.data(), ids.size())); },
          py::arg("ids"))
      .def(
          "start",
          [](PyPrefixCache& c, const std::vector<int64_t>& ids, const std::string& context_full, size_t sink_tokens) {
            const float* logits = nullptr;
            size_t reused = 0;
            std::unique_ptr<Session> s =
                take(c.cache.start(ids.data(), ids.size(), &logits, &reused, options(context_full, sink_tokens)));
            c.last_logits = logits_bytes(s->program(), logits);
            c.last_reused = reused;
            return s;
          },
          py::arg("ids"), py::arg("context_full") = "error", py::arg("sink_tokens") = 4, py::keep_alive<0, 1>())
      .def_readonly("last_logits", &PyPrefixCache::last_logits)
      .def_readonly("last_reused", &PyPrefixCache::last_reused)
      .def_property_readonly("size", [](const PyPrefixCache& c) { return c.cache.size(); })
      .def_property_readonly("bytes", [](const PyPrefixCache& c) { return c.cache.bytes(); });
}
