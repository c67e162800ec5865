// One operation's deadline (a get or a load: its metadata, blobs, retries and lock waits),
// and what set it, so that whatever runs out of time can say which setting to change.
// Made once per operation (install::Session) and handed down with the options of each
// part that may wait (HttpOptions, LockPolicy).
#pragma once

#include <chrono>
#include <string>

namespace kh::registry {

struct Deadline {
  using Clock = std::chrono::steady_clock;
  Clock::time_point at = Clock::time_point::max();  // max(): none
  double seconds = 0;   // as it was set, for messages
  std::string setting;  // what set it: "KH_OPERATION_TIMEOUT", "kh_load_options.timeout_ms", "--timeout"
  std::string why;      // how it came from the setting, when not as is ("half of what was left of ...")

  // `seconds` from now; 0 or less: none.
  static Deadline in(double seconds, std::string setting) {
    Deadline d;
    d.seconds = seconds;
    d.setting = std::move(setting);
    if (seconds > 0)
      d.at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    return d;
  }
  bool none() const { return at == Clock::time_point::max(); }
  bool passed() const { return !none() && Clock::now() >= at; }
  // Seconds left (negative once passed; a very large number when none).
  double left_s() const {
    return none() ? 1e18 : std::chrono::duration<double>(at - Clock::now()).count();
  }
  // "the operation's deadline of 2 s (kh_load_options.timeout_ms)", or with `why` in the brackets
  std::string describe() const;
};

}  // namespace kh::registry
