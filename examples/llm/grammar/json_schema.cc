#include "examples/llm/grammar/json_schema.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include <algorithm>
#include <vector>

#include "examples/llm/tokenizer/json.h"

namespace ember {
namespace llm {
namespace {

// Shared rules every schema may use (compact JSON).
constexpr const char* kBaseRules = R"(json-char ::= [^"\\\x00-\x1F] | "\\" json-escape
json-escape ::= ["\\/bfnrt] | "u" [0-9a-fA-F]{4}
json-string ::= "\"" json-char* "\""
json-integer ::= "0" | "-"? [1-9] [0-9]*
json-number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)?
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" (json-string ":" json-value ("," json-string ":" json-value)*)? "}"
json-array ::= "[" (json-value ("," json-value)*)? "]"
)";

// Text of a JSON value as compact JSON.
void serialize(const JsonValue& v, std::string* out);

void serialize_string(const std::string& s, std::string* out) {
  *out += '"';
  for (unsigned char c : s) {
    if (c == '"') *out += "\\\"";
    else if (c == '\\') *out += "\\\\";
    else if (c == '\n') *out += "\\n";
    else if (c == '\r') *out += "\\r";
    else if (c == '\t') *out += "\\t";
    else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);
      *out += buf;
    } else {
      *out += static_cast<char>(c);
    }
  }
  *out += '"';
}

void serialize(const JsonValue& v, std::string* out) {
  switch (v.kind()) {
    case JsonValue::Kind::kNull: *out += "null"; return;
    case JsonValue::Kind::kBool: *out += v.as_bool() ? "true" : "false"; return;
    case JsonValue::Kind::kNumber: {
      char buf[40];
      if (v.is_integer()) {
        snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(v.as_int()));
      } else {
        snprintf(buf, sizeof(buf), "%.17g", v.as_double());
      }
      *out += buf;
      return;
    }
    case JsonValue::Kind::kString: serialize_string(v.as_string(), out); return;
    case JsonValue::Kind::kArray:
      *out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i > 0) *out += ',';
        serialize(v.items()[i], out);
      }
      *out += ']';
      return;
    case JsonValue::Kind::kObject:
      *out += '{';
      for (size_t i = 0; i < v.members().size(); ++i) {
        if (i > 0) *out += ',';
        serialize_string(v.members()[i].first, out);
        *out += ':';
        serialize(v.members()[i].second, out);
      }
      *out += '}';
      return;
  }
}

// `text` (UTF-8) as a GBNF string literal.
std::string literal(const std::string& text) {
  std::string s = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      s += '\\';
      s += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\x%02X", c);
      s += buf;
    } else {
      s += static_cast<char>(c);
    }
  }
  return s + "\"";
}

std::string escape_pointer(const std::string& key) {
  std::string s;
  for (char c : key) {
    if (c == '~') s += "~0";
    else if (c == '/') s += "~1";
    else s += c;
  }
  return s;
}

// Decimal patterns for integer ranges: each alternative a GBNF sequence.
// Every number of exactly `w` digits (leading zeros allowed) in [lo, hi].
void fixed_width(uint64_t lo, uint64_t hi, int w, const std::string& prefix, std::vector<std::string>* out) {
  if (w == 0) {
    out->push_back(prefix.empty() ? "\"\"" : prefix);
    return;
  }
  uint64_t p = 1;
  for (int i = 1; i < w; ++i) p *= 10;
  const uint64_t a = lo / p, b = hi / p, lr = lo % p, hr = hi % p;
  auto digit = [](uint64_t d) { return std::string("[") + static_cast<char>('0' + d) + "]"; };
  const std::string sep = prefix.empty() ? "" : prefix + " ";
  if (a == b) {
    fixed_width(lr, hr, w - 1, sep + digit(a), out);
    return;
  }
  // Whole sub-ranges collapse to a digit class repeated.
  auto full = [&](uint64_t d_lo, uint64_t d_hi) {
    std::string cls = std::string("[") + static_cast<char>('0' + d_lo) + "-" + static_cast<char>('0' + d_hi) + "]";
    std::string s = sep + cls;
    if (w > 1) s += " [0-9]{" + std::to_string(w - 1) + "}";
    out->push_back(s);
  };
  uint64_t first = a, last = b;
  if (lr != 0) {
    fixed_width(lr, p - 1, w - 1, sep + digit(a), out);
    first = a + 1;
  }
  if (hr != p - 1) {
    last = b - 1;
  }
  if (first <= last) full(first, last);
  if (hr != p - 1) fixed_width(0, hr, w - 1, sep + digit(b), out);
}

int digits_of(uint64_t v) {
  int d = 1;
  while (v >= 10) v /= 10, ++d;
  return d;
}

// Non-negative integers in [lo, hi] (hi = UINT64_MAX: no upper bound), without leading zeros.
void nonneg_range(uint64_t lo, uint64_t hi, std::vector<std::string>* out) {
  const bool unbounded = hi == UINT64_MAX;
  const int dl = digits_of(lo);
  const int dh = unbounded ? 19 : digits_of(hi);
  for (int d = dl; d <= dh; ++d) {
    uint64_t low = 1, high = 9;
    for (int i = 1; i < d; ++i) low *= 10, high = high * 10 + 9;
    if (d == 1) low = 0;
    const uint64_t l = std::max(lo, low), h = unbounded ? high : std::min(hi, high);
    if (l <= h) fixed_width(l, h, d, "", out);
  }
  // Past 19 digits a bound of int64 cannot be met; with no upper bound, longer numbers are allowed as well.
  if (unbounded) out->push_back("[1-9] [0-9]{19} [0-9]*");
}

class SchemaCompiler {
 public:
  explicit SchemaCompiler(std::string* error) : error_(error) {}

  bool compile(const JsonValue& schema, std::string* gbnf) {
    std::string root;
    if (!value(schema, "", &root)) return false;
    *gbnf = "root ::= " + root + "\n" + rules_ + kBaseRules;
    return true;
  }

 private:
  bool fail(const std::string& pointer, const std::string& why) {
    *error_ = (pointer.empty() ? "/" : pointer) + ": " + why;
    return false;
  }

  // A new rule holding `body`; its name.
  std::string add_rule(const std::string& pointer, const std::string& body) {
    const std::string name = "s" + std::to_string(++count_);
    rules_ += "# " + (pointer.empty() ? std::string("/") : pointer) + "\n" + name + " ::= " + body + "\n";
    return name;
  }

  static bool annotation(const std::string& k) {
    return k == "title" || k == "description" || k == "default" || k == "examples" || k == "$schema" || k == "$id" ||
           k == "$comment";
  }

  // The GBNF expression (a rule name or a short sequence) for one schema.
  bool value(const JsonValue& s, const std::string& ptr, std::string* expr) {
    if (++depth_ > kMaxSchemaNesting) {
      return fail(ptr, "schemas nest more than " + std::to_string(kMaxSchemaNesting) + " deep (kMaxSchemaNesting)");
    }
    const bool ok = value_inner(s, ptr, expr);
    --depth_;
    return ok;
  }

  bool value_inner(const JsonValue& s, const std::string& ptr, std::string* expr) {
    if (s.is_bool()) {
      if (!s.as_bool()) return fail(ptr, "the schema false matches nothing");
      *expr = "json-value";
      return true;
    }
    if (!s.is_object())
      return fail(ptr, std::string("a schema must be an object or a boolean, not a ") + s.kind_name());
    for (const auto& m : s.members()) {
      static const char* kKnown[] = {"type",     "properties", "required",  "additionalProperties",
                                     "items",    "enum",       "const",     "minItems",
                                     "maxItems", "minLength",  "maxLength", "minimum",
                                     "maximum",  "anyOf"};
      bool known = annotation(m.first);
      for (const char* k : kKnown) known = known || m.first == k;
      if (!known) return fail(ptr + "/" + escape_pointer(m.first), "keyword '" + m.first + "' is not supported");
    }
    if (const JsonValue* c = s.find("const")) {
      std::string text;
      serialize(*c, &text);
      *expr = literal(text);
      return true;
    }
    if (const JsonValue* e = s.find("enum")) {
      if (!e->is_array() || e->items().empty()) return fail(ptr + "/enum", "enum must be a non-empty array");
      std::string body;
      for (size_t i = 0; i < e->items().size(); ++i) {
        std::string text;
        serialize(e->items()[i], &text);
        body += (i ? " | " : "") + literal(text);
      }
      *expr = add_rule(ptr + "/enum", body);
      return true;
    }
    if (const JsonValue* any = s.find("anyOf")) {
      if (!any->is_array() || any->items().empty()) return fail(ptr + "/anyOf", "anyOf must be a non-empty array");
      std::string body;
      for (size_t i = 0; i < any->items().size(); ++i) {
        std::string alt;
        if (!value(any->items()[i], ptr + "/anyOf/" + std::to_string(i), &alt)) return false;
        body += (i ? " | " : "") + alt;
      }
      *expr = add_rule(ptr + "/anyOf", body);
      return true;
    }
    const JsonValue* type = s.find("type");
    std::vector<std::string> types;
    if (type == nullptr) {
      // No type: what the other keywords imply, else any value.
      if (s.find("properties") || s.find("required") || s.find("additionalProperties")) types.push_back("object");
      else if (s.find("items") || s.find("minItems") || s.find("maxItems")) types.push_back("array");
      else if (s.find("minLength") || s.find("maxLength")) types.push_back("string");
      else if (s.find("minimum") || s.find("maximum")) types.push_back("number");
      else {
        *expr = "json-value";
        return true;
      }
    } else if (type->is_string()) {
      types.push_back(type->as_string());
    } else if (type->is_array() && !type->items().empty()) {
      for (const JsonValue& t : type->items()) {
        if (!t.is_string()) return fail(ptr + "/type", "type names must be strings");
        types.push_back(t.as_string());
      }
    } else {
      return fail(ptr + "/type", "type must be a name or a non-empty array of names");
    }
    std::string body;
    for (size_t i = 0; i < types.size(); ++i) {
      std::string alt;
      if (!typed(s, types[i], ptr, &alt)) return false;
      body += (i ? " | " : "") + alt;
    }
    *expr = types.size() == 1 ? body : add_rule(ptr + "/type", body);
    return true;
  }

  bool count(const JsonValue& s, const char* key, const std::string& ptr, int64_t* out) {
    const JsonValue* v = s.find(key);
    if (v == nullptr) return true;
    if (!v->is_integer() || v->as_int() < 0) return fail(ptr + "/" + key, "must be a non-negative integer");
    if (v->as_int() > kMaxSchemaCount) {
      return fail(ptr + "/" + key, std::to_string(v->as_int()) + " is above the limit of " +
                                       std::to_string(kMaxSchemaCount) + " (kMaxSchemaCount)");
    }
    *out = v->as_int();
    return true;
  }

  bool typed(const JsonValue& s, const std::string& t, const std::string& ptr, std::string* expr) {
    if (t == "null") return *expr = "json-null", true;
    if (t == "boolean") return *expr = "json-boolean", true;
    if (t == "string") return string_rule(s, ptr, expr);
    if (t == "integer" || t == "number") return number_rule(s, t == "integer", ptr, expr);
    if (t == "array") return array_rule(s, ptr, expr);
    if (t == "object") return object_rule(s, ptr, expr);
    return fail(ptr + "/type", "unknown type '" + t + "'");
  }

  bool string_rule(const JsonValue& s, const std::string& ptr, std::string* expr) {
    int64_t lo = 0, hi = -1;
    if (!count(s, "minLength", ptr, &lo) || !count(s, "maxLength", ptr, &hi)) return false;
    if (hi >= 0 && hi < lo) return fail(ptr, "maxLength is below minLength");
    if (lo == 0 && hi < 0) return *expr = "json-string", true;
    const std::string rep =
        hi < 0 ? "{" + std::to_string(lo) + ",}" : "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
    *expr = add_rule(ptr, "\"\\\"\" json-char" + rep + " \"\\\"\"");
    return true;
  }

  bool bound(const JsonValue& s, const char* key, const std::string& ptr, bool* has, double* v) {
    const JsonValue* b = s.find(key);
    *has = b != nullptr;
    if (b == nullptr) return true;
    if (!b->is_number() || !isfinite(b->as_double())) return fail(ptr + "/" + key, "must be a number");
    *v = b->as_double();
    return true;
  }

  // Integers in [lo, hi] (either side open) as alternatives.
  void integer_range(bool has_lo, int64_t lo, bool has_hi, int64_t hi, std::vector<std::string>* alts) {
    // Negative part: "-" then magnitudes in [max(1, -hi), -lo].
    if (!has_lo || lo < 0) {
      const uint64_t mag_hi = has_lo ? static_cast<uint64_t>(-(lo + 1)) + 1 : UINT64_MAX;
      const uint64_t mag_lo = !has_hi || hi >= 0 ? 1 : static_cast<uint64_t>(-(hi + 1)) + 1;
      if (mag_lo <= mag_hi) {
        std::vector<std::string> mags;
        nonneg_range(mag_lo, mag_hi, &mags);
        for (const std::string& m : mags) alts->push_back("\"-\" " + m);
      }
    }
    if (!has_hi || hi >= 0) {
      const uint64_t l = has_lo && lo > 0 ? static_cast<uint64_t>(lo) : 0;
      const uint64_t h = has_hi ? static_cast<uint64_t>(hi) : UINT64_MAX;
      if (l <= h) nonneg_range(l, h, alts);
    }
  }

  bool number_rule(const JsonValue& s, bool integer, const std::string& ptr, std::string* expr) {
    bool has_lo, has_hi;
    double lo = 0, hi = 0;
    if (!bound(s, "minimum", ptr, &has_lo, &lo) || !bound(s, "maximum", ptr, &has_hi, &hi)) return false;
    if (!has_lo && !has_hi) return *expr = integer ? "json-integer" : "json-number", true;
    if (has_lo && has_hi && hi < lo) return fail(ptr, "maximum is below minimum");
    const double limit = 9e18;
    if ((has_lo && fabs(lo) > limit) || (has_hi && fabs(hi) > limit)) {
      return fail(ptr, "minimum/maximum beyond +-9e18 are not supported");
    }
    if (!integer && ((has_lo && lo != floor(lo)) || (has_hi && hi != floor(hi)))) {
      return fail(ptr, "minimum/maximum of a number must be integral here (fractional bounds are not supported)");
    }
    const int64_t ilo = has_lo ? static_cast<int64_t>(ceil(lo)) : 0;
    const int64_t ihi = has_hi ? static_cast<int64_t>(floor(hi)) : 0;
    if (has_lo && has_hi && ihi < ilo) return fail(ptr, "no integer lies between minimum and maximum");
    std::vector<std::string> alts;
    integer_range(has_lo, ilo, has_hi, ihi, &alts);
    if (!integer) {
      // x.f with integer part I >= 0 lies in [I, I + 1): inside when I >= lo and I + 1 <= hi. -K.f (K >= 1) lies
      // in (-K - 1, -K]: inside when -K - 1 >= lo and -K <= hi. (-0.f is left out.)
      std::vector<std::string> frac, neg;
      integer_range(true, std::max<int64_t>(ilo, 0), has_hi, ihi - 1, &frac);
      const int64_t k_lo = has_hi ? std::max<int64_t>(1, -ihi) : 1;
      integer_range(true, k_lo, has_lo, -ilo - 1, &neg);
      for (const std::string& f : frac) alts.push_back(f + " \".\" [0-9]+");
      for (const std::string& k : neg) alts.push_back("\"-\" " + k + " \".\" [0-9]+");
    }
    if (alts.empty()) return fail(ptr, "no value lies between minimum and maximum");
    std::string body;
    for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + ("(" + alts[i] + ")");
    *expr = add_rule(ptr, body);
    return true;
  }

  bool array_rule(const JsonValue& s, const std::string& ptr, std::string* expr) {
    int64_t lo = 0, hi = -1;
    if (!count(s, "minItems", ptr, &lo) || !count(s, "maxItems", ptr, &hi)) return false;
    if (hi >= 0 && hi < lo) return fail(ptr, "maxItems is below minItems");
    std::string item = "json-value";
    if (const JsonValue* items = s.find("items")) {
      if (!value(*items, ptr + "/items", &item)) return false;
    }
    if (hi == 0) return *expr = add_rule(ptr, "\"[]\""), true;
    // item ("," item){lo - 1, hi - 1}, optional when lo is 0.
    const std::string more_lo = std::to_string(lo > 0 ? lo - 1 : 0);
    const std::string more = hi < 0 ? "{" + more_lo + ",}" : "{" + more_lo + "," + std::to_string(hi - 1) + "}";
    std::string list = item + " (\",\" " + item + ")" + more;
    *expr = add_rule(ptr, "\"[\" " + (lo == 0 ? "(" + list + ")?" : list) + " \"]\"");
    return true;
  }

  bool object_rule(const JsonValue& s, const std::string& ptr, std::string* expr) {
    struct Prop {
      std::string key;  // GBNF literal of "name":
      std::string value;
      bool required;
    };
    std::vector<Prop> props;
    std::vector<std::string> required;
    if (const JsonValue* r = s.find("required")) {
      if (!r->is_array()) return fail(ptr + "/required", "required must be an array of names");
      for (const JsonValue& n : r->items()) {
        if (!n.is_string()) return fail(ptr + "/required", "required must be an array of names");
        required.push_back(n.as_string());
      }
    }
    std::vector<std::string> listed;
    if (const JsonValue* p = s.find("properties")) {
      if (!p->is_object()) return fail(ptr + "/properties", "properties must be an object");
      for (const auto& m : p->members()) {
        if (std::find(listed.begin(), listed.end(), m.first) != listed.end()) {
          return fail(ptr + "/properties", "property '" + m.first + "' is listed twice");
        }
        listed.push_back(m.first);
        Prop prop;
        std::string name;
        serialize_string(m.first, &name);
        prop.key = literal(name + ":");
        if (!value(m.second, ptr + "/properties/" + escape_pointer(m.first), &prop.value)) return false;
        prop.required = std::find(required.begin(), required.end(), m.first) != required.end();
        props.push_back(std::move(prop));
      }
    }
    // Additional properties: none unless the schema allows them.
    std::string extra;
    if (const JsonValue* a = s.find("additionalProperties")) {
      if (a->is_bool()) {
        if (a->as_bool()) extra = "json-value";
      } else if (!value(*a, ptr + "/additionalProperties", &extra)) {
        return false;
      }
    }
    for (const std::string& r : required) {
      if (std::find(listed.begin(), listed.end(), r) != listed.end()) continue;
      if (extra.empty()) {
        return fail(ptr + "/required", "'" + r + "' is required but not a property, and no others are allowed");
      }
      std::string name;
      serialize_string(r, &name);
      props.push_back(Prop{literal(name + ":"), extra, true});
    }
    // rest_i: the properties from i on, after at least one was written (each with its comma);
    // first_i: the same when none was written yet.
    const size_t n = props.size();
    std::string extra_pair = extra.empty() ? "" : "json-string \":\" " + extra;
    std::vector<std::string> rest(n + 1), first(n + 1);
    rest[n] = extra.empty() ? "\"\"" : add_rule(ptr + "/additionalProperties", "(\",\" " + extra_pair + ")*");
    first[n] =
        extra.empty() ? "\"\"" : add_rule(ptr + "/additionalProperties", "(" + extra_pair + " " + rest[n] + ")?");
    for (size_t i = n; i-- > 0;) {
      const Prop& p = props[i];
      const std::string with = p.key + " " + p.value;
      std::string r = "\",\" " + with + " " + rest[i + 1];
      if (!p.required) r += " | " + rest[i + 1];
      rest[i] = add_rule(ptr + "/properties", r);
      std::string f = with + " " + rest[i + 1];
      if (!p.required) f += " | " + first[i + 1];
      first[i] = add_rule(ptr + "/properties", f);
    }
    *expr = add_rule(ptr, "\"{\" " + first[0] + " \"}\"");
    return true;
  }

  std::string* error_;
  std::string rules_;
  int count_ = 0;
  int depth_ = 0;
};

}  // namespace

std::string schema_rule_pointer(std::string_view gbnf, std::string_view rule) {
  // Helper rules the GBNF parser makes are named "<rule>~<n>": the schema's rule is the part before.
  const std::string name(rule.substr(0, rule.find('~')));
  const std::string definition = "\n" + name + " ::= ";
  const size_t at = gbnf.find(definition);
  if (at == std::string_view::npos) return "";
  // add_rule writes "# <pointer>" on the line before each rule.
  const size_t comment = gbnf.rfind("\n# ", at == 0 ? 0 : at - 1);
  if (comment == std::string_view::npos) return "";
  return std::string(gbnf.substr(comment + 3, at - comment - 3));
}

bool json_schema_to_gbnf(std::string_view schema, std::string* gbnf, std::string* error) {
  std::string why;
  Result<JsonValue> doc = parse_json(schema, &why);
  if (!doc.ok()) {
    *error = "the schema is not valid JSON: " + why;
    return false;
  }
  SchemaCompiler c(error);
  return c.compile(*doc, gbnf);
}

}  // namespace llm
}  // namespace ember
