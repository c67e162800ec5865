// A progress line on stderr for downloads; see ProgressLine. Internal to the registry.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace kh::registry::detail {

// A progress line on stderr for a download (one blob or a batch), at most ten times a second.
class ProgressLine {
 public:
  ProgressLine(bool on, std::string label, uint64_t total) : on_(on), label_(std::move(label)), total_(total) {
    start_ = last_ = std::chrono::steady_clock::now();
  }
  ~ProgressLine() {
    if (on_ && drawn_) std::fputs("\n", stderr);
  }
  void update(uint64_t done, bool force = false) {
    if (!on_) return;
    auto now = std::chrono::steady_clock::now();
    if (!force && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    double secs = std::chrono::duration<double>(now - start_).count();
    double mib = 1024.0 * 1024.0;
    double rate = secs > 0 ? static_cast<double>(done) / mib / secs : 0;
    int pct = total_ > 0 ? static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total_)) : 100;
    std::fprintf(stderr, "\r%s  %.1f/%.1f MiB  %3d%%  %.1f MiB/s   ", label_.c_str(), static_cast<double>(done) / mib,
                 static_cast<double>(total_) / mib, pct, rate);
    std::fflush(stderr);
    drawn_ = true;
  }

 private:
  bool on_;
  std::string label_;
  uint64_t total_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace kh::registry::detail
