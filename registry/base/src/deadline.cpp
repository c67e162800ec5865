// Deadline's words; see deadline.hpp.
#include "kh/registry/deadline.hpp"

#include <cstdio>

namespace kh::registry {

std::string Deadline::describe() const {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.4g", seconds);
  return std::string("the operation's deadline of ") + secs + " s (" + (why.empty() ? setting : why) + ")";
}

}  // namespace kh::registry
