#include "examples/llm/runner/chat_loop.h"

#include <stdlib.h>
#include <string.h>

#include <memory>
#include <string>

#include "examples/llm/chat/chat_prompt.h"
#include "examples/llm/tokenizer/json.h"

namespace ember {
namespace llm {
namespace {

// The conversation's messages beside a saved session: FILE.messages.json, {"messages": [{"role", "content"}]}.
std::string sidecar_path(const std::string& session_path) { return session_path + ".messages.json"; }

void append_json_string(const std::string& s, std::string* out) {
  out->push_back('"');
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);
      out->append(buf);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  out->push_back('"');
}

// Whether `s` is well-formed UTF-8 (what JSON text must be).
bool is_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = cp << 6 | (d & 0x3F);
    }
    const uint32_t min = n == 1 ? 0 : n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

bool write_messages(const std::string& path, const std::vector<ChatMessage>& messages) {
  std::string json = "{\"messages\": [";
  for (size_t i = 0; i < messages.size(); ++i) {
    json += i == 0 ? "\n  {\"role\": " : ",\n  {\"role\": ";
    append_json_string(messages[i].role, &json);
    // A reply is the model's bytes, which may end inside a character: JSON cannot hold those, their hex can.
    const std::string& content = messages[i].content;
    if (is_utf8(content)) {
      json += ", \"content\": ";
      append_json_string(content, &json);
    } else {
      json += ", \"content_hex\": \"";
      for (unsigned char c : content) {
        char buf[3];
        snprintf(buf, sizeof(buf), "%02x", c);
        json += buf;
      }
      json += "\"";
    }
    json += "}";
  }
  json += "\n]}\n";
  FILE* f = fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = fwrite(json.data(), 1, json.size(), f) == json.size();
  return fclose(f) == 0 && ok;
}

// The messages of a sidecar file, or false with `why` set.
bool read_messages(const std::string& path, std::vector<ChatMessage>* messages, std::string* why) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *why = "cannot read " + path;
    return false;
  }
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  fclose(f);
  Result<JsonValue> doc = parse_json(text, why);
  if (!doc.ok()) {
    *why = path + ": " + *why;
    return false;
  }
  const JsonValue* list = doc->find("messages");
  if (list == nullptr || !list->is_array()) {
    *why = path + ": no \"messages\" array";
    return false;
  }
  messages->clear();
  for (const JsonValue& m : list->items()) {
    const JsonValue* role = m.find("role");
    const JsonValue* content = m.find("content");
    const JsonValue* hex = m.find("content_hex");
    std::string bytes;
    if (hex != nullptr && hex->is_string() && hex->as_string().size() % 2 == 0) {
      for (size_t i = 0; i < hex->as_string().size(); i += 2) {
        bytes.push_back(static_cast<char>(strtoul(hex->as_string().substr(i, 2).c_str(), nullptr, 16)));
      }
    } else if (content != nullptr && content->is_string()) {
      bytes = content->as_string();
    } else {
      *why = path + ": a message without a string \"content\" (or \"content_hex\")";
      return false;
    }
    if (role == nullptr || !role->is_string()) {
      *why = path + ": a message without a string \"role\"";
      return false;
    }
    messages->push_back({role->as_string(), bytes});
  }
  return true;
}

// A line without its line ending; false at the end of input.
bool read_line(FILE* in, std::string* line) {
  line->clear();
  int c;
  while ((c = fgetc(in)) != EOF && c != '\n') line->push_back(static_cast<char>(c));
  if (c == EOF && line->empty()) return false;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

class Chat {
 public:
  Chat(const ChatLoopParts& parts, const ChatLoopOptions& options, FILE* out) : p_(parts), o_(options), out_(out) {
    session_options_.context_full =
        options.sliding_window ? SessionOptions::ContextFull::kSlidingWindow : SessionOptions::ContextFull::kError;
  }

  bool start() {
    Result<std::unique_ptr<Session>> s = p_.program->new_session(session_options_);
    if (!s.ok()) {
      fprintf(stderr, "llm_runner: cannot start a session: %s\n", error_name(s.error()));
      return false;
    }
    session_ = std::move(s.get());
    reset_messages();
    return true;
  }

  // One input line: a command or a user turn. Returns the exit code to end with, or -1 to go on.
  int line(const std::string& text) {
    if (text == "/quit") return 0;
    if (text == "/reset") {
      reset_messages();
      fed_.clear();
      return session_->rewind(0) == Error::Ok ? -1 : 5;
    }
    if (text.rfind("/save ", 0) == 0) return save(text.substr(6)), -1;
    if (text.rfind("/load ", 0) == 0) return load(text.substr(6)), -1;
    if (text == "/save" || text == "/load") {
      fprintf(stderr, "llm_runner: %s needs a file name (%s FILE)\n", text.c_str(), text.c_str());
      return -1;
    }
    return turn(text);
  }

 private:
  void reset_messages() {
    messages_.clear();
    if (o_.system != nullptr) messages_.push_back({"system", o_.system});
  }

  void save(const std::string& path) {
    const Error e = session_->save(path.c_str());
    if (e != Error::Ok) {
      fprintf(stderr, "llm_runner: /save %s: the session was not saved: %s\n", path.c_str(), error_name(e));
      return;
    }
    if (!write_messages(sidecar_path(path), messages_)) {
      fprintf(stderr, "llm_runner: /save %s: cannot write %s\n", path.c_str(), sidecar_path(path).c_str());
      return;
    }
    fprintf(stderr, "llm_runner: saved %zu tokens and %zu messages to %s\n", session_->position(), messages_.size(),
            path.c_str());
  }

  // The conversation is replaced only when both the session and its messages load.
  void load(const std::string& path) {
    std::vector<ChatMessage> messages;
    std::string why;
    if (!read_messages(sidecar_path(path), &messages, &why)) {
      fprintf(stderr, "llm_runner: /load %s refused: %s\n", path.c_str(), why.c_str());
      return;
    }
    Result<std::unique_ptr<Session>> s = p_.program->restore_session(path.c_str(), session_options_);
    if (!s.ok()) {
      fprintf(stderr, "llm_runner: /load %s refused: %s\n", path.c_str(), error_name(s.error()));
      return;
    }
    session_ = std::move(s.get());
    messages_ = std::move(messages);
    fed_ = session_->tokens();
    fprintf(stderr, "llm_runner: loaded %zu tokens and %zu messages from %s\n", session_->position(), messages_.size(),
            path.c_str());
  }

  // Brings the session to the conversation's tokens `ids`: keeps the longest prefix it already holds (at least
  // one token is appended, for the logits of the last) and appends the rest.
  Result<const float*> feed(const std::vector<int64_t>& ids, size_t* appended) {
    size_t k = 0;
    while (k < fed_.size() && k < ids.size() && fed_[k] == ids[k]) ++k;
    if (k == ids.size()) --k;
    // After a slide the session holds the first tokens and a recent part of fed_: the tokens to forget are its
    // last ones either way.
    const size_t drop = fed_.size() - k;
    if (drop > session_->position()) {
      fed_.clear();
      EMBER_TRY(session_->rewind(0));
      k = 0;
    } else if (drop > 0) {
      EMBER_TRY(session_->rewind(session_->position() - drop));
      fed_.resize(k);
    }
    *appended = ids.size() - k;
    Result<const float*> logits = session_->append(ids.data() + k, ids.size() - k);
    if (logits.ok()) fed_.insert(fed_.end(), ids.begin() + static_cast<ptrdiff_t>(k), ids.end());
    return logits;
  }

  // Says why an append failed; returns the exit code when it is fatal (execution failed), -1 otherwise.
  int report(const char* what, Error e) {
    if (e == Error::OutOfResources) {
      fprintf(stderr,
              "llm_runner: %s: context full (OutOfResources): the conversation needs more than the model's "
              "max_seq_len %lld positions; /reset starts a new one, --context-slide keeps a sliding window\n",
              what, static_cast<long long>(p_.program->metadata().max_seq_len));
      return -1;
    }
    fprintf(stderr, "llm_runner: %s failed: %s\n", what, error_name(e));
    return e == Error::InvalidArgument ? -1 : 5;
  }

  int turn(const std::string& text) {
    messages_.push_back({"user", text});
    ChatTemplateError template_error;
    Result<std::vector<int32_t>> encoded =
        encode_chat(*p_.chat_template, *p_.tokenizer, messages_, true, o_.bos_id, &template_error);
    if (!encoded.ok()) {
      messages_.pop_back();
      fprintf(stderr, "llm_runner: the conversation was not rendered: %s (%s)\n", template_error.describe().c_str(),
              error_name(encoded.error()));
      return -1;
    }
    const std::vector<int64_t> ids(encoded->begin(), encoded->end());
    if (ids.empty()) {
      messages_.pop_back();
      fprintf(stderr, "llm_runner: the conversation renders to no tokens\n");
      return -1;
    }
    size_t appended = 0;
    Result<const float*> logits = feed(ids, &appended);
    if (!logits.ok()) {
      messages_.pop_back();
      return report("prefill", logits.error());
    }
    const size_t slides = session_->slides();
    std::string reply;
    size_t generated = 0;
    int rc = generate(*logits, ids.back(), &reply, &generated);
    fputc('\n', out_);
    fflush(out_);
    messages_.push_back({"assistant", reply});
    fprintf(stderr, "llm_runner: turn %zu: %zu prompt tokens (%zu appended, %zu kept), %zu generated%s\n", ++turns_,
            ids.size(), appended, ids.size() - appended, generated,
            session_->slides() > slides ? "; the context window slid" : "");
    return rc;
  }

  // Chooses the reply's tokens from `logits` on, writing each one's text; every one but the last goes to the
  // session. Stops at EOS (not written), when the grammar is complete, or after max_new_tokens.
  int generate(const float* logits, int64_t prev, std::string* reply, size_t* generated) {
    const size_t vocab_size = static_cast<size_t>(p_.program->metadata().vocab_size);
    GrammarConstraint* c = p_.constraint;
    if (c != nullptr) {
      c->reset();
      mask_.resize(c->words());
    }
    for (long i = 0; i < o_.max_new_tokens; ++i) {
      const float* row = logits;
      if (c != nullptr) {
        c->mask(mask_.data());
        masked_.resize(vocab_size);
        mask_logits(mask_.data(), p_.vocab->size(), logits, vocab_size, masked_.data());
        row = masked_.data();
      }
      Result<int32_t> next = p_.sampler->sample(row, vocab_size);
      if (!next.ok()) {
        fprintf(stderr, "llm_runner: sampling failed: %s\n", error_name(next.error()));
        return 5;
      }
      const int64_t id = *next;
      if (c != nullptr && !c->accept(static_cast<int32_t>(id))) {
        fprintf(stderr, "llm_runner: the grammar allows no token here\n");
        return -1;
      }
      ++*generated;
      bool is_eos = false;
      for (int64_t e : o_.eos) is_eos = is_eos || e == id;
      if (is_eos) return -1;
      const bool known = static_cast<uint64_t>(id) < p_.tokenizer->vocab_size();
      Result<std::string> piece = known ? p_.tokenizer->decode(static_cast<int32_t>(prev), static_cast<int32_t>(id))
                                        : Result<std::string>(Error::NotFound);
      const std::string text = piece.ok() ? *piece : "<" + std::to_string(id) + ">";
      fwrite(text.data(), 1, text.size(), out_);
      fflush(out_);
      reply->append(text);
      prev = id;
      if ((c != nullptr && c->done()) || i + 1 == o_.max_new_tokens) return -1;
      Result<const float*> out = session_->append(&id, 1);
      if (!out.ok()) return report("decode", out.error());
      fed_.push_back(id);
      logits = *out;
    }
    return -1;
  }

  ChatLoopParts p_;
  const ChatLoopOptions& o_;
  FILE* out_;
  SessionOptions session_options_;
  std::unique_ptr<Session> session_;
  std::vector<ChatMessage> messages_;
  // The conversation's tokens given to the session, in order (the session's own tokens, until a slide drops some).
  std::vector<int64_t> fed_;
  size_t turns_ = 0;
  std::vector<uint32_t> mask_;
  std::vector<float> masked_;
};

}  // namespace

int run_chat(const ChatLoopParts& parts, const ChatLoopOptions& options, FILE* in, FILE* out) {
  Chat chat(parts, options, out);
  if (!chat.start()) return 3;
  std::string text;
  while (read_line(in, &text)) {
    const int rc = chat.line(text);
    if (rc >= 0) return rc;
  }
  return 0;
}

}  // namespace llm
}  // namespace ember
