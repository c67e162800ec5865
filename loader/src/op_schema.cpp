// A small recursive-descent parser for the subset of PyTorch's schema syntax that kernel
// ops use: named arguments of Tensor (with alias annotations), int, float, bool, str,
// each optionally "?"-suffixed and defaulted; a "*" keyword-only marker; any return text.
#include "kh/loader/op_schema.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "kh/registry/status_error.hpp"

namespace kh::loader {
namespace {

class SchemaParser {
 public:
  explicit SchemaParser(std::string_view text) : text_(text) {}

  OpSchema parse() {
    OpSchema schema;
    schema.name = identifier("op name");
    // Overload names ("add.Tensor") are part of PyTorch's syntax; keep them in the name.
    while (peek() == '.') {
      ++pos_;
      schema.name += "." + identifier("overload name");
    }
    expect('(');
    skip_space();
    if (peek() != ')') {
      for (;;) {
        skip_space();
        if (peek() == '*') {  // keyword-only marker: positional in our call ABI
          ++pos_;
        } else {
          schema.args.push_back(argument());
        }
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        break;
      }
    }
    expect(')');
    skip_space();
    if (text_.substr(pos_, 2) != "->") error("expected '->' after the argument list");
    pos_ += 2;
    skip_space();
    schema.returns = std::string(text_.substr(pos_));
    if (schema.returns.empty()) error("expected a return type after '->'");
    for (size_t i = 0; i < schema.args.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (schema.args[i].name == schema.args[j].name) error("argument name '" + schema.args[i].name + "' repeats");
    return schema;
  }

 private:
  SchemaArg argument() {
    SchemaArg arg;
    std::string type = identifier("argument type");
    if (type == "Tensor") {
      arg.type = ArgType::Tensor;
      if (peek() == '(') {  // alias annotation: (a) or (a!)
        ++pos_;
        identifier("alias set");
        if (peek() == '!') {
          arg.mutated = true;
          ++pos_;
        }
        expect(')');
      }
    } else if (type == "int" || type == "SymInt") {
      arg.type = ArgType::Int;
    } else if (type == "float") {
      arg.type = ArgType::Float;
    } else if (type == "bool") {
      arg.type = ArgType::Bool;
    } else if (type == "str") {
      arg.type = ArgType::Str;
    } else {
      error("unsupported argument type '" + type + "' (supported: Tensor, int, float, bool, str)");
    }
    if (peek() == '?') {
      arg.optional = true;
      ++pos_;
    }
    skip_space();
    arg.name = identifier("argument name");
    skip_space();
    if (peek() == '=') {  // a default value, filled in for a caller that leaves it out
      ++pos_;
      const size_t start = pos_;
      char quote = 0;
      int depth = 0;  // inside [...] or (...): a list default's commas are its own
      while (pos_ < text_.size() && (quote != 0 || depth > 0 || (text_[pos_] != ',' && text_[pos_] != ')'))) {
        const char c = text_[pos_];
        if (quote != 0) {
          if (c == quote) quote = 0;
        } else if (c == '"' || c == '\'') {
          quote = c;
        } else if (c == '[' || c == '(') {
          ++depth;
        } else if ((c == ']' || c == ')') && depth > 0) {
          --depth;
        }
        ++pos_;
      }
      arg.default_text = trimmed(text_.substr(start, pos_ - start));
      read_default(&arg);
    }
    return arg;
  }

  static std::string trimmed(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return std::string(s);
  }

  // Reads a default as PyTorch writes them: None (an optional's), ints, floats (inf, nan,
  // 1e-06), True/False, quoted strings. One kh cannot read leaves has_default false: the
  // argument must then be given, and an error says so.
  static void read_default(SchemaArg* arg) {
    const std::string& t = arg->default_text;
    kh_value& v = arg->default_value;
    v = kh_value{};
    if (t == "None") {
      arg->has_default = arg->optional;  // KH_VALUE_NONE
      return;
    }
    char* end = nullptr;
    errno = 0;
    switch (arg->type) {
      case ArgType::Int: {
        const long long i = std::strtoll(t.c_str(), &end, 10);
        if (t.empty() || errno != 0 || *end != '\0') return;
        v.kind = KH_VALUE_INT;
        v.u.i = i;
        break;
      }
      case ArgType::Float: {
        const double d = std::strtod(t.c_str(), &end);
        if (t.empty() || *end != '\0') return;
        v.kind = KH_VALUE_DOUBLE;
        v.u.d = d;
        break;
      }
      case ArgType::Bool:
        if (t != "True" && t != "False") return;
        v.kind = KH_VALUE_BOOL;
        v.u.b = t == "True" ? 1 : 0;
        break;
      case ArgType::Str:
        if (t.size() < 2 || (t.front() != '"' && t.front() != '\'') || t.back() != t.front()) return;
        arg->default_string = t.substr(1, t.size() - 2);
        v.kind = KH_VALUE_STRING;  // u.s is set per call, from default_string (which moves with the schema)
        break;
      case ArgType::Tensor:
        return;  // only None, above
    }
    arg->has_default = true;
  }

  std::string identifier(const char* what) {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (start == pos_) error(std::string("expected ") + what);
    return std::string(text_.substr(start, pos_ - start));
  }

  void expect(char c) {
    skip_space();
    if (peek() != c) error(std::string("expected '") + c + "'");
    ++pos_;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  [[noreturn]] void error(const std::string& what) const {
    fail(KH_ERROR_INVALID_ARGUMENT,
         "op schema \"" + std::string(text_) + "\": " + what + " at offset " + std::to_string(pos_));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

OpSchema parse_op_schema(std::string_view text) { return SchemaParser(text).parse(); }

const char* arg_type_name(ArgType type) {
  switch (type) {
    case ArgType::Tensor: return "Tensor";
    case ArgType::Int: return "int";
    case ArgType::Float: return "float";
    case ArgType::Bool: return "bool";
    case ArgType::Str: return "str";
  }
  return "?";
}

}  // namespace kh::loader
