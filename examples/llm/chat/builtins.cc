#include "examples/llm/chat/builtins.h"

#include "examples/llm/chat/parser.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>

#include "examples/llm/tokenizer/unicode.h"

namespace ember {
namespace llm {
namespace chat {

const Value* Arguments::get(size_t index, std::string_view keyword) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& k : keywords) {
    if (k.first == keyword) return &k.second;
  }
  return nullptr;
}

bool CallSite::spend(uint64_t n) {
  *steps += n;
  if (*steps <= max_steps) return true;
  return fail("the template exceeded its work limit of " + std::to_string(max_steps) +
              " steps (loop iterations, expressions and bytes of strings built)");
}

bool CallSite::fits(size_t size) {
  if (size <= max_bytes) return true;
  return fail("a value of " + std::to_string(size) + " bytes or items exceeds the output limit of " +
              std::to_string(max_bytes) + " bytes");
}

std::vector<std::string> characters(const std::string& s) {
  std::vector<std::string> out;
  for (const Char& c : split_chars(s)) out.push_back(s.substr(c.offset, c.length));
  return out;
}

namespace {

// ---- strings ----

uint32_t case_map(uint32_t cp, bool upper) {
  // ASCII, Latin-1, Greek and Cyrillic letters: the scripts chat templates' role names and texts use; other
  // characters keep their case (Python maps all of Unicode).
  struct Range {
    uint32_t lower_first, lower_last, upper_first;
  };
  static const Range kRanges[] = {
      {0x61, 0x7a, 0x41},    {0xe0, 0xf6, 0xc0},    {0xf8, 0xfe, 0xd8},    {0x3b1, 0x3c1, 0x391},
      {0x3c3, 0x3c9, 0x3a3}, {0x430, 0x44f, 0x410}, {0x450, 0x45f, 0x400},
  };
  for (const Range& r : kRanges) {
    const uint32_t upper_last = r.upper_first + (r.lower_last - r.lower_first);
    if (upper && cp >= r.lower_first && cp <= r.lower_last) return cp - r.lower_first + r.upper_first;
    if (!upper && cp >= r.upper_first && cp <= upper_last) return cp - r.upper_first + r.lower_first;
  }
  if (upper && cp == 0x3c2) return 0x3a3;  // final sigma
  return cp;
}

bool is_cased(uint32_t cp) { return case_map(cp, true) != cp || case_map(cp, false) != cp; }

std::string map_case(const std::string& s, bool upper) {
  std::string out;
  for (const Char& c : split_chars(s)) {
    if (c.cp == kInvalidCodePoint) {
      out.append(s, c.offset, c.length);
    } else {
      append_utf8(&out, case_map(c.cp, upper));
    }
  }
  return out;
}

// Python's str.capitalize: the first character upper, the rest lower.
std::string capitalize(const std::string& s) {
  std::string out;
  bool first = true;
  for (const Char& c : split_chars(s)) {
    if (c.cp == kInvalidCodePoint) {
      out.append(s, c.offset, c.length);
    } else {
      append_utf8(&out, case_map(c.cp, first));
    }
    first = false;
  }
  return out;
}

// Jinja's title filter: each word (after white space or one of - ( { [ <) capitalized.
std::string title(const std::string& s) {
  std::string out;
  bool start = true;
  for (const Char& c : split_chars(s)) {
    const bool boundary = c.cp != kInvalidCodePoint && (is_py_space(c.cp) || c.cp == '-' || c.cp == '(' ||
                                                        c.cp == '{' || c.cp == '[' || c.cp == '<');
    if (c.cp == kInvalidCodePoint) {
      out.append(s, c.offset, c.length);
    } else {
      append_utf8(&out, boundary ? c.cp : case_map(c.cp, start));
    }
    start = boundary;
  }
  return out;
}

// Python's str.strip / lstrip / rstrip: white space, or the characters of `chars`.
std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  std::vector<Char> cs = split_chars(s);
  std::vector<uint32_t> set;
  const bool custom = chars != nullptr && chars->is_string();
  if (custom) {
    for (const Char& c : split_chars(chars->text())) set.push_back(c.cp);
  }
  auto strippable = [&](const Char& c) {
    if (custom) return std::find(set.begin(), set.end(), c.cp) != set.end();
    return c.cp != kInvalidCodePoint && is_py_space(c.cp);
  };
  size_t b = 0, e = cs.size();
  if (left) {
    while (b < e && strippable(cs[b])) ++b;
  }
  if (right) {
    while (e > b && strippable(cs[e - 1])) --e;
  }
  if (b == e) return "";
  return s.substr(cs[b].offset, cs[e - 1].offset + cs[e - 1].length - cs[b].offset);
}

// Python's str.split(sep, maxsplit): on runs of white space without `sep`.
ValueList split(const std::string& s, const Value* sep, int64_t maxsplit) {
  ValueList out;
  if (sep == nullptr || sep->is_none()) {
    std::vector<Char> cs = split_chars(s);
    size_t i = 0;
    while (i < cs.size()) {
      while (i < cs.size() && is_py_space(cs[i].cp)) ++i;
      if (i == cs.size()) break;
      size_t j = i;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        size_t e = cs.size();
        while (e > i && is_py_space(cs[e - 1].cp)) --e;
        out.push_back(Value::string(s.substr(cs[i].offset, cs[e - 1].offset + cs[e - 1].length - cs[i].offset)));
        break;
      }
      while (j < cs.size() && !is_py_space(cs[j].cp)) ++j;
      out.push_back(Value::string(s.substr(cs[i].offset, cs[j - 1].offset + cs[j - 1].length - cs[i].offset)));
      i = j;
    }
    return out;
  }
  const std::string& d = sep->text();
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    const size_t at = s.find(d, start);
    if (at == std::string::npos) break;
    out.push_back(Value::string(s.substr(start, at - start)));
    start = at + d.size();
  }
  out.push_back(Value::string(s.substr(start)));
  return out;
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) {
    // Python inserts `to` around every character.
    std::string out;
    int64_t n = 0;
    for (const std::string& c : characters(s)) {
      if (count < 0 || n < count) out += to, ++n;
      out += c;
    }
    if (count < 0 || n < count) out += to;
    return out;
  }
  std::string out;
  size_t start = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    const size_t at = s.find(from, start);
    if (at == std::string::npos) break;
    out.append(s, start, at - start);
    out += to;
    start = at + from.size();
  }
  out.append(s, start, std::string::npos);
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

bool to_integer(const Value& v, int64_t* out) {
  if (v.is_bool() || v.is_int()) {
    *out = v.as_int();
    return true;
  }
  if (v.is_float() && isfinite(v.as_double()) && fabs(v.as_double()) < 9.2e18) {
    *out = static_cast<int64_t>(v.as_double());
    return true;
  }
  return false;
}

// Jinja's attribute lookup for filters (selectattr, map(attribute=...), join(attribute=...)): dotted paths of
// members, integer path parts index lists.
Value lookup_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    Value next = Value::undefined(part);
    if (cur.is_dict() || cur.is_namespace()) {
      if (const Value* m = cur.find(part)) next = *m;
    } else if (cur.is_list() && !part.empty() && part.find_first_not_of("0123456789") == std::string::npos) {
      const size_t i = static_cast<size_t>(atoll(part.c_str()));
      if (i < cur.items().size()) next = cur.items()[i];
    }
    cur = next;
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// ---- filters ----

bool filter_tojson(const Value& in, const Arguments& args, CallSite* site, Value* out) {
  // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
  JsonOptions o;
  if (const Value* a = args.get(0, "ensure_ascii")) o.ensure_ascii = a->truthy();
  if (const Value* i = args.get(1, "indent"); i != nullptr && !i->is_none()) {
    if (!i->is_int() || i->as_int() < 0 || i->as_int() > 64) return site->fail("tojson: indent must be 0 to 64");
    o.indent = static_cast<int>(i->as_int());
  }
  if (const Value* s = args.get(2, "separators"); s != nullptr && !s->is_none()) {
    if (!s->is_list() || s->items().size() != 2 || !s->items()[0].is_string() || !s->items()[1].is_string()) {
      return site->fail("tojson: separators must be a pair of strings");
    }
    o.has_item_separator = true;
    o.item_separator = s->items()[0].text();
    o.key_separator = s->items()[1].text();
  }
  if (const Value* k = args.get(3, "sort_keys")) o.sort_keys = k->truthy();
  std::string json, error;
  if (!to_json(in, o, &json, &error)) return site->fail("tojson: " + error);
  if (!site->spend(json.size())) return false;
  *out = Value::string(std::move(json));
  return true;
}

bool filter_join(const Value& in, const Arguments& args, CallSite* site, Value* out) {
  ValueList items;
  if (!iterate(in, site, &items)) return false;
  const Value* sep = args.get(0, "d");
  const Value* attribute = args.get(1, "attribute");
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i && sep != nullptr) s += to_str(*sep);
    s += to_str(attribute != nullptr ? lookup_path(items[i], to_str(*attribute)) : items[i]);
    if (!site->fits(s.size())) return false;
  }
  if (!site->spend(s.size())) return false;
  *out = Value::string(std::move(s));
  return true;
}

// select / reject / selectattr / rejectattr: keep the items for which the test (or truthiness) holds (select) or
// fails (reject), on the item itself or its attribute.
bool filter_select(const std::string& name, const Value& in, const Arguments& args, CallSite* site, Value* out) {
  const bool by_attribute = name == "selectattr" || name == "rejectattr";
  const bool keep_when = name == "select" || name == "selectattr";
  ValueList items;
  if (!iterate(in, site, &items)) return false;
  size_t next_arg = 0;
  std::string attribute;
  if (by_attribute) {
    if (args.positional.empty()) return site->fail(name + ": missing the attribute name");
    attribute = to_str(args.positional[next_arg++]);
  }
  std::string test;
  if (next_arg < args.positional.size()) test = to_str(args.positional[next_arg++]);
  Arguments test_args;
  test_args.positional.assign(args.positional.begin() + static_cast<ptrdiff_t>(next_arg), args.positional.end());
  ValueList kept;
  for (const Value& item : items) {
    if (!site->spend(1)) return false;
    const Value subject = by_attribute ? lookup_path(item, attribute) : item;
    bool holds = subject.truthy();
    if (!test.empty() && !call_test(test, subject, test_args, site, &holds)) return false;
    if (holds == keep_when) kept.push_back(item);
  }
  *out = Value::list(std::move(kept));
  return true;
}

bool filter_map(const Value& in, const Arguments& args, CallSite* site, Value* out) {
  ValueList items, mapped;
  if (!iterate(in, site, &items)) return false;
  for (const auto& k : args.keywords) {
    if (k.first != "attribute" && k.first != "default") return site->fail("map: unexpected argument '" + k.first + "'");
  }
  const Value* attribute = args.get(1000, "attribute");
  if (attribute != nullptr) {
    const Value* def = args.get(1000, "default");
    for (const Value& item : items) {
      Value v = lookup_path(item, to_str(*attribute));
      mapped.push_back(v.is_undefined() && def != nullptr ? *def : v);
    }
  } else {
    if (args.positional.empty()) return site->fail("map: needs a filter name or attribute=");
    const std::string filter = to_str(args.positional[0]);
    Arguments rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    for (const Value& item : items) {
      if (!site->spend(1)) return false;
      Value v;
      if (!call_filter(filter, item, rest, site, &v)) return false;
      mapped.push_back(std::move(v));
    }
  }
  *out = Value::list(std::move(mapped));
  return true;
}

// sort / unique / min / max compare strings without case unless case_sensitive=true.
Value sort_key(const Value& v, bool case_sensitive) {
  return v.is_string() && !case_sensitive ? Value::string(map_case(v.text(), false)) : v;
}

bool filter_sort(const std::string& name, const Value& in, const Arguments& args, CallSite* site, Value* out) {
  ValueList items;
  if (!iterate(in, site, &items)) return false;
  const bool sort = name == "sort";
  const Value* reverse = sort ? args.get(0, "reverse") : nullptr;
  const Value* cs = args.get(sort ? 1 : 0, "case_sensitive");
  const Value* attribute = args.get(sort ? 2 : 1, "attribute");
  const bool case_sensitive = cs != nullptr && cs->truthy();
  auto key = [&](const Value& v) {
    return sort_key(attribute != nullptr ? lookup_path(v, to_str(*attribute)) : v, case_sensitive);
  };
  if (!site->spend(items.size() * 8)) return false;
  bool ok = true;
  auto less = [&](const Value& a, const Value& b) {
    bool r = false;
    if (ok && !compare_values(key(a), key(b), "<", site, &r)) ok = false;
    return r;
  };
  if (name == "sort") {
    std::stable_sort(items.begin(), items.end(), less);
    if (reverse != nullptr && reverse->truthy()) std::reverse(items.begin(), items.end());
    if (!ok) return false;
    *out = Value::list(std::move(items));
    return true;
  }
  if (name == "unique") {
    ValueList kept;
    for (const Value& v : items) {
      bool seen = false;
      for (const Value& k : kept) seen = seen || values_equal(key(k), key(v));
      if (!seen) kept.push_back(v);
    }
    *out = Value::list(std::move(kept));
    return true;
  }
  if (items.empty()) {
    *out = Value::undefined("");
    return true;
  }
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    if (name == "min" ? less(items[i], items[best]) : less(items[best], items[i])) best = i;
  }
  if (!ok) return false;
  *out = items[best];
  return true;
}

bool filter_number(const std::string& name, const Value& in, const Arguments& args, Value* out) {
  if (name == "int") {
    const Value* def = args.get(0, "default");
    int64_t i;
    if (in.is_string()) {
      char* end = nullptr;
      const std::string t = strip(in.text(), nullptr, true, true);
      const double d = strtod(t.c_str(), &end);
      if (!t.empty() && *end == '\0' && isfinite(d) && fabs(d) < 9.2e18) {
        *out = Value::integer(static_cast<int64_t>(d));
        return true;
      }
    } else if (to_integer(in, &i)) {
      *out = Value::integer(i);
      return true;
    }
    *out = def != nullptr ? *def : Value::integer(0);
    return true;
  }
  const Value* def = args.get(0, "default");
  if (in.is_number()) {
    *out = Value::number(in.as_double());
  } else if (in.is_string()) {
    char* end = nullptr;
    const std::string t = strip(in.text(), nullptr, true, true);
    const double d = strtod(t.c_str(), &end);
    *out = !t.empty() && *end == '\0' ? Value::number(d) : (def != nullptr ? *def : Value::number(0));
  } else {
    *out = def != nullptr ? *def : Value::number(0);
  }
  return true;
}

}  // namespace

namespace {

const char* const kFilters[] = {"abs",    "capitalize", "count",      "d",       "default", "e",
                                "escape", "first",      "float",      "int",     "items",   "join",
                                "last",   "length",     "list",       "lower",   "map",     "max",
                                "min",    "reject",     "rejectattr", "replace", "reverse", "round",
                                "safe",   "select",     "selectattr", "sort",    "string",  "sum",
                                "title",  "tojson",     "trim",       "unique",  "upper",   "wordcount"};
const char* const kTests[] = {"boolean", "callable",  "defined", "divisibleby", "eq",          "equalto",  "escaped",
                              "even",    "false",     "float",   "ge",          "greaterthan", "gt",       "in",
                              "integer", "iterable",  "le",      "lessthan",    "lower",       "lt",       "mapping",
                              "ne",      "none",      "number",  "odd",         "sameas",      "sequence", "string",
                              "true",    "undefined", "upper"};

}  // namespace

bool is_known_filter(const std::string& name) {
  for (const char* f : kFilters) {
    if (name == f) return true;
  }
  return false;
}

bool is_known_test(const std::string& name) {
  for (const char* t : kTests) {
    if (name == t) return true;
  }
  return false;
}

bool call_filter(const std::string& name, const Value& in, const Arguments& args, CallSite* site, Value* out) {
  if (!site->spend(1)) return false;
  if (name == "tojson") return filter_tojson(in, args, site, out);
  if (name == "join") return filter_join(in, args, site, out);
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    return filter_select(name, in, args, site, out);
  }
  if (name == "map") return filter_map(in, args, site, out);
  if (name == "sort" || name == "unique" || name == "min" || name == "max")
    return filter_sort(name, in, args, site, out);
  if (name == "int" || name == "float") return filter_number(name, in, args, out);
  if (name == "default" || name == "d") {
    const Value* def = args.get(0, "default_value");
    const Value* boolean = args.get(1, "boolean");
    const bool use_default = in.is_undefined() || (boolean != nullptr && boolean->truthy() && !in.truthy());
    *out = use_default ? (def != nullptr ? *def : Value::string("")) : in;
    return true;
  }
  if (name == "length" || name == "count") {
    if (in.is_string()) {
      *out = Value::integer(static_cast<int64_t>(split_chars(in.text()).size()));
    } else if (in.is_list()) {
      *out = Value::integer(static_cast<int64_t>(in.items().size()));
    } else if (in.is_dict()) {
      *out = Value::integer(static_cast<int64_t>(in.members().size()));
    } else if (in.is_undefined()) {
      *out = Value::integer(0);
    } else {
      return site->fail(std::string("object of type '") + in.type_name() + "' has no len()");
    }
    return true;
  }
  if (name == "list" || name == "reverse" || name == "items" || name == "first" || name == "last") {
    if (name == "items") {
      if (in.is_undefined()) {
        *out = Value::list({});
        return true;
      }
      if (!in.is_dict()) return site->fail(std::string("items: expected a mapping, got ") + in.type_name());
      ValueList pairs;
      for (const auto& m : in.members()) pairs.push_back(Value::list({Value::string(m.first), m.second}, true));
      *out = Value::list(std::move(pairs));
      return true;
    }
    ValueList items;
    if (!iterate(in, site, &items)) return false;
    if (name == "first" || name == "last") {
      *out = items.empty() ? Value::undefined("") : (name == "first" ? items.front() : items.back());
      return true;
    }
    if (name == "reverse") {
      std::reverse(items.begin(), items.end());
      if (in.is_string()) {
        std::string s;
        for (const Value& c : items) s += c.text();
        *out = Value::string(std::move(s));
        return true;
      }
    }
    *out = Value::list(std::move(items));
    return true;
  }
  if (name == "abs") {
    if (!in.is_number()) return site->fail(std::string("bad operand type for abs(): '") + in.type_name() + "'");
    if (!in.is_float() && in.as_int() == INT64_MIN) return site->fail("abs: integer overflow");
    *out = in.is_float() ? Value::number(fabs(in.as_double())) : Value::integer(llabs(in.as_int()));
    return true;
  }
  if (name == "round") {
    if (!in.is_number()) return site->fail("round: expected a number");
    const Value* p = args.get(0, "precision");
    const double scale = pow(10.0, p != nullptr && p->is_int() ? static_cast<double>(p->as_int()) : 0.0);
    const double x = in.as_double() * scale;
    *out = Value::number((x < 0 ? -floor(-x + 0.5) : floor(x + 0.5)) / scale);
    return true;
  }
  if (name == "sum") {
    ValueList items;
    if (!iterate(in, site, &items)) return false;
    const Value* attribute = args.get(0, "attribute");
    const Value* start = args.get(1, "start");
    bool floating = start != nullptr && start->is_float();
    double fsum = start != nullptr ? start->as_double() : 0;
    int64_t isum = start != nullptr ? start->as_int() : 0;
    for (const Value& item : items) {
      const Value v = attribute != nullptr ? lookup_path(item, to_str(*attribute)) : item;
      if (!v.is_number()) return site->fail("sum: items must be numbers");
      floating = floating || v.is_float();
      fsum += v.as_double();
      if (__builtin_add_overflow(isum, v.as_int(), &isum)) return site->fail("sum: integer overflow");
    }
    *out = floating ? Value::number(fsum) : Value::integer(isum);
    return true;
  }
  // The string filters: their input as Python's str() gives it.
  const std::string s = to_str(in);
  if (name == "trim") {
    *out = Value::string(strip(s, args.get(0, "chars"), true, true));
  } else if (name == "upper" || name == "lower") {
    *out = Value::string(map_case(s, name == "upper"));
  } else if (name == "capitalize") {
    *out = Value::string(capitalize(s));
  } else if (name == "title") {
    *out = Value::string(title(s));
  } else if (name == "string" || name == "safe") {
    *out = in.is_string() ? in : Value::string(s);
  } else if (name == "e" || name == "escape") {
    *out = Value::string(html_escape(s));
  } else if (name == "replace") {
    const Value* from = args.get(0, "old");
    const Value* to = args.get(1, "new");
    const Value* count = args.get(2, "count");
    if (from == nullptr || to == nullptr) return site->fail("replace: needs the old and new strings");
    std::string r = replace(s, to_str(*from), to_str(*to), count != nullptr && count->is_int() ? count->as_int() : -1);
    if (!site->fits(r.size()) || !site->spend(r.size())) return false;
    *out = Value::string(std::move(r));
  } else if (name == "wordcount") {
    *out = Value::integer(static_cast<int64_t>(split(s, nullptr, -1).size()));
  } else {
    return site->fail("unknown filter '" + name + "'");
  }
  return true;
}

bool call_test(const std::string& name, const Value& in, const Arguments& args, CallSite* site, bool* out) {
  if (!site->spend(1)) return false;
  const Value* arg = args.get(0, "value");
  auto need_arg = [&]() { return arg != nullptr || site->fail("test '" + name + "' needs an argument"); };
  if (name == "defined") {
    *out = !in.is_undefined();
  } else if (name == "undefined") {
    *out = in.is_undefined();
  } else if (name == "none") {
    *out = in.is_none();
  } else if (name == "boolean") {
    *out = in.is_bool();
  } else if (name == "true" || name == "false") {
    *out = in.is_bool() && in.as_bool() == (name == "true");
  } else if (name == "integer") {
    *out = in.is_int();
  } else if (name == "float") {
    *out = in.is_float();
  } else if (name == "number") {
    *out = in.is_number();
  } else if (name == "string") {
    *out = in.is_string();
  } else if (name == "mapping") {
    *out = in.is_dict();
  } else if (name == "iterable") {
    *out = in.is_string() || in.is_list() || in.is_dict() || in.is_undefined();
  } else if (name == "sequence") {
    *out = in.is_string() || in.is_list() || in.is_dict();
  } else if (name == "callable") {
    *out = in.is_callable();
  } else if (name == "lower" || name == "upper") {
    // Python's islower / isupper: some cased character, none of the other case.
    const std::string s = to_str(in);
    bool cased = false, other = false;
    for (const Char& c : split_chars(s)) {
      if (!is_cased(c.cp)) continue;
      cased = true;
      const bool is_upper = case_map(c.cp, false) != c.cp;
      other = other || (name == "lower" ? is_upper : !is_upper);
    }
    *out = cased && !other;
  } else if (name == "odd" || name == "even") {
    if (!in.is_number() || in.is_float()) return site->fail("test '" + name + "' needs an integer");
    *out = (in.as_int() % 2 != 0) == (name == "odd");
  } else if (name == "divisibleby") {
    if (!need_arg()) return false;
    if (!in.is_int() || !arg->is_int() || arg->as_int() == 0) return site->fail("divisibleby needs integers, not 0");
    *out = in.as_int() % arg->as_int() == 0;
  } else if (name == "eq" || name == "equalto" || name == "ne") {
    if (!need_arg()) return false;
    *out = values_equal(in, *arg) == (name != "ne");
  } else if (name == "lt" || name == "lessthan" || name == "le" || name == "gt" || name == "greaterthan" ||
             name == "ge") {
    if (!need_arg()) return false;
    const char* op = name == "lt" || name == "lessthan" ? "<" : name == "le" ? "<=" : name == "ge" ? ">=" : ">";
    return compare_values(in, *arg, op, site, out);
  } else if (name == "in") {
    if (!need_arg()) return false;
    return contains(*arg, in, site, out);
  } else if (name == "sameas") {
    if (!need_arg()) return false;
    // Identity: what Python shares (None, True, False) compares by value; containers never are the same object.
    *out = (in.is_none() || in.is_bool()) && in.kind() == arg->kind() && values_equal(in, *arg);
  } else if (name == "escaped") {
    *out = false;
  } else {
    return site->fail("unknown test '" + name + "'");
  }
  return true;
}

bool is_global_function(const std::string& name) {
  return name == "range" || name == "namespace" || name == "dict" || name == "raise_exception" ||
         name == "strftime_now";
}

bool method_of(const Value& self, const std::string& name, CallSite* site, Value* out) {
  static const char* const kStringMethods[] = {"strip",   "lstrip", "rstrip",     "split",      "upper",
                                               "lower",   "title",  "capitalize", "startswith", "endswith",
                                               "replace", "find",   "count"};
  static const char* const kDictMethods[] = {"items", "keys", "values", "get"};
  if (self.is_string()) {
    for (const char* m : kStringMethods) {
      if (name == m) return *out = Value::callable("str." + name, &self), true;
    }
  } else if (self.is_dict()) {
    for (const char* m : kDictMethods) {
      if (name == m) return *out = Value::callable("dict." + name, &self), true;
    }
  } else if (self.is_list()) {
    static const char* const kMutating[] = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"};
    for (const char* m : kMutating) {
      if (name == m) return site->fail("access to attribute '" + name + "' of 'list' object is unsafe");
    }
  }
  *out = Value::undefined(name);
  return true;
}

namespace {

bool string_method(const std::string& method, const std::string& s, const Arguments& args, CallSite* site, Value* out) {
  const Value* a0 = args.get(0, "");
  if (method == "strip" || method == "lstrip" || method == "rstrip") {
    *out = Value::string(strip(s, a0, method != "rstrip", method != "lstrip"));
  } else if (method == "split") {
    const Value* sep = args.get(0, "sep");
    const Value* maxsplit = args.get(1, "maxsplit");
    if (sep != nullptr && sep->is_string() && sep->text().empty()) return site->fail("split: empty separator");
    *out = Value::list(split(s, sep, maxsplit != nullptr && maxsplit->is_int() ? maxsplit->as_int() : -1));
  } else if (method == "upper" || method == "lower") {
    *out = Value::string(map_case(s, method == "upper"));
  } else if (method == "title") {
    *out = Value::string(title(s));
  } else if (method == "capitalize") {
    *out = Value::string(capitalize(s));
  } else if (method == "startswith" || method == "endswith") {
    if (a0 == nullptr) return site->fail(method + " needs an argument");
    ValueList options = a0->is_list() ? a0->items() : ValueList{*a0};
    bool r = false;
    for (const Value& o : options) {
      if (!o.is_string()) return site->fail(method + ": expected a string");
      const std::string& p = o.text();
      r = r || (p.size() <= s.size() && (method == "startswith" ? s.compare(0, p.size(), p) == 0
                                                                : s.compare(s.size() - p.size(), p.size(), p) == 0));
    }
    *out = Value::boolean(r);
  } else if (method == "replace") {
    const Value* to = args.get(1, "");
    const Value* count = args.get(2, "count");
    if (a0 == nullptr || to == nullptr || !a0->is_string() || !to->is_string())
      return site->fail("replace needs two strings");
    std::string r = replace(s, a0->text(), to->text(), count != nullptr && count->is_int() ? count->as_int() : -1);
    if (!site->fits(r.size()) || !site->spend(r.size())) return false;
    *out = Value::string(std::move(r));
  } else if (method == "find" || method == "count") {
    if (a0 == nullptr || !a0->is_string()) return site->fail(method + " needs a string");
    if (method == "find") {
      const size_t at = s.find(a0->text());
      *out = Value::integer(at == std::string::npos ? -1 : static_cast<int64_t>(split_chars(s.substr(0, at)).size()));
    } else {
      int64_t n = 0;
      if (a0->text().empty()) {
        n = static_cast<int64_t>(split_chars(s).size()) + 1;
      } else {
        for (size_t at = s.find(a0->text()); at != std::string::npos; at = s.find(a0->text(), at + a0->text().size()))
          ++n;
      }
      *out = Value::integer(n);
    }
  } else {
    return site->fail("'str' object has no attribute '" + method + "'");
  }
  return true;
}

bool dict_method(const std::string& method, const Value& d, const Arguments& args, CallSite* site, Value* out) {
  ValueList items;
  if (method == "get") {
    const Value* key = args.get(0, "key");
    if (key == nullptr) return site->fail("get needs a key");
    const Value* def = args.get(1, "default");
    const Value* v = key->is_string() ? d.find(key->text()) : nullptr;
    *out = v != nullptr ? *v : (def != nullptr ? *def : Value::none());
    return true;
  }
  for (const auto& m : d.members()) {
    if (method == "items") {
      items.push_back(Value::list({Value::string(m.first), m.second}, true));
    } else if (method == "keys") {
      items.push_back(Value::string(m.first));
    } else {
      items.push_back(m.second);
    }
  }
  *out = Value::list(std::move(items));
  return true;
}

bool make_range(const Arguments& args, CallSite* site, Value* out) {
  int64_t bounds[3] = {0, 0, 1};
  const size_t n = args.positional.size();
  if (n < 1 || n > 3) return site->fail("range expects 1 to 3 integer arguments");
  for (size_t i = 0; i < n; ++i) {
    if (!args.positional[i].is_int() && !args.positional[i].is_bool()) return site->fail("range expects integers");
  }
  if (n == 1) {
    bounds[1] = args.positional[0].as_int();
  } else {
    bounds[0] = args.positional[0].as_int();
    bounds[1] = args.positional[1].as_int();
    if (n == 3) bounds[2] = args.positional[2].as_int();
  }
  if (bounds[2] == 0) return site->fail("range() arg 3 must not be zero");
  // Jinja's sandbox refuses ranges of more than 100,000 items. Counted in 128 bits: start and stop may be any
  // 64-bit integers.
  const __int128 span = static_cast<__int128>(bounds[1]) - bounds[0];
  const __int128 step = bounds[2];
  const __int128 count = (step > 0 ? span > 0 : span < 0) ? (span - (step > 0 ? 1 : -1)) / step + 1 : 0;
  if (count > 100000) return site->fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  ValueList items;
  for (__int128 k = 0; k < count; ++k) items.push_back(Value::integer(static_cast<int64_t>(bounds[0] + k * step)));
  if (!site->spend(items.size())) return false;
  *out = Value::list(std::move(items));
  return true;
}

}  // namespace

bool call_function(const Value& callable, const Arguments& args, CallSite* site, Value* out) {
  if (!site->spend(1)) return false;
  const std::string& name = callable.text();
  if (const Value* self = callable.self()) {
    if (name.rfind("str.", 0) == 0) return string_method(name.substr(4), self->text(), args, site, out);
    if (name.rfind("dict.", 0) == 0) return dict_method(name.substr(5), *self, args, site, out);
  }
  if (name == "raise_exception") {
    site->raised = true;
    return site->fail(args.positional.empty() ? std::string() : to_str(args.positional[0]));
  }
  if (name == "range") return make_range(args, site, out);
  if (name == "namespace" || name == "dict") {
    ValueDict members;
    if (!args.positional.empty()) {
      if (args.positional.size() > 1 || !args.positional[0].is_dict()) {
        return site->fail(name + "() takes a mapping and keyword arguments");
      }
      members = args.positional[0].members();
    }
    for (const auto& k : args.keywords) {
      if (name == "namespace" && !k.first.empty() && k.first[0] == '_') {
        return site->fail("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" +
                          k.first + "'. Please rename the attribute.");
      }
      auto it = std::find_if(members.begin(), members.end(), [&](const auto& m) { return m.first == k.first; });
      if (it != members.end()) {
        it->second = k.second;
      } else {
        members.push_back(k);
      }
    }
    *out = name == "dict" ? Value::dict(std::move(members)) : Value::make_namespace(std::move(members));
    return true;
  }
  if (name == "strftime_now") {
    if (args.positional.empty() || !args.positional[0].is_string()) return site->fail("strftime_now needs a format");
    const time_t now = time(nullptr);
    struct tm local;
    localtime_r(&now, &local);
    char buf[256];
    const size_t n = strftime(buf, sizeof(buf), args.positional[0].text().c_str(), &local);
    *out = Value::string(std::string(buf, n));
    return true;
  }
  return site->fail("'" + name + "' is not callable");
}

bool compare_values(const Value& a, const Value& b, const std::string& op, CallSite* site, bool* out) {
  int order = 0;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.as_double(), y = b.as_double();
      if (isnan(x) || isnan(y)) {
        *out = false;
        return true;
      }
      order = x < y ? -1 : x > y ? 1 : 0;
    } else {
      order = a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    }
  } else if (a.is_string() && b.is_string()) {
    // Byte order of UTF-8 is code point order, as Python compares.
    const int c = a.text().compare(b.text());
    order = c < 0 ? -1 : c > 0 ? 1 : 0;
  } else if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const ValueList &x = a.items(), &y = b.items();
    size_t i = 0;
    while (i < x.size() && i < y.size() && values_equal(x[i], y[i])) ++i;
    if (i < x.size() && i < y.size()) return compare_values(x[i], y[i], op, site, out);
    order = x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  } else {
    return site->fail("'" + op + "' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() +
                      "'");
  }
  *out = op == "<" ? order < 0 : op == "<=" ? order <= 0 : op == ">" ? order > 0 : order >= 0;
  return true;
}

bool contains(const Value& container, const Value& item, CallSite* site, bool* out) {
  if (container.is_string()) {
    if (!item.is_string()) {
      return site->fail(std::string("'in <string>' requires string as left operand, not ") + item.type_name());
    }
    *out = container.text().find(item.text()) != std::string::npos;
  } else if (container.is_list()) {
    *out = false;
    for (const Value& v : container.items()) *out = *out || values_equal(v, item);
  } else if (container.is_dict()) {
    *out = item.is_string() && container.find(item.text()) != nullptr;
  } else if (container.is_undefined()) {
    *out = false;
  } else {
    return site->fail(std::string("argument of type '") + container.type_name() + "' is not iterable");
  }
  return true;
}

bool iterate(const Value& v, CallSite* site, ValueList* out) {
  out->clear();
  if (v.is_list()) {
    *out = v.items();
  } else if (v.is_dict()) {
    for (const auto& m : v.members()) out->push_back(Value::string(m.first));
  } else if (v.is_string()) {
    for (std::string& c : characters(v.text())) out->push_back(Value::string(std::move(c)));
  } else if (!v.is_undefined()) {
    return site->fail(std::string("'") + v.type_name() + "' object is not iterable");
  }
  return site->spend(out->size());
}

}  // namespace chat
}  // namespace llm
}  // namespace ember
