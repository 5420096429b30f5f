// llm_server: an OpenAI-compatible HTTP server over a decoder .pte, on Debian's cpp-httplib.
//
//   llm_server --model M.pte --tokenizer tokenizer.json [--chat-template tokenizer_config.json] [--port 8080]
//              [--host 127.0.0.1] [--slots 4] [--queue 16] [--threads 1] [--prefix-cache 4] [--model-name NAME]
//
// Routes: GET /health, GET /metrics (Prometheus text), GET /v1/models, GET /v1/models/<id>, POST /v1/completions,
// POST /v1/chat/completions (stream: true answers with server-sent events; response_format and tools through the
// constrained decoder of examples/llm/grammar; chat messages rendered by the model's chat template, or the plain
// default format without --chat-template). --slots requests generate at once, --queue more wait for a slot in
// arrival order, and one beyond those gets 429 at once. A streaming client that disconnects stops its generation
// at the next token and frees its slot. Prints "llm_server: listening on http://HOST:PORT" when ready (--port 0
// takes a free port); SIGINT or SIGTERM stops it after the requests in flight.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "examples/llm/server/engine.h"
#include "examples/llm/server/request.h"
#include "examples/llm/server/responses.h"
#include "examples/llm/server/slot_pool.h"
#include "examples/llm/server/tool_calls.h"
#include "httplib.h"

namespace ember {
namespace llm {
namespace server {
namespace {

struct Options {
  EngineOptions engine;
  std::string host = "127.0.0.1";
  int port = 8080;
  size_t queue = 16;
  std::string model_name;
  size_t max_body_bytes = 4u << 20;
};

int usage(const char* argv0) {
  fprintf(stderr,
          "usage: %s --model M.pte --tokenizer tokenizer.json [--chat-template tokenizer_config.json] [--port N]\n"
          "          [--host ADDR] [--slots N] [--queue N] [--threads N] [--prefix-cache N] [--model-name NAME]\n",
          argv0);
  return 2;
}

bool parse_count(const char* text, long lo, long hi, long* out) {
  char* end = nullptr;
  const long v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// The file name of `path` without its folders and its ".pte": the model id clients see by default.
std::string model_id(const char* path) {
  std::string name = path;
  const size_t slash = name.rfind('/');
  if (slash != std::string::npos) name.erase(0, slash + 1);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".pte") == 0) name.resize(name.size() - 4);
  return name;
}

bool parse_options(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    long n = 0;
    if (v == nullptr) {
      fprintf(stderr, "llm_server: %s needs a value\n", a);
      return false;
    }
    ++i;
    if (strcmp(a, "--model") == 0) {
      o->engine.model = v;
    } else if (strcmp(a, "--tokenizer") == 0) {
      o->engine.tokenizer = v;
    } else if (strcmp(a, "--chat-template") == 0) {
      o->engine.chat_template = v;
    } else if (strcmp(a, "--prefix-cache") == 0 && parse_count(v, 0, 256, &n)) {
      o->engine.prefix_cache = static_cast<size_t>(n);
    } else if (strcmp(a, "--host") == 0) {
      o->host = v;
    } else if (strcmp(a, "--model-name") == 0) {
      o->model_name = v;
    } else if (strcmp(a, "--port") == 0 && parse_count(v, 0, 65535, &n)) {
      o->port = static_cast<int>(n);
    } else if (strcmp(a, "--slots") == 0 && parse_count(v, 1, 64, &n)) {
      o->engine.slots = static_cast<size_t>(n);
    } else if (strcmp(a, "--queue") == 0 && parse_count(v, 0, 4096, &n)) {
      o->queue = static_cast<size_t>(n);
    } else if (strcmp(a, "--threads") == 0 && parse_count(v, 1, 64, &n)) {
      o->engine.threads = static_cast<int>(n);
    } else {
      fprintf(stderr, "llm_server: unknown option or bad value: %s %s\n", a, v);
      return false;
    }
  }
  if (o->engine.model == nullptr || o->engine.tokenizer == nullptr) return false;
  if (o->model_name.empty()) o->model_name = model_id(o->engine.model);
  return true;
}

int64_t unix_now() { return static_cast<int64_t>(time(nullptr)); }

void send_json(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void send_error(httplib::Response& res, const RequestError& error) { send_json(res, error.status, error_body(error)); }

// Answers ids 1, 2, ... prefixed by kind, so a client's log lines can be matched with the server's.
std::string next_answer_id(bool chat) {
  static std::atomic<uint64_t> counter{0};
  return std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(counter.fetch_add(1) + 1);
}

class Server {
 public:
  Server(Engine& engine, const Options& options)
      : engine_(engine), options_(options), slots_(engine.slots(), options.queue), started_(unix_now()) {}

  void routes(httplib::Server& http) {
    http.Get("/health",
             [](const httplib::Request&, httplib::Response& res) { send_json(res, 200, "{\"status\":\"ok\"}"); });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_text(engine_.metrics(), engine_.slots(), slots_.busy(), slots_.waiting()),
                      "text/plain; version=0.0.4");
    });
    http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, models_body(options_.model_name, started_));
    });
    http.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.matches[1] != options_.model_name) {
        RequestError e{404, "invalid_request_error", "model", "no model '" + std::string(req.matches[1]) + "' here"};
        return send_error(res, e);
      }
      send_json(res, 200, model_body(options_.model_name, started_));
    });
    http.Post("/v1/completions",
              [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, false); });
    http.Post("/v1/chat/completions",
              [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, true); });
    // Anything else: OpenAI's error shape rather than an empty page.
    http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      RequestError e{res.status, res.status == 404 ? "invalid_request_error" : "server_error", "",
                     res.status == 404 ? "no route " + req.method + " " + req.path
                                       : "HTTP status " + std::to_string(res.status)};
      res.set_content(error_body(e), "application/json");
    });
  }

 private:
  void generate(const httplib::Request& req, httplib::Response& res, bool chat) {
    auto request = std::make_shared<GenerationRequest>();
    auto prepared = std::make_shared<Prepared>();
    RequestError error;
    if (!parse_request(req.body, chat, request.get(), &error) || !engine_.prepare(*request, prepared.get(), &error)) {
      return send_error(res, error);
    }
    // Any model name is this model: one is served.
    Answer answer{chat, next_answer_id(chat), unix_now(), options_.model_name};
    auto lease = std::make_shared<SlotPool::Lease>(slots_.acquire());
    if (!lease->ok()) {
      ++engine_.metrics().requests_refused;
      engine_.release(*prepared);
      RequestError busy{429, "rate_limit_exceeded", "",
                        "the server is busy: " + std::to_string(engine_.slots()) + " requests generating and " +
                            std::to_string(options_.queue) + " waiting; retry later"};
      return send_error(res, busy);
    }
    if (request->stream) return stream(res, request, prepared, answer, lease);
    std::string text;
    Result<GenerationOutcome> outcome =
        engine_.generate(lease->slot(), *prepared, request->sampling, [&](const std::string& piece) {
          text += piece;
          return true;
        });
    engine_.release(*prepared);
    count(outcome);
    if (!outcome.ok()) return send_error(res, generation_failed(outcome.error()));
    ToolCall call;
    if (request->tool_choice != ToolChoice::kNone && parse_tool_call(text, request->tools, &call)) {
      return send_json(res, 200, tool_call_body(answer, call, *outcome));
    }
    send_json(res, 200, completion_body(answer, text, *outcome));
  }

  // Server-sent events, written as generation goes; the slot is held until the stream ends. A failed write means
  // the client went away: generation stops there. A reply that may be a tool call is held back while it can still
  // become one (it begins with "{"), then sent as the call or as text.
  void stream(httplib::Response& res, std::shared_ptr<GenerationRequest> request, std::shared_ptr<Prepared> prepared,
              const Answer& answer, std::shared_ptr<SlotPool::Lease> lease) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider("text/event-stream", [this, request, prepared, answer,
                                                           lease](size_t, httplib::DataSink& sink) {
      auto send = [&sink](const std::string& event) { return sink.write(event.data(), event.size()); };
      if (answer.chat && !send(sse_event(role_chunk(answer)))) return false;
      const bool may_call = request->tool_choice != ToolChoice::kNone;
      std::string held;
      bool holding = may_call;
      auto on_text = [&](const std::string& piece) {
        if (holding) {
          held += piece;
          const size_t start = held.find_first_not_of(" \t\r\n");
          if (start == std::string::npos || held[start] == '{') return true;
          holding = false;  // plain text after all
          return send(sse_event(text_chunk(answer, held)));
        }
        return send(sse_event(text_chunk(answer, piece)));
      };
      Result<GenerationOutcome> outcome = engine_.generate(lease->slot(), *prepared, request->sampling, on_text);
      engine_.release(*prepared);
      count(outcome);
      if (!outcome.ok()) {
        send(sse_event(error_body(generation_failed(outcome.error()))));
      } else if (strcmp(outcome->finish_reason, "cancelled") == 0) {
        fprintf(stderr, "llm_server: %s cancelled after %zu tokens: the client went away\n", answer.id.c_str(),
                outcome->completion_tokens);
        return false;  // nothing more can reach it
      } else {
        ToolCall call;
        const bool is_call = holding && parse_tool_call(held, request->tools, &call);
        if (is_call) {
          send(sse_event(tool_call_chunk(answer, call)));
        } else if (holding && !held.empty()) {
          send(sse_event(text_chunk(answer, held)));
        }
        send(sse_event(finish_chunk(answer, is_call ? "tool_calls" : outcome->finish_reason)));
        if (request->include_usage) send(sse_event(usage_chunk(answer, *outcome)));
      }
      send(kSseDone);
      sink.done();
      return true;
    });
  }

  void count(const Result<GenerationOutcome>& outcome) {
    Metrics& m = engine_.metrics();
    ++(!outcome.ok()                                      ? m.requests_failed
       : strcmp(outcome->finish_reason, "cancelled") == 0 ? m.requests_cancelled
                                                          : m.requests_finished);
  }

  static RequestError generation_failed(Error e) {
    return RequestError{500, "server_error", "", std::string("generation failed: ") + error_name(e)};
  }

  Engine& engine_;
  const Options& options_;
  SlotPool slots_;
  int64_t started_;
};

httplib::Server* g_http = nullptr;

// Stops the server from a thread of its own: a signal handler may not call into it. A write to a client that has
// gone must fail with EPIPE (so its generation stops) rather than kill the process with SIGPIPE.
void watch_signals() {
  signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set]() mutable {
    int signal = 0;
    sigwait(&set, &signal);
    if (g_http != nullptr) g_http->stop();
  }).detach();
}

}  // namespace

int run(int argc, char** argv) {
  Options options;
  if (!parse_options(argc, argv, &options)) return usage(argv[0]);
  watch_signals();
  Result<std::unique_ptr<Engine>> engine = Engine::load(options.engine);
  if (!engine.ok()) {
    fprintf(stderr, "llm_server: cannot serve %s with %s: %s\n", options.engine.model, options.engine.tokenizer,
            error_name(engine.error()));
    return 3;
  }
  httplib::Server http;
  // Workers: every slot, every queued request, and a few for /health and refusals while all of those are busy.
  const size_t workers = (*engine)->slots() + options.queue + 4;
  http.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  http.set_payload_max_length(options.max_body_bytes);
  Server server(**engine, options);
  server.routes(http);
  const int port = options.port == 0 ? http.bind_to_any_port(options.host)
                                     : (http.bind_to_port(options.host, options.port) ? options.port : -1);
  if (port < 0) {
    fprintf(stderr, "llm_server: cannot listen on %s:%d\n", options.host.c_str(), options.port);
    return 3;
  }
  g_http = &http;
  const DecoderMemory& memory = (*engine)->memory();
  printf(
      "llm_server: listening on http://%s:%d (model '%s', %zu slots of %zu bytes, %zu KV bytes a session, queue "
      "%zu)\n",
      options.host.c_str(), port, options.model_name.c_str(), (*engine)->slots(), memory.slot_bytes(),
      memory.session_bytes, options.queue);
  fflush(stdout);
  const bool ok = http.listen_after_bind();
  g_http = nullptr;
  return ok ? 0 : 1;
}

}  // namespace server
}  // namespace llm
}  // namespace ember

int main(int argc, char** argv) { return ember::llm::server::run(argc, argv); }
