#include "examples/llm/chat/evaluator.h"

#include <math.h>

#include <map>

#include "examples/llm/chat/builtins.h"
#include "examples/llm/chat/parser.h"

namespace ember {
namespace llm {
namespace chat {

namespace {

// Macros calling macros recurse in C++; this bounds it.
constexpr int kMaxMacroDepth = 20;

// Whether `v` holds a namespace anywhere: a namespace may not be stored in one, so no value can contain itself.
bool holds_namespace(const Value& v, int depth = 0) {
  if (v.is_namespace() || depth > kMaxValueDepth) return true;
  for (const Value& item : v.items()) {
    if (holds_namespace(item, depth + 1)) return true;
  }
  if (v.is_dict()) {
    for (const auto& m : v.members()) {
      if (holds_namespace(m.second, depth + 1)) return true;
    }
  }
  return false;
}

// Python's slice bounds for a sequence of n items.
void slice_indices(int64_t n, const Value& start, const Value& stop, int64_t step, int64_t* from, int64_t* to) {
  const int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? n : n - 1;
  auto clamp = [&](const Value& v, int64_t fallback) {
    if (v.is_none() || v.is_undefined()) return fallback;
    int64_t i = v.as_int();
    if (i < 0) i += n;
    return i < lower ? lower : i > upper ? upper : i;
  };
  *from = clamp(start, step > 0 ? lower : upper);
  *to = clamp(stop, step > 0 ? upper : lower);
}

class Evaluator {
 public:
  Evaluator(const RenderLimits& limits, TemplateError* error) : limits_(limits), error_(error) {
    site_.steps = &steps_;
    site_.max_steps = limits.max_steps;
    site_.max_bytes = limits.max_output_bytes;
  }

  bool run(const Body& body, const ValueDict& variables, std::string* out) {
    scopes_.push_back(variables);
    scopes_.emplace_back();  // the template's own `set`s
    out_ = out;
    return exec_body(body);
  }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  // ---- failures ----

  bool fail(const Location& where, std::string message) {
    if (error_->message.empty() && !error_->raised) {
      error_->message = std::move(message);
      error_->where = where;
    }
    return false;
  }

  // A builtin's failure, at the node that called it.
  bool fail_site(const Location& where) {
    const bool raised = site_.raised;
    std::string message = std::move(site_.message);
    site_.message.clear();
    fail(where, std::move(message));
    if (raised) error_->raised = true;
    return false;
  }

  bool undefined_error(const Value& v, const Location& where) {
    const std::string& t = v.text();
    if (t.empty()) return fail(where, "a value is undefined");
    return fail(where, t[0] == '\'' ? t : "'" + t + "' is undefined");
  }

  bool defined(const Value& v, const Location& where) { return !v.is_undefined() || undefined_error(v, where); }

  bool spend(const Location& where, uint64_t n) { return site_.spend(n) || fail_site(where); }

  bool write(const std::string& s, const Location& where) {
    if (out_->size() + s.size() > limits_.max_output_bytes) {
      return fail(where,
                  "the rendering exceeded its output limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
    }
    out_->append(s);
    return spend(where, s.size() / 16);
  }

  // ---- variables ----

  const Value* lookup(const std::string& name) const {
    for (size_t i = scopes_.size(); i-- > 0;) {
      for (const auto& v : scopes_[i]) {
        if (v.first == name) return &v.second;
      }
    }
    return nullptr;
  }

  void assign(const std::string& name, Value v) {
    for (auto& entry : scopes_.back()) {
      if (entry.first == name) {
        entry.second = std::move(v);
        return;
      }
    }
    scopes_.back().emplace_back(name, std::move(v));
  }

  bool bind(const Stmt& s, const std::vector<std::string>& targets, const Value& v) {
    if (targets.size() == 1) {
      assign(targets[0], v);
      return true;
    }
    ValueList items;
    if (!iterate(v, &site_, &items)) return fail_site(s.where);
    if (items.size() != targets.size()) {
      return fail(s.where, items.size() > targets.size()
                               ? "too many values to unpack (expected " + std::to_string(targets.size()) + ")"
                               : "not enough values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                                     std::to_string(items.size()) + ")");
    }
    for (size_t i = 0; i < targets.size(); ++i) assign(targets[i], items[i]);
    return true;
  }

  // ---- statements ----

  bool exec_body(const Body& body) {
    for (const StmtPtr& s : body) {
      if (!exec(*s)) return false;
      if (flow_ != Flow::kNormal) return true;
    }
    return true;
  }

  bool exec(const Stmt& s) {
    if (!spend(s.where, 1)) return false;
    switch (s.kind) {
      case Stmt::Kind::kText: return write(s.text, s.where);
      case Stmt::Kind::kOutput: {
        Value v;
        return eval(*s.expr, &v) && write(to_str(v), s.where);
      }
      case Stmt::Kind::kIf: {
        for (size_t i = 0; i < s.conditions.size(); ++i) {
          Value c;
          if (!eval(*s.conditions[i], &c)) return false;
          if (c.truthy()) return exec_body(s.bodies[i]);
        }
        return s.bodies.size() > s.conditions.size() ? exec_body(s.bodies.back()) : true;
      }
      case Stmt::Kind::kFor: return exec_for(s);
      case Stmt::Kind::kSet: return exec_set(s);
      case Stmt::Kind::kSetBlock: {
        std::string text;
        if (!capture(s.bodies[0], &text)) return false;
        assign(s.targets[0], Value::string(std::move(text)));
        return true;
      }
      case Stmt::Kind::kBreak:
      case Stmt::Kind::kContinue:
        if (loop_depth_ == 0) return fail(s.where, "'break' or 'continue' outside a loop");
        flow_ = s.kind == Stmt::Kind::kBreak ? Flow::kBreak : Flow::kContinue;
        return true;
      case Stmt::Kind::kMacro:
        macros_[s.targets[0]] = &s;
        assign(s.targets[0], Value::callable("macro " + s.targets[0]));
        return true;
      case Stmt::Kind::kGroup: return exec_body(s.bodies[0]);
    }
    return fail(s.where, "unknown statement");
  }

  // Renders `body` into *text instead of the output (set blocks, macros).
  bool capture(const Body& body, std::string* text) {
    std::string* saved = out_;
    out_ = text;
    const bool ok = exec_body(body);
    out_ = saved;
    return ok;
  }

  bool exec_set(const Stmt& s) {
    Value v;
    if (!eval(*s.expr, &v)) return false;
    if (s.attribute.empty()) return bind(s, s.targets, v);
    const Value* target = lookup(s.targets[0]);
    if (target == nullptr || !target->is_namespace()) {
      return fail(s.where, "cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
    }
    if (!s.attribute.empty() && s.attribute[0] == '_') {
      return fail(s.where, "Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" +
                               s.attribute + "'. Please rename the attribute.");
    }
    if (holds_namespace(v)) return fail(s.where, "a namespace cannot hold a namespace");
    Value ns = *target;  // shares the members
    for (auto& m : ns.namespace_members()) {
      if (m.first == s.attribute) {
        m.second = std::move(v);
        return true;
      }
    }
    ns.namespace_members().emplace_back(s.attribute, std::move(v));
    return true;
  }

  bool exec_for(const Stmt& s) {
    Value iterable;
    if (!eval(*s.expr, &iterable)) return false;
    ValueList all;
    if (!iterate(iterable, &site_, &all)) return fail_site(s.expr->where);
    ValueList items;
    if (s.filter) {
      for (const Value& item : all) {
        scopes_.emplace_back();
        Value keep;
        const bool ok = bind(s, s.targets, item) && eval(*s.filter, &keep);
        scopes_.pop_back();
        if (!ok) return false;
        if (keep.truthy()) items.push_back(item);
      }
    } else {
      items = std::move(all);
    }
    if (items.empty()) return s.bodies.size() > 1 ? exec_body(s.bodies[1]) : true;
    const int64_t n = static_cast<int64_t>(items.size());
    ++loop_depth_;
    bool ok = true;
    for (int64_t i = 0; i < n && ok; ++i) {
      if (!spend(s.where, 1)) {
        ok = false;
        break;
      }
      scopes_.emplace_back();
      const ValueDict loop = {
          {"index", Value::integer(i + 1)},
          {"index0", Value::integer(i)},
          {"revindex", Value::integer(n - i)},
          {"revindex0", Value::integer(n - i - 1)},
          {"first", Value::boolean(i == 0)},
          {"last", Value::boolean(i == n - 1)},
          {"length", Value::integer(n)},
          {"previtem", i > 0 ? items[i - 1] : Value::undefined("'loop' has no previous item")},
          {"nextitem", i + 1 < n ? items[i + 1] : Value::undefined("'loop' has no next item")},
          {"depth", Value::integer(loop_depth_)},
          {"depth0", Value::integer(loop_depth_ - 1)},
      };
      assign("loop", Value::dict(loop));
      ok = bind(s, s.targets, items[i]) && exec_body(s.bodies[0]);
      scopes_.pop_back();
      const Flow flow = flow_;
      flow_ = Flow::kNormal;
      if (flow == Flow::kBreak) break;
    }
    --loop_depth_;
    return ok;
  }

  // ---- expressions ----

  bool eval(const Expr& e, Value* out) {
    if (!spend(e.where, 1)) return false;
    switch (e.kind) {
      case Expr::Kind::kLiteral: *out = e.value; return true;
      case Expr::Kind::kName: {
        if (const Value* v = lookup(e.name)) {
          *out = *v;
        } else if (is_global_function(e.name)) {
          *out = Value::callable(e.name);
        } else {
          *out = Value::undefined("'" + e.name + "' is undefined");
        }
        return true;
      }
      case Expr::Kind::kAttribute: {
        Value obj;
        return eval(*e.args[0], &obj) && attribute(obj, e.name, e.where, out);
      }
      case Expr::Kind::kItem: return eval_item(e, out);
      case Expr::Kind::kSlice: return eval_slice(e, out);
      case Expr::Kind::kCall: return eval_call(e, out);
      case Expr::Kind::kFilter: {
        Value in;
        Arguments args;
        if (!eval(*e.args[0], &in) || !eval_arguments(e, 1, &args)) return false;
        return call_filter(e.name, in, args, &site_, out) || fail_site(e.where);
      }
      case Expr::Kind::kTest: {
        Value in;
        Arguments args;
        bool r = false;
        if (!eval(*e.args[0], &in) || !eval_arguments(e, 1, &args)) return false;
        if (!call_test(e.name, in, args, &site_, &r)) return fail_site(e.where);
        *out = Value::boolean(r != e.negated);
        return true;
      }
      case Expr::Kind::kUnary: return eval_unary(e, out);
      case Expr::Kind::kBinary: return eval_binary(e, out);
      case Expr::Kind::kCompare: return eval_compare(e, out);
      case Expr::Kind::kCondition: {
        Value c;
        if (!eval(*e.args[1], &c)) return false;
        if (c.truthy()) return eval(*e.args[0], out);
        if (e.args[2]) return eval(*e.args[2], out);
        *out = Value::undefined("the condition's else branch is undefined");
        return true;
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        ValueList items;
        for (const ExprPtr& a : e.args) {
          items.emplace_back();
          if (!eval(*a, &items.back())) return false;
        }
        *out = Value::list(std::move(items), e.kind == Expr::Kind::kTuple);
        return true;
      }
      case Expr::Kind::kDict: {
        ValueDict members;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          Value k, v;
          if (!eval(*e.args[i], &k) || !eval(*e.args[i + 1], &v)) return false;
          if (!k.is_string()) return fail(e.args[i]->where, "dict keys must be strings in chat templates");
          bool replaced = false;
          for (auto& m : members) {
            if (m.first == k.text()) m.second = v, replaced = true;
          }
          if (!replaced) members.emplace_back(k.text(), std::move(v));
        }
        *out = Value::dict(std::move(members));
        return true;
      }
    }
    return fail(e.where, "unknown expression");
  }

  bool eval_arguments(const Expr& e, size_t first, Arguments* args) {
    for (size_t i = first; i < e.args.size(); ++i) {
      args->positional.emplace_back();
      if (!eval(*e.args[i], &args->positional.back())) return false;
    }
    for (const auto& k : e.kwargs) {
      Value v;
      if (!eval(*k.second, &v)) return false;
      args->keywords.emplace_back(k.first, std::move(v));
    }
    return true;
  }

  // obj.name: a dict's methods first (Jinja tries getattr before the item), then its members.
  bool attribute(const Value& obj, const std::string& name, const Location& where, Value* out) {
    if (obj.is_undefined()) return undefined_error(obj, where);
    if (obj.is_dict() || obj.is_namespace()) {
      if (obj.is_dict()) {
        if (!method_of(obj, name, &site_, out)) return fail_site(where);
        if (!out->is_undefined()) return true;
      }
      const Value* m = obj.find(name);
      *out = m != nullptr
                 ? *m
                 : Value::undefined("'" + std::string(obj.type_name()) + " object' has no attribute '" + name + "'");
      return true;
    }
    if (!method_of(obj, name, &site_, out)) return fail_site(where);
    if (out->is_undefined()) {
      *out = Value::undefined("'" + std::string(obj.type_name()) + " object' has no attribute '" + name + "'");
    }
    return true;
  }

  bool eval_item(const Expr& e, Value* out) {
    Value obj, key;
    if (!eval(*e.args[0], &obj) || !eval(*e.args[1], &key)) return false;
    if (obj.is_undefined()) return undefined_error(obj, e.where);
    const std::string missing = "'" + std::string(obj.type_name()) + " object' has no element " + to_repr(key);
    if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
      std::vector<std::string> chars;
      if (obj.is_string()) chars = characters(obj.text());
      const int64_t n = static_cast<int64_t>(obj.is_string() ? chars.size() : obj.items().size());
      int64_t i = key.as_int();
      if (i < 0) i += n;
      if (i < 0 || i >= n) {
        *out = Value::undefined(missing);
      } else {
        *out = obj.is_string() ? Value::string(chars[static_cast<size_t>(i)]) : obj.items()[static_cast<size_t>(i)];
      }
      return true;
    }
    if ((obj.is_dict() || obj.is_namespace()) && key.is_string()) {
      if (const Value* m = obj.find(key.text())) {
        *out = *m;
        return true;
      }
    }
    // Jinja falls back to the attribute of that name (`d['items']` is the method).
    if (key.is_string()) return attribute(obj, key.text(), e.where, out);
    *out = Value::undefined(missing);
    return true;
  }

  bool eval_slice(const Expr& e, Value* out) {
    Value obj, bounds[3];
    if (!eval(*e.args[0], &obj)) return false;
    for (int i = 0; i < 3; ++i) {
      if (e.args[i + 1] && !eval(*e.args[i + 1], &bounds[i])) return false;
      if (e.args[i + 1] && !bounds[i].is_none() && !bounds[i].is_int() && !bounds[i].is_bool()) {
        return fail(e.args[i + 1]->where, "slice indices must be integers or None");
      }
    }
    if (obj.is_undefined()) return undefined_error(obj, e.where);
    const int64_t step = bounds[2].is_int() || bounds[2].is_bool() ? bounds[2].as_int() : 1;
    if (step == 0) return fail(e.where, "slice step cannot be zero");
    if (!obj.is_list() && !obj.is_string()) {
      *out = Value::undefined("'" + std::string(obj.type_name()) + " object' cannot be sliced");
      return true;
    }
    std::vector<std::string> chars;
    if (obj.is_string()) chars = characters(obj.text());
    const int64_t n = static_cast<int64_t>(obj.is_string() ? chars.size() : obj.items().size());
    int64_t from, to;
    slice_indices(n, bounds[0], bounds[1], step, &from, &to);
    ValueList items;
    std::string text;
    for (int64_t i = from; step > 0 ? i < to : i > to; i += step) {
      if (obj.is_string()) {
        text += chars[static_cast<size_t>(i)];
      } else {
        items.push_back(obj.items()[static_cast<size_t>(i)]);
      }
    }
    if (!spend(e.where, obj.is_string() ? text.size() : items.size())) return false;
    *out = obj.is_string() ? Value::string(std::move(text)) : Value::list(std::move(items), obj.is_tuple());
    return true;
  }

  bool eval_call(const Expr& e, Value* out) {
    Value callee;
    Arguments args;
    if (!eval(*e.args[0], &callee) || !eval_arguments(e, 1, &args)) return false;
    if (callee.is_undefined()) return undefined_error(callee, e.where);
    if (!callee.is_callable()) return fail(e.where, std::string("'") + callee.type_name() + "' object is not callable");
    if (callee.text().rfind("macro ", 0) == 0) return call_macro(e, callee.text().substr(6), args, out);
    return call_function(callee, args, &site_, out) || fail_site(e.where);
  }

  bool call_macro(const Expr& e, const std::string& name, const Arguments& args, Value* out) {
    auto it = macros_.find(name);
    if (it == macros_.end()) return fail(e.where, "macro '" + name + "' is not defined");
    const Stmt& m = *it->second;
    const size_t n_params = m.targets.size() - 1;
    if (args.positional.size() > n_params)
      return fail(e.where, "macro '" + name + "' takes " + std::to_string(n_params) + " arguments");
    if (macro_depth_ >= kMaxMacroDepth) return fail(e.where, "macros nest deeper than 20 calls");
    ValueDict params;
    for (size_t i = 0; i < n_params; ++i) {
      const std::string& p = m.targets[i + 1];
      const Value* given = args.get(i, p);
      Value v = Value::undefined("'" + p + "' is undefined");
      if (given != nullptr) {
        v = *given;
      } else if (m.conditions[i] && !eval(*m.conditions[i], &v)) {
        return false;
      }
      params.emplace_back(p, std::move(v));
    }
    for (const auto& k : args.keywords) {
      bool known = false;
      for (size_t i = 1; i < m.targets.size(); ++i) known = known || m.targets[i] == k.first;
      if (!known) return fail(e.where, "macro '" + name + "' takes no keyword argument '" + k.first + "'");
    }
    ++macro_depth_;
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    scopes_.push_back(std::move(params));
    std::string text;
    const bool ok = capture(m.bodies[0], &text);
    scopes_.pop_back();
    loop_depth_ = saved_loops;
    flow_ = Flow::kNormal;
    --macro_depth_;
    if (!ok) return false;
    *out = Value::string(std::move(text));
    return true;
  }

  bool eval_unary(const Expr& e, Value* out) {
    Value v;
    if (!eval(*e.args[0], &v)) return false;
    if (e.name == "not") {
      *out = Value::boolean(!v.truthy());
      return true;
    }
    if (!defined(v, e.where)) return false;
    if (!v.is_number()) return fail(e.where, "bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
    if (e.name == "+") {
      *out = v.is_bool() ? Value::integer(v.as_int()) : v;
    } else if (v.is_float()) {
      *out = Value::number(-v.as_double());
    } else {
      if (v.as_int() == INT64_MIN) return fail(e.where, "integer overflow");
      *out = Value::integer(-v.as_int());
    }
    return true;
  }

  bool eval_binary(const Expr& e, Value* out) {
    Value a;
    if (!eval(*e.args[0], &a)) return false;
    if (e.name == "and" || e.name == "or") {
      // Python's and / or: the deciding operand itself, not a bool.
      if ((e.name == "and") != a.truthy()) {
        *out = a;
        return true;
      }
      return eval(*e.args[1], out);
    }
    Value b;
    if (!eval(*e.args[1], &b)) return false;
    if (e.name == "~") {
      std::string s = to_str(a) + to_str(b);
      if (!site_.fits(s.size())) return fail_site(e.where);
      if (!spend(e.where, s.size())) return false;
      *out = Value::string(std::move(s));
      return true;
    }
    if (!defined(a, e.where) || !defined(b, e.where)) return false;
    return arithmetic(e, a, b, out);
  }

  bool type_error(const Expr& e, const Value& a, const Value& b) {
    return fail(e.where,
                "unsupported operand type(s) for " + e.name + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
  }

  bool repeat(const Expr& e, const Value& seq, const Value& times, Value* out) {
    const int64_t n = times.as_int() < 0 ? 0 : times.as_int();
    const size_t unit = seq.is_string() ? seq.text().size() : seq.items().size();
    if (unit != 0 && static_cast<uint64_t>(n) > limits_.max_output_bytes / unit) {
      return fail(e.where, "the repetition makes more than " + std::to_string(limits_.max_output_bytes) + " bytes");
    }
    if (!spend(e.where, unit * static_cast<size_t>(n))) return false;
    if (seq.is_string()) {
      std::string s;
      for (int64_t i = 0; i < n; ++i) s += seq.text();
      *out = Value::string(std::move(s));
    } else {
      ValueList items;
      for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq.items().begin(), seq.items().end());
      *out = Value::list(std::move(items), seq.is_tuple());
    }
    return true;
  }

  bool arithmetic(const Expr& e, const Value& a, const Value& b, Value* out) {
    const std::string& op = e.name;
    if (op == "+" &&
        ((a.is_string() && b.is_string()) || (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()))) {
      if (a.is_string()) {
        if (!site_.fits(a.text().size() + b.text().size())) return fail_site(e.where);
        if (!spend(e.where, a.text().size() + b.text().size())) return false;
        *out = Value::string(a.text() + b.text());
      } else {
        ValueList items = a.items();
        items.insert(items.end(), b.items().begin(), b.items().end());
        if (!site_.fits(items.size()) || !site_.spend(items.size())) return fail_site(e.where);
        *out = Value::list(std::move(items), a.is_tuple());
      }
      return true;
    }
    if (op == "*" && (a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(e, a, b, out);
    if (op == "*" && (b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(e, b, a, out);
    if (!a.is_number() || !b.is_number()) return type_error(e, a, b);
    const bool floating = a.is_float() || b.is_float() || op == "/";
    if (floating) {
      const double x = a.as_double(), y = b.as_double();
      double r;
      if ((op == "/" || op == "//" || op == "%") && y == 0) return fail(e.where, "division by zero");
      if (op == "+") {
        r = x + y;
      } else if (op == "-") {
        r = x - y;
      } else if (op == "*") {
        r = x * y;
      } else if (op == "/") {
        r = x / y;
      } else if (op == "//") {
        r = floor(x / y);
      } else if (op == "%") {
        r = fmod(x, y);
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
      } else {
        r = pow(x, y);
      }
      *out = Value::number(r);
      return true;
    }
    const int64_t x = a.as_int(), y = b.as_int();
    int64_t r = 0;
    bool overflow = false;
    if (op == "+") {
      overflow = __builtin_add_overflow(x, y, &r);
    } else if (op == "-") {
      overflow = __builtin_sub_overflow(x, y, &r);
    } else if (op == "*") {
      overflow = __builtin_mul_overflow(x, y, &r);
    } else if (op == "//" || op == "%") {
      if (y == 0) return fail(e.where, "integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) return fail(e.where, "integer overflow");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) --q, m += y;
      r = op == "//" ? q : m;
    } else {  // **
      if (y < 0) {
        *out = Value::number(pow(static_cast<double>(x), static_cast<double>(y)));
        return true;
      }
      r = 1;
      for (int64_t i = 0; i < y && !overflow; ++i) {
        overflow = __builtin_mul_overflow(r, x, &r);
        if (r == 0 || r == 1) break;
      }
      if (!overflow && x == -1) r = y % 2 ? -1 : 1;
    }
    if (overflow) return fail(e.where, "integer overflow (this engine's integers have 64 bits)");
    *out = Value::integer(r);
    return true;
  }

  bool eval_compare(const Expr& e, Value* out) {
    Value left;
    if (!eval(*e.args[0], &left)) return false;
    for (size_t i = 0; i < e.ops.size(); ++i) {
      Value right;
      if (!eval(*e.args[i + 1], &right)) return false;
      const std::string& op = e.ops[i];
      bool r = false;
      if (op == "==" || op == "!=") {
        r = values_equal(left, right) == (op == "==");
      } else if (op == "in" || op == "notin") {
        if (!contains(right, left, &site_, &r)) return fail_site(e.args[i + 1]->where);
        r = r == (op == "in");
      } else {
        if (!defined(left, e.where) || !defined(right, e.where)) return false;
        if (!compare_values(left, right, op, &site_, &r)) return fail_site(e.where);
      }
      if (!r) {
        *out = Value::boolean(false);
        return true;
      }
      left = std::move(right);
    }
    *out = Value::boolean(true);
    return true;
  }

  const RenderLimits& limits_;
  TemplateError* error_;
  CallSite site_;
  uint64_t steps_ = 0;
  std::vector<ValueDict> scopes_;
  std::map<std::string, const Stmt*> macros_;
  std::string* out_ = nullptr;
  Flow flow_ = Flow::kNormal;
  int loop_depth_ = 0;
  int macro_depth_ = 0;
};

}  // namespace

bool render_template(const Body& body, const ValueDict& variables, const RenderLimits& limits, std::string* out,
                     TemplateError* error) {
  return Evaluator(limits, error).run(body, variables, out);
}

}  // namespace chat
}  // namespace llm
}  // namespace ember
