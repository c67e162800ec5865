// Lets the options every hub- or cache-using verb shares come before the verb as well as
// after it (`kernels --hub URL get x` as `kernels get x --hub URL`), and finds a first word
// that is no verb, so main() can suggest the right one.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kh::cli {

struct VerbPosition {
  size_t index = 0;      // where the verb is in the arguments (valid when found)
  bool found = false;
  bool unknown = false;  // the first word is not one of the verbs
};

// Moves the common options found before the verb to the end of the verb's arguments (ahead
// of a "--", if any), where the verb's own parser reads them; a verb that does not take one
// says so as usual. Other options before the verb (--help, --version) stay where they are.
inline VerbPosition move_common_options_after_verb(std::vector<std::string>& args,
                                                   const std::vector<std::string>& verbs) {
  static const char* const kWithValue[] = {"--hub", "--cache", "--timeout"};
  static const char* const kFlags[] = {"--offline", "--json", "--allow-expired"};
  auto is_one_of = [](const std::string& a, const auto& names) {
    for (const char* n : names)
      if (a == n || (a.rfind(std::string(n) + "=", 0) == 0)) return true;
    return false;
  };
  std::vector<std::string> moved;
  size_t i = 0;
  while (i < args.size()) {
    const std::string& a = args[i];
    if (is_one_of(a, kWithValue)) {
      const bool joined = a.find('=') != std::string::npos;
      moved.push_back(a);
      if (!joined && i + 1 < args.size()) moved.push_back(args[++i]);
      ++i;
    } else if (is_one_of(a, kFlags)) {
      moved.push_back(a);
      ++i;
    } else {
      break;
    }
  }
  VerbPosition pos;
  if (i >= args.size() || args[i].rfind("-", 0) == 0) {
    // No verb, or another option first: leave everything for the parser to judge.
    return pos;
  }
  std::vector<std::string> out(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  size_t dashdash = out.size();
  for (size_t k = 1; k < out.size(); ++k)
    if (out[k] == "--") {
      dashdash = k;
      break;
    }
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(dashdash), moved.begin(), moved.end());
  args = std::move(out);
  pos.index = 0;
  pos.found = true;
  pos.unknown = true;
  for (const std::string& v : verbs)
    if (v == args[0]) pos.unknown = false;
  return pos;
}

}  // namespace kh::cli
