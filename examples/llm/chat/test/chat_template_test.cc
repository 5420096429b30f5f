// The chat template engine on its own: Jinja semantics the model families' templates rely on (whitespace
// control, scoping, filters, tests, slicing), the plain default format, tokenizer_config.json reading, and
// hostile templates: every refusal names its line and column, and no template crashes, recurses without bound,
// loops forever or grows its output without bound. Parity with transformers on the real templates:
// tests/llm/test_chat_template.py.
#include "examples/llm/chat/chat_template.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace llm {
namespace {

const std::vector<ChatMessage> kChat = {{"system", "Be brief."}, {"user", "Hi!"}, {"assistant", "Hello."}};

std::string render(const std::string& source, const std::vector<ChatMessage>& messages = kChat,
                   bool add_generation_prompt = false) {
  ChatTemplateError e;
  auto t = ChatTemplate::parse(source, &e);
  EXPECT_TRUE(t.ok()) << e.describe();
  if (!t.ok()) return "<parse error>";
  t->set_variable("bos_token", "<s>");
  auto out = t->render(messages, add_generation_prompt, &e);
  EXPECT_TRUE(out.ok()) << e.describe();
  return out.ok() ? out.get() : "<render error>";
}

ChatTemplateError failure(const std::string& source, const std::vector<ChatMessage>& messages = kChat) {
  ChatTemplateError e;
  auto t = ChatTemplate::parse(source, &e);
  if (!t.ok()) return e;
  chat::RenderLimits limits;
  limits.max_output_bytes = 1 << 16;
  limits.max_steps = 200000;
  t->set_limits(limits);
  auto out = t->render(messages, false, &e);
  EXPECT_FALSE(out.ok()) << "rendered: " << out.get();
  return e;
}

TEST(ChatTemplate, WhitespaceControlAsTransformersEnvironment) {
  // trim_blocks: a block tag's newline goes; lstrip_blocks: indentation before a block tag goes; `-` strips all
  // white space on its side; output tags keep what surrounds them.
  EXPECT_EQ(render("{% for m in messages %}\n  {{ m.role }}\n{% endfor %}"), "  system\n  user\n  assistant\n");
  EXPECT_EQ(render("{%- for m in messages -%}\n  {{- m.role }} {% endfor %}"), "system user assistant ");
  EXPECT_EQ(render("a\n    {%+ if true %}x{% endif %}"), "a\n    x");
  EXPECT_EQ(render("{# comment #}\nx {#- c -#}  y"), "xy");
  // Jinja drops one final newline of the template and reads \r\n as \n.
  EXPECT_EQ(render("x\r\ny\n"), "x\ny");
}

TEST(ChatTemplate, ExpressionsFiltersAndTests) {
  EXPECT_EQ(render("{{ messages[1:] | length }} {{ messages[-1]['content'] }} {{ messages[::2] | map(attribute='role') "
                   "| join(',') }}"),
            "2 Hello. system,assistant");
  EXPECT_EQ(render("{{ '  x ' | trim }}|{{ 'ab' ~ 1 ~ none }}|{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 1 / 2 }}"),
            "x|ab1None|3 -4 -2 0.5");
  EXPECT_EQ(render("{{ x is defined }} {{ none is none }} {{ 'a' is string }} {{ 3 is odd }} {{ {} is mapping }}"),
            "False True True True True");
  EXPECT_EQ(render("{{ {'a': [1, 2.5, 'é\"'], 'b': none} | tojson }}|{{ [1, {'k': true}] | tojson(indent=2) }}"),
            "{\"a\": [1, 2.5, \"é\\\"\"], \"b\": null}|[\n  1,\n  {\n    \"k\": true\n  }\n]");
  EXPECT_EQ(render(
                "{{ 'x' if false }}|{{ 'a' if 1 > 2 else 'b' }}|{{ not 1 == 2 }}|{{ 1 < 2 < 3 }}|{{ 'b' in 'abc' }}"),
            "|b|True|True|True");
  EXPECT_EQ(render("{{ [1, 2] + [3] }} {{ (1,) }} {{ {'a': 'b'} }} {{ 'ab' * 2 }} {{ 1e20 }} {{ 0.1 + 0.2 }}"),
            "[1, 2, 3] (1,) {'a': 'b'} abab 1e+20 0.30000000000000004");
  EXPECT_EQ(render("{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }}"),
            "['Hi!']");
  EXPECT_EQ(
      render("{% for k, v in {'a': 1, 'b': 2} | items %}{{ k }}={{ v }}{% if not loop.last %},{% endif %}{% endfor %}"),
      "a=1,b=2");
  EXPECT_EQ(render("{{ 'Hello World'.split() }} {{ 'a-b'.replace('-', '+') }} {{ 'abc'.startswith('ab') }} "
                   "{{ 'ÉTÉ' | lower }} {{ 'été'[1] }} {{ 'été'[::-1] }}"),
            "['Hello', 'World'] a+b True été t été");
}

TEST(ChatTemplate, ScopesAndNamespaces) {
  // A `set` in a loop body lives for that iteration; a namespace carries values out; `if` opens no scope.
  EXPECT_EQ(render("{% set x = 0 %}{% for m in messages %}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}"), "1110");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + loop.index %}"
                   "{% endfor %}{{ ns.n }}"),
            "6");
  EXPECT_EQ(render("{% if true %}{% set y = 'in' %}{% endif %}{{ y }}"), "in");
  EXPECT_EQ(render("{% for i in range(10) %}{% if i == 3 %}{% break %}{% endif %}{% if i is odd %}{% continue %}"
                   "{% endif %}{{ i }}{% else %}empty{% endfor %}{% for i in [] %}x{% else %}empty{% endfor %}"),
            "02empty");
  EXPECT_EQ(render("{% macro tag(name, close=false) %}<{{ '/' if close }}{{ name }}>{% endmacro %}"
                   "{{ tag('a') }}{{ tag('a', close=true) }}"),
            "<a></a>");
  EXPECT_EQ(render("{% set block %}[{{ messages | length }}]{% endset %}{{ block }}{{ bos_token }}"), "[3]<s>");
}

TEST(ChatTemplate, RaiseExceptionIsAnErrorWithTheTemplatesMessage) {
  ChatTemplateError e = failure(
      "line one\n{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}");
  EXPECT_TRUE(e.raised);
  EXPECT_EQ(e.message, "System role not supported");
  EXPECT_EQ(e.line, 2u);
}

TEST(ChatTemplate, PlainDefaultFormat) {
  EXPECT_EQ(render(kPlainChatTemplate, kChat, true),
            "System: Be brief.\n\nUser: Hi!\n\nAssistant: Hello.\n\nAssistant:");
  auto t = ChatTemplate::from_tokenizer_config(R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>"})");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->is_plain());
  EXPECT_EQ(t->render({{"user", " Hi "}}, false).get(), "User: Hi\n\n");
}

TEST(ChatTemplate, TokenizerConfigSpecialTokensAndNamedTemplates) {
  auto t = ChatTemplate::from_tokenizer_config(
      R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "{{ bos_token }}|{{ eos_token }}|{{ pad_token is defined }}"}],
          "bos_token": {"content": "<|begin|>", "lstrip": false}, "eos_token": "<|end|>"})");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->render({}, false).get(), "<|begin|>|<|end|>|False");
}

struct Bad {
  const char* source;
  const char* message;  // describe()
};

class HostileTemplates : public ::testing::TestWithParam<Bad> {};

TEST_P(HostileTemplates, FailWithAPlace) {
  testing::clear_log();
  ChatTemplateError e = failure(GetParam().source);
  EXPECT_FALSE(e.raised);
  EXPECT_EQ(e.describe(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Refused, HostileTemplates,
    ::testing::Values(
        Bad{"{{ x ", "line 1, column 1: missing end of tag '}}'"},
        Bad{"a\n{% if x %}b",
            "line 2, column 12: unexpected end of template: the block opened at line 2 needs 'elif' or 'else' or "
            "'endif'"},
        Bad{"{% for %}", "line 1, column 8: expected a variable name, found '%}'"},
        Bad{"{{ x | nosuch }}", "line 1, column 8: unknown filter 'nosuch'"},
        Bad{"{% include 'x' %}", "line 1, column 4: unknown or unsupported tag 'include'"},
        Bad{"{{ (1 ] }}", "line 1, column 7: unexpected ']', expected ')'"},
        Bad{"{{ 'abc }}", "line 1, column 4: unterminated string literal"},
        Bad{"{# never closed", "line 1, column 1: missing end of comment tag '#}'"},
        Bad{"{% endfor %}", "line 1, column 4: unexpected 'endfor': no open block takes it here"},
        Bad{"\n  {{ messages.nope.deeper }}", "line 2, column 19: 'list object' has no attribute 'nope'"},
        Bad{"{{ undefined_name + 1 }}", "line 1, column 19: 'undefined_name' is undefined"},
        Bad{"{{ 1 // 0 }}", "line 1, column 6: integer division or modulo by zero"},
        Bad{"{{ messages.append(1) }}", "line 1, column 12: access to attribute 'append' of 'list' object is unsafe"},
        Bad{"{{ range(1000000) }}",
            "line 1, column 9: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000)."},
        // Unbounded work: nested loops over the largest allowed ranges run out of steps, not forever.
        Bad{"{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}{% endfor %}{% endfor %}"
            "{% endfor %}",
            "line 1, column 70: the template exceeded its work limit of 200000 steps (loop iterations, expressions "
            "and bytes of strings built)"},
        // Unbounded growth: doubling a string stops at the output limit.
        Bad{"{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
            "line 1, column 76: a value of 131072 bytes or items exceeds the output limit of 65536 bytes"},
        Bad{"{% for i in range(10000) %}{{ 'xxxxxxxxxxxxxxxx' }}{% endfor %}",
            "line 1, column 28: the rendering exceeded its output limit of 65536 bytes"},
        Bad{"{{ 'x' * 100000000000 }}", "line 1, column 8: the repetition makes more than 65536 bytes"},
        Bad{"{% set ns = namespace() %}{% set ns.me = [ns] %}",
            "line 1, column 30: a namespace cannot hold a namespace"},
        Bad{"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
            "line 1, column 21: macros nest deeper than 20 calls"}));

TEST(ChatTemplate, DeepNestingIsRefusedNotRecursedInto) {
  std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  ChatTemplateError e = failure(deep);
  EXPECT_NE(e.message.find("more than 64 nested brackets"), std::string::npos) << e.describe();
  std::string nots = "{{ ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  e = failure(nots + "1 }}");
  EXPECT_NE(e.message.find("more than 100 nested"), std::string::npos) << e.describe();
  std::string ifs;
  for (int i = 0; i < 500; ++i) ifs += "{% if true %}";
  e = failure(ifs);
  EXPECT_NE(e.message.find("more than 100 nested"), std::string::npos) << e.describe();
}

TEST(ChatTemplate, ArbitraryBytesNeverCrash) {
  // Every prefix of a real template, and byte soup: parse or refuse, never crash (run under the sanitizers by
  // --config=asan like every test).
  const std::string real =
      "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
      "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
      "{{ '[INST] ' + message['content'] | trim + ' [/INST]' if message['role'] == 'user' else message['content'] }}"
      "{% endfor %}";
  for (size_t n = 0; n <= real.size(); ++n) {
    ChatTemplateError e;
    auto t = ChatTemplate::parse(real.substr(0, n), &e);
    if (t.ok()) (void)t->render(kChat, true, &e);
  }
  uint32_t state = 12345;
  const char alphabet[] = "{}%#-+()[]'\"|.,:=<>~*/ \nabcifendforsetin0123";
  for (int round = 0; round < 2000; ++round) {
    std::string s;
    for (int i = 0; i < 40; ++i) {
      state = state * 1664525u + 1013904223u;
      s += alphabet[(state >> 16) % (sizeof(alphabet) - 1)];
    }
    ChatTemplateError e;
    auto t = ChatTemplate::parse(s, &e);
    if (t.ok()) (void)t->render(kChat, true, &e);
  }
}

}  // namespace
}  // namespace llm
}  // namespace ember
