// Crash and pause injection for tests (KH_TEST_HOOKS builds only; see detail/internal.hpp).
// In base, the lowest role, because every role above it (the verified sink, the cache,
// publishing) marks its own points and each must link without reaching upward.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "kh/registry/detail/internal.hpp"

namespace kh::registry {

#ifdef KH_TEST_HOOKS
void test_hook(const char* point) {
  const char* at = std::getenv("KH_TEST_CRASH_AT");
  if (at != nullptr && std::string(at) == point) ::_exit(86);
}
void test_pause(const char* point) {
  const char* at = std::getenv("KH_TEST_PAUSE_AT");
  if (at == nullptr || std::string(at) != point) return;
  const char* ms = std::getenv("KH_TEST_PAUSE_MS");
  ::usleep(static_cast<useconds_t>((ms != nullptr ? std::atoi(ms) : 1000) * 1000));
}
#endif

}  // namespace kh::registry
