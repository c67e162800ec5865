// attention_experiments.hpp: the comparison switches of a development build. Built with
// KH_ATTENTION_EXPERIMENTS defined (dev/attention/standalone, -DKH_ATTENTION_EXPERIMENTS=ON), the
// CUDA backend reads them from the environment, so that one library can time both sides of a
// choice in one session; every other build (the build matrix, the published packages) compiles
// the shipped choice, and no environment variable changes which kernel runs. What each switch
// does, and which probe sets it: cuda/NOTES.md "Development switches".
#pragma once

#if defined(KH_ATTENTION_EXPERIMENTS)
#include <cstdlib>
#endif

namespace kh_attention::experiments {

#if defined(KH_ATTENTION_EXPERIMENTS)
// The switch's text, or null where it is unset.
inline const char* text(const char* name) { return std::getenv(name); }
// -1 unset, 1 for a value starting with '1', 0 for anything else.
inline int mode(const char* name) {
  const char* v = text(name);
  return v == nullptr ? -1 : v[0] == '1' ? 1 : 0;
}
// A switch over a shipped yes/no choice: `shipped` unless set (1 yes, anything else no).
inline bool flag(const char* name, bool shipped) {
  const int m = mode(name);
  return m < 0 ? shipped : m == 1;
}
// A count (0 unset).
inline long long number(const char* name) {
  const char* v = text(name);
  return v != nullptr ? std::atoll(v) : 0LL;
}
#else
// A release build: every switch is unset, so each call site compiles its shipped choice.
constexpr const char* text(const char*) { return nullptr; }
constexpr int mode(const char*) { return -1; }
constexpr bool flag(const char*, bool shipped) { return shipped; }
constexpr long long number(const char*) { return 0; }
#endif

}  // namespace kh_attention::experiments
