#include "examples/llm/chat/parser.h"

#include <utility>

namespace ember {
namespace llm {
namespace chat {

namespace {

using TK = Token::Kind;

class Parser {
 public:
  Parser(std::vector<Token> tokens, TemplateError* error) : t_(std::move(tokens)), error_(error) {}

  bool parse(Body* body) {
    std::string stop;
    if (!parse_body({}, body, &stop)) return false;
    return true;
  }

 private:
  // ---- token helpers ----
  const Token& peek(size_t ahead = 0) const {
    const size_t i = pos_ + ahead;
    return i < t_.size() ? t_[i] : t_.back();
  }
  const Token& next() {
    const Token& tok = peek();
    if (pos_ + 1 < t_.size()) ++pos_;
    return tok;
  }
  bool is_op(const char* op, size_t ahead = 0) const { return peek(ahead).kind == TK::kOp && peek(ahead).text == op; }
  bool is_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).kind == TK::kName && peek(ahead).text == name;
  }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }

  static std::string describe(const Token& tok) {
    switch (tok.kind) {
      case TK::kText: return "text";
      case TK::kVariableBegin: return "'{{'";
      case TK::kVariableEnd: return "'}}'";
      case TK::kBlockBegin: return "'{%'";
      case TK::kBlockEnd: return "'%}'";
      case TK::kName: return "'" + tok.text + "'";
      case TK::kString: return "a string";
      case TK::kInt:
      case TK::kFloat: return "a number";
      case TK::kOp: return "'" + tok.text + "'";
      case TK::kEnd: return "the end of the template";
    }
    return "?";
  }

  bool fail_at(const Token& tok, std::string message) {
    if (error_->message.empty()) {
      error_->message = std::move(message);
      error_->where = tok.where;
    }
    return false;
  }
  bool expected(const char* what) {
    return fail_at(peek(), std::string("expected ") + what + ", found " + describe(peek()));
  }
  bool expect_op(const char* op) { return skip_op(op) || expected((std::string("'") + op + "'").c_str()); }
  bool expect_block_end() { return peek().kind == TK::kBlockEnd ? (next(), true) : expected("'%}'"); }

  // Bounds the recursion of both grammars.
  struct Depth {
    explicit Depth(int* d) : d_(d) { ++*d_; }
    ~Depth() { --*d_; }
    int* d_;
  };
  bool too_deep() {
    if (depth_ <= kMaxNesting) return false;
    fail_at(peek(), "more than 100 nested statements or expressions");
    return true;
  }

  ExprPtr node(Expr::Kind kind, const Location& where) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->where = where;
    return e;
  }

  // ---- statements ----

  // Parses statements up to a block tag named in `stops` (whose name is consumed and returned in *stop) or the
  // end of the template (only allowed when `stops` is empty).
  bool parse_body(std::initializer_list<const char*> stops, Body* body, std::string* stop) {
    Depth d(&depth_);
    if (too_deep()) return false;
    const Token& opening = peek();
    while (true) {
      const Token& tok = peek();
      if (tok.kind == TK::kEnd) {
        if (stops.size() == 0) return true;
        std::string names;
        for (const char* s : stops) names += std::string(names.empty() ? "" : " or ") + "'" + s + "'";
        return fail_at(tok, "unexpected end of template: the block opened at line " +
                                std::to_string(opening.where.line) + " needs " + names);
      }
      if (tok.kind == TK::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->where = tok.where;
        s->text = tok.text;
        body->push_back(std::move(s));
        next();
        continue;
      }
      if (tok.kind == TK::kVariableBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kOutput;
        s->where = tok.where;
        if (!parse_tuple(&s->expr, true)) return false;
        if (peek().kind != TK::kVariableEnd) return expected("'}}'");
        next();
        body->push_back(std::move(s));
        continue;
      }
      if (tok.kind != TK::kBlockBegin) return expected("text, '{{' or '{%'");
      next();
      const Token& tag = peek();
      if (tag.kind != TK::kName) return expected("a tag name");
      for (const char* s : stops) {
        if (tag.text == s) {
          *stop = tag.text;
          next();
          return true;
        }
      }
      if (!parse_statement(body)) return false;
    }
  }

  bool parse_statement(Body* body) {
    const Token& tag = next();
    auto s = std::make_unique<Stmt>();
    s->where = tag.where;
    const std::string& name = tag.text;
    bool ok;
    if (name == "if") {
      ok = parse_if(s.get());
    } else if (name == "for") {
      ok = parse_for(s.get());
    } else if (name == "set") {
      ok = parse_set(s.get());
    } else if (name == "break" || name == "continue") {
      s->kind = name == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      ok = expect_block_end();
    } else if (name == "macro") {
      ok = parse_macro(s.get());
    } else if (name == "generation") {
      s->kind = Stmt::Kind::kGroup;
      s->bodies.emplace_back();
      std::string stop;
      ok = expect_block_end() && parse_body({"endgeneration"}, &s->bodies[0], &stop) && expect_block_end();
    } else if (name == "elif" || name == "else" || name.rfind("end", 0) == 0) {
      return fail_at(tag, "unexpected '" + name + "': no open block takes it here");
    } else {
      return fail_at(tag, "unknown or unsupported tag '" + name + "'");
    }
    if (!ok) return false;
    body->push_back(std::move(s));
    return true;
  }

  bool parse_if(Stmt* s) {
    s->kind = Stmt::Kind::kIf;
    while (true) {
      ExprPtr cond;
      if (!parse_tuple(&cond, true) || !expect_block_end()) return false;
      s->conditions.push_back(std::move(cond));
      s->bodies.emplace_back();
      std::string stop;
      if (!parse_body({"elif", "else", "endif"}, &s->bodies.back(), &stop)) return false;
      if (stop == "elif") continue;
      if (stop == "else") {
        s->bodies.emplace_back();
        if (!expect_block_end() || !parse_body({"endif"}, &s->bodies.back(), &stop)) return false;
      }
      return expect_block_end();
    }
  }

  bool parse_targets(Stmt* s, bool allow_attribute) {
    const bool parens = skip_op("(");
    do {
      if (peek().kind != TK::kName) return expected("a variable name");
      s->targets.push_back(next().text);
      if (allow_attribute && s->targets.size() == 1 && is_op(".")) {
        next();
        if (peek().kind != TK::kName) return expected("an attribute name");
        s->attribute = next().text;
        break;
      }
    } while (skip_op(","));
    return !parens || expect_op(")");
  }

  bool parse_for(Stmt* s) {
    s->kind = Stmt::Kind::kFor;
    if (!parse_targets(s, false)) return false;
    if (!skip_name("in")) return expected("'in'");
    if (!parse_tuple(&s->expr, false)) return false;
    if (skip_name("if") && !parse_expression(&s->filter, true)) return false;
    if (is_name("recursive")) return fail_at(peek(), "recursive loops are not supported");
    if (!expect_block_end()) return false;
    s->bodies.emplace_back();
    std::string stop;
    if (!parse_body({"else", "endfor"}, &s->bodies[0], &stop)) return false;
    if (stop == "else") {
      s->bodies.emplace_back();
      if (!expect_block_end() || !parse_body({"endfor"}, &s->bodies[1], &stop)) return false;
    }
    return expect_block_end();
  }

  bool parse_set(Stmt* s) {
    if (!parse_targets(s, true)) return false;
    if (skip_op("=")) {
      s->kind = Stmt::Kind::kSet;
      return parse_tuple(&s->expr, true) && expect_block_end();
    }
    if (s->targets.size() != 1 || !s->attribute.empty()) return expected("'='");
    s->kind = Stmt::Kind::kSetBlock;
    s->bodies.emplace_back();
    std::string stop;
    return expect_block_end() && parse_body({"endset"}, &s->bodies[0], &stop) && expect_block_end();
  }

  bool parse_macro(Stmt* s) {
    s->kind = Stmt::Kind::kMacro;
    if (peek().kind != TK::kName) return expected("a macro name");
    s->targets.push_back(next().text);
    if (!expect_op("(")) return false;
    while (!is_op(")")) {
      if (peek().kind != TK::kName) return expected("a parameter name");
      s->targets.push_back(next().text);
      ExprPtr def;
      if (skip_op("=") && !parse_expression(&def, true)) return false;
      s->conditions.push_back(std::move(def));
      if (!skip_op(",")) break;
    }
    if (!expect_op(")") || !expect_block_end()) return false;
    s->bodies.emplace_back();
    std::string stop;
    return parse_body({"endmacro"}, &s->bodies[0], &stop) && expect_block_end();
  }

  // ---- expressions ----

  // An expression, or a tuple of them separated by commas (`{{ a, b }}`, `set x = 1, 2`).
  bool parse_tuple(ExprPtr* out, bool with_condition) {
    const Location where = peek().where;
    ExprPtr first;
    if (!parse_expression(&first, with_condition)) return false;
    if (!is_op(",")) {
      *out = std::move(first);
      return true;
    }
    auto t = node(Expr::Kind::kTuple, where);
    t->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (peek().kind == TK::kBlockEnd || peek().kind == TK::kVariableEnd || is_name("if")) break;
      ExprPtr e;
      if (!parse_expression(&e, with_condition)) return false;
      t->args.push_back(std::move(e));
    }
    *out = std::move(t);
    return true;
  }

  bool parse_expression(ExprPtr* out, bool with_condition) {
    Depth d(&depth_);
    if (too_deep()) return false;
    return with_condition ? parse_condition(out) : parse_or(out);
  }

  bool parse_condition(ExprPtr* out) {
    if (!parse_or(out)) return false;
    while (is_name("if")) {
      auto c = node(Expr::Kind::kCondition, next().where);
      ExprPtr cond, otherwise;
      if (!parse_or(&cond)) return false;
      if (skip_name("else") && !parse_expression(&otherwise, true)) return false;
      c->args.push_back(std::move(*out));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(otherwise));
      *out = std::move(c);
    }
    return true;
  }

  using Step = bool (Parser::*)(ExprPtr*);

  // left (op right)*, for the left-associative binary levels.
  bool parse_binary(ExprPtr* out, Step operand, std::initializer_list<const char*> ops, bool names) {
    if (!(this->*operand)(out)) return false;
    while (true) {
      const char* found = nullptr;
      for (const char* op : ops) {
        if (names ? is_name(op) : is_op(op)) found = op;
      }
      if (found == nullptr) return true;
      auto b = node(Expr::Kind::kBinary, next().where);
      b->name = found;
      ExprPtr right;
      if (!(this->*operand)(&right)) return false;
      b->args.push_back(std::move(*out));
      b->args.push_back(std::move(right));
      *out = std::move(b);
    }
  }

  bool parse_or(ExprPtr* out) { return parse_binary(out, &Parser::parse_and, {"or"}, true); }
  bool parse_and(ExprPtr* out) { return parse_binary(out, &Parser::parse_not, {"and"}, true); }

  bool parse_not(ExprPtr* out) {
    if (!is_name("not")) return parse_compare(out);
    Depth d(&depth_);
    if (too_deep()) return false;
    auto n = node(Expr::Kind::kUnary, next().where);
    n->name = "not";
    n->args.emplace_back();
    if (!parse_not(&n->args[0])) return false;
    *out = std::move(n);
    return true;
  }

  bool parse_compare(ExprPtr* out) {
    const Location where = peek().where;
    ExprPtr first;
    if (!parse_math1(&first)) return false;
    auto c = node(Expr::Kind::kCompare, where);
    c->args.push_back(std::move(first));
    while (true) {
      std::string op;
      if (peek().kind == TK::kOp && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                     peek().text == "<=" || peek().text == ">" || peek().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next(), next();
        op = "notin";
      } else {
        break;
      }
      ExprPtr right;
      if (!parse_math1(&right)) return false;
      c->ops.push_back(op);
      c->args.push_back(std::move(right));
    }
    *out = c->ops.empty() ? std::move(c->args[0]) : std::move(c);
    return true;
  }

  bool parse_math1(ExprPtr* out) { return parse_binary(out, &Parser::parse_concat, {"+", "-"}, false); }
  bool parse_concat(ExprPtr* out) { return parse_binary(out, &Parser::parse_math2, {"~"}, false); }
  bool parse_math2(ExprPtr* out) { return parse_binary(out, &Parser::parse_pow, {"*", "/", "//", "%"}, false); }
  bool parse_pow(ExprPtr* out) { return parse_binary(out, &Parser::parse_unary_filtered, {"**"}, false); }
  bool parse_unary_filtered(ExprPtr* out) { return parse_unary(out, true); }

  bool parse_unary(ExprPtr* out, bool with_filter) {
    Depth d(&depth_);
    if (too_deep()) return false;
    if (is_op("-") || is_op("+")) {
      auto u = node(Expr::Kind::kUnary, peek().where);
      u->name = next().text;
      u->args.emplace_back();
      if (!parse_unary(&u->args[0], false)) return false;
      *out = std::move(u);
    } else if (!parse_primary(out)) {
      return false;
    }
    if (!parse_postfix(out)) return false;
    return !with_filter || parse_filters(out);
  }

  bool parse_primary(ExprPtr* out) {
    const Token& tok = peek();
    switch (tok.kind) {
      case TK::kName: {
        next();
        const std::string& n = tok.text;
        auto e = node(Expr::Kind::kLiteral, tok.where);
        if (n == "true" || n == "True") {
          e->value = Value::boolean(true);
        } else if (n == "false" || n == "False") {
          e->value = Value::boolean(false);
        } else if (n == "none" || n == "None") {
          e->value = Value::none();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = n;
        }
        *out = std::move(e);
        return true;
      }
      case TK::kString: {
        std::string s;
        while (peek().kind == TK::kString) s += next().text;  // adjacent literals join, as in Python
        auto e = node(Expr::Kind::kLiteral, tok.where);
        e->value = Value::string(std::move(s));
        *out = std::move(e);
        return true;
      }
      case TK::kInt:
      case TK::kFloat: {
        next();
        auto e = node(Expr::Kind::kLiteral, tok.where);
        e->value = tok.kind == TK::kInt ? Value::integer(tok.integer) : Value::number(tok.number);
        *out = std::move(e);
        return true;
      }
      case TK::kOp:
        if (tok.text == "(") return parse_parenthesized(out);
        if (tok.text == "[") return parse_list(out);
        if (tok.text == "{") return parse_dict(out);
        break;
      default: break;
    }
    return expected("an expression");
  }

  bool parse_parenthesized(ExprPtr* out) {
    const Location where = next().where;
    if (skip_op(")")) {
      *out = node(Expr::Kind::kTuple, where);
      return true;
    }
    ExprPtr first;
    if (!parse_expression(&first, true)) return false;
    if (skip_op(")")) {
      *out = std::move(first);
      return true;
    }
    auto t = node(Expr::Kind::kTuple, where);
    t->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (is_op(")")) break;
      ExprPtr e;
      if (!parse_expression(&e, true)) return false;
      t->args.push_back(std::move(e));
    }
    if (!expect_op(")")) return false;
    *out = std::move(t);
    return true;
  }

  bool parse_list(ExprPtr* out) {
    auto l = node(Expr::Kind::kList, next().where);
    while (!is_op("]")) {
      ExprPtr e;
      if (!parse_expression(&e, true)) return false;
      l->args.push_back(std::move(e));
      if (!skip_op(",")) break;
    }
    if (!expect_op("]")) return false;
    *out = std::move(l);
    return true;
  }

  bool parse_dict(ExprPtr* out) {
    auto d = node(Expr::Kind::kDict, next().where);
    while (!is_op("}")) {
      ExprPtr k, v;
      if (!parse_expression(&k, true) || !expect_op(":") || !parse_expression(&v, true)) return false;
      d->args.push_back(std::move(k));
      d->args.push_back(std::move(v));
      if (!skip_op(",")) break;
    }
    if (!expect_op("}")) return false;
    *out = std::move(d);
    return true;
  }

  bool parse_postfix(ExprPtr* out) {
    while (true) {
      if (is_op(".")) {
        auto a = node(Expr::Kind::kAttribute, next().where);
        if (peek().kind == TK::kName) {
          a->name = next().text;
        } else if (peek().kind == TK::kInt) {
          // `x.0` is x[0] in Jinja.
          a->kind = Expr::Kind::kItem;
          auto index = node(Expr::Kind::kLiteral, peek().where);
          index->value = Value::integer(next().integer);
          a->args.push_back(std::move(*out));
          a->args.push_back(std::move(index));
          *out = std::move(a);
          continue;
        } else {
          return expected("an attribute name");
        }
        a->args.push_back(std::move(*out));
        *out = std::move(a);
      } else if (is_op("[")) {
        if (!parse_subscript(out)) return false;
      } else if (is_op("(")) {
        if (!parse_call(out)) return false;
      } else {
        return true;
      }
    }
  }

  bool parse_subscript(ExprPtr* out) {
    const Location where = next().where;
    ExprPtr parts[3];
    int colons = 0;
    for (int i = 0; i < 3; ++i) {
      if (!is_op(":") && !is_op("]") && !parse_expression(&parts[i], true)) return false;
      if (i < 2 && skip_op(":")) {
        ++colons;
        continue;
      }
      break;
    }
    if (!expect_op("]")) return false;
    auto s = node(colons ? Expr::Kind::kSlice : Expr::Kind::kItem, where);
    if (!colons && !parts[0]) return fail_at(peek(), "expected a subscript inside '[]'");
    s->args.push_back(std::move(*out));
    s->args.push_back(std::move(parts[0]));
    if (colons) {
      s->args.push_back(std::move(parts[1]));
      s->args.push_back(std::move(parts[2]));
    }
    *out = std::move(s);
    return true;
  }

  // `(a, b, key=c)` into e->args (after what is already there) and e->kwargs.
  bool parse_arguments(Expr* e) {
    if (!expect_op("(")) return false;
    while (!is_op(")")) {
      if (peek().kind == TK::kName && is_op("=", 1)) {
        std::string key = next().text;
        next();
        ExprPtr v;
        if (!parse_expression(&v, true)) return false;
        e->kwargs.emplace_back(std::move(key), std::move(v));
      } else {
        if (!e->kwargs.empty()) return fail_at(peek(), "a positional argument follows a keyword argument");
        ExprPtr v;
        if (!parse_expression(&v, true)) return false;
        e->args.push_back(std::move(v));
      }
      if (!skip_op(",")) break;
    }
    return expect_op(")");
  }

  bool parse_call(ExprPtr* out) {
    auto c = node(Expr::Kind::kCall, peek().where);
    c->args.push_back(std::move(*out));
    if (!parse_arguments(c.get())) return false;
    *out = std::move(c);
    return true;
  }

  bool parse_filters(ExprPtr* out) {
    while (true) {
      if (is_op("|")) {
        next();
        const Token& name = peek();
        if (name.kind != TK::kName) return expected("a filter name");
        next();
        if (!is_known_filter(name.text)) return fail_at(name, "unknown filter '" + name.text + "'");
        auto f = node(Expr::Kind::kFilter, name.where);
        f->name = name.text;
        f->args.push_back(std::move(*out));
        if (is_op("(") && !parse_arguments(f.get())) return false;
        *out = std::move(f);
      } else if (is_name("is")) {
        next();
        auto t = node(Expr::Kind::kTest, peek().where);
        t->negated = skip_name("not");
        const Token& name = peek();
        if (name.kind != TK::kName) return expected("a test name");
        next();
        if (!is_known_test(name.text)) return fail_at(name, "unknown test '" + name.text + "'");
        t->name = name.text;
        t->args.push_back(std::move(*out));
        if (is_op("(")) {
          if (!parse_arguments(t.get())) return false;
        } else if (takes_bare_argument()) {
          ExprPtr arg;
          if (!parse_primary(&arg) || !parse_postfix(&arg)) return false;
          t->args.push_back(std::move(arg));
        }
        *out = std::move(t);
      } else if (is_op("(")) {
        if (!parse_call(out)) return false;
      } else {
        return true;
      }
    }
  }

  // `x is divisibleby 3`, `x is sameas none`: a test's one argument may follow without parentheses.
  bool takes_bare_argument() const {
    const Token& tok = peek();
    if (tok.kind == TK::kName) return tok.text != "else" && tok.text != "or" && tok.text != "and" && tok.text != "if";
    return tok.kind == TK::kString || tok.kind == TK::kInt || tok.kind == TK::kFloat || is_op("[") || is_op("{");
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
  int depth_ = 0;
  TemplateError* error_;
};

}  // namespace

bool parse_template(std::string_view source, Body* body, TemplateError* error) {
  const std::string normalized = normalize_template_source(source);
  std::vector<Token> tokens;
  if (!tokenize(normalized, &tokens, error)) return false;
  return Parser(std::move(tokens), error).parse(body);
}

}  // namespace chat
}  // namespace llm
}  // namespace ember
