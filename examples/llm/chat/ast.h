// The parsed template: statements (text, output, if, for, set, ...) holding expressions. One node type each, with
// a kind and the children that kind uses, every node knowing where it came from for error messages.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "examples/llm/chat/lexer.h"
#include "examples/llm/chat/value.h"

namespace ember {
namespace llm {
namespace chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // value
    kName,       // name
    kAttribute,  // args[0].name
    kItem,       // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]] (null children: omitted)
    kCall,       // args[0](args[1..], kwargs)
    kFilter,     // args[0] | name(args[1..], kwargs)
    kTest,       // args[0] is [not] name(args[1..])
    kUnary,      // name ("-", "+", "not") args[0]
    kBinary,     // args[0] name args[1]: + - * / // % ** ~ and or
    kCompare,    // args[0] ops[0] args[1] ops[1] args[2] ... (== != < <= > >= in notin)
    kCondition,  // args[0] if args[1] else args[2] (args[2] null: undefined)
    kList,       // [args...]
    kTuple,      // (args...)
    kDict,       // {args[0]: args[1], args[2]: args[3], ...}
  };
  Kind kind;
  Location where;
  std::string name;
  Value value;
  bool negated = false;  // kTest: `is not`
  std::vector<ExprPtr> args;
  std::vector<std::string> ops;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // conditions[i] -> bodies[i]; bodies[conditions.size()], if present, is the else branch
    kFor,       // for targets in expr [if filter]: bodies[0] [else bodies[1]]
    kSet,       // set targets[0] (or targets[0].attribute) = expr; several targets unpack a sequence
    kSetBlock,  // set targets[0] %} bodies[0] {% endset
    kBreak,
    kContinue,
    kMacro,     // macro targets[0](params) bodies[0]: params are targets[1..] with defaults in conditions
    kGroup,     // bodies[0] (the `generation` tag's body: rendered as it is)
  };
  Kind kind;
  Location where;
  std::string text;
  std::string attribute;
  std::vector<std::string> targets;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
};

}  // namespace chat
}  // namespace llm
}  // namespace ember
